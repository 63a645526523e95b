//! Proving the trail: every run's hash chain checked again from what is stored
//! (`pg_labels.verify(run)`, `pg_labels.verify_all()`), a ledger digest a DBA keeps outside the
//! database (`pg_labels.ledger_digest()`), the proof that today's trail extends the one a
//! digest described (`pg_labels.verify_digest(digest)`), and an inclusion proof of one step
//! that `pg_labels_verify` checks with no database (`pg_labels.prove(step, digest)`). The
//! chain's rules and encoding are the core's ([`pg_labels_core::chain`]); here they meet the
//! stored rows.
//!
//! Steps are read run by run, in id order, in batches: memory stays bounded whatever the size
//! of a run or of the trail. The functions read as their caller (row-level security applies).

use crate::pg::datum::{text_datum, Bytea, Jsonb, Timestamp, Uuid};
use crate::pg::error::{notice, Error, Result, INVALID_PARAMETER_VALUE};
use crate::pg::fmgr::Call;
use crate::pg::spi::{as_owner, run, with_spi, SavedPlan, Sql};
use crate::pg::srf;
use crate::platform::relations::platform_owner;
use crate::sql_function;
use crate::types::datum::{LabelSetBuf, ScopeBuf};
use pg_labels_core::chain::{self, from_hex, hex, Break, Hash, Stored, Verifier};
use pg_labels_core::{scope, LabelSet};
use pgrx::pg_sys::{self, Datum};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// A run as its chain needs it.
#[derive(Clone)]
struct RunRow {
    id: Uuid,
    agent: Option<String>,
    agent_version: Option<i64>,
    scope: Vec<u8>,
    opened_labels: Option<Vec<u8>>,
    listener_id: Option<i64>,
    opened_at: i64,
    /// Its row's checkpoint: the chain passes through it.
    head: Option<Hash>,
    /// Where the chain continues from after a purge, and how many steps it removed.
    cut: Option<Hash>,
    cut_length: i64,
    labels: Vec<u8>,
}

static RUN: SavedPlan = SavedPlan::new(
    c"SELECT id, agent, agent_version, scope, opened_labels, listener_id, opened_at,
             chain_head, chain_cut, chain_cut_length, labels
        FROM pg_labels.runs WHERE id = $1",
);
static RUNS_FIRST: SavedPlan = SavedPlan::new(
    c"SELECT id, agent, agent_version, scope, opened_labels, listener_id, opened_at,
             chain_head, chain_cut, chain_cut_length, labels
        FROM pg_labels.runs ORDER BY id LIMIT 1000",
);
static RUNS_NEXT: SavedPlan = SavedPlan::new(
    c"SELECT id, agent, agent_version, scope, opened_labels, listener_id, opened_at,
             chain_head, chain_cut, chain_cut_length, labels
        FROM pg_labels.runs WHERE id > $1 ORDER BY id LIMIT 1000",
);

/// A stored step, as its chain needs it.
struct StepRow {
    id: i64,
    kind: String,
    tool: Option<String>,
    labels: Vec<u8>,
    args: Option<String>,
    decision: Option<String>,
    rule: Option<String>,
    reason: Option<String>,
    request_id: Option<i64>,
    origin_run: Option<Uuid>,
    artifact_id: Option<Uuid>,
    digest: Option<String>,
    share_id: Option<i64>,
    crossing_ids: Option<Vec<i64>>,
    actor: String,
    created_at: i64,
    prev: Option<Hash>,
    hash: Option<Hash>,
    slot: i16,
}

/// Steps are read this many at a time.
const BATCH: i64 = 5000;

static STEPS: SavedPlan = SavedPlan::new(
    c"SELECT id, kind, tool, labels, args::text, decision, rule, reason, request_id, origin_run,
             artifact_id, digest, share_id, crossing_ids, actor, created_at, prev_hash, hash, slot
        FROM pg_labels.steps WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT 5000",
);

fn hash_of(b: Option<Bytea>) -> Option<Hash> {
    b.and_then(|b| b.0.try_into().ok())
}

fn read_runs(rows: &crate::pg::spi::Rows<'_>) -> Result<Vec<RunRow>> {
    (0..rows.len())
        .map(|i| {
            Ok(RunRow {
                id: rows.must::<Uuid>(i, 1)?,
                agent: rows.get::<String>(i, 2)?,
                agent_version: rows.get::<i32>(i, 3)?.map(i64::from),
                scope: rows.must::<ScopeBuf>(i, 4)?.0,
                opened_labels: rows.get::<LabelSetBuf>(i, 5)?.map(|l| l.0),
                listener_id: rows.get::<i64>(i, 6)?,
                opened_at: rows.must::<Timestamp>(i, 7)?.0,
                head: hash_of(rows.get::<Bytea>(i, 8)?),
                cut: hash_of(rows.get::<Bytea>(i, 9)?),
                cut_length: rows.get::<i64>(i, 10)?.unwrap_or_default(),
                labels: rows.must::<LabelSetBuf>(i, 11)?.0,
            })
        })
        .collect()
}

/// One run by id (`None` when there is none the caller can see).
fn run_row(id: &Uuid) -> Result<Option<RunRow>> {
    with_spi(|spi| {
        let rows = RUN.execute(spi, &[pg_sys::UUIDOID], &[Some(id.datum())], true, 1)?;
        Ok(read_runs(&rows)?.pop())
    })
}

/// Every run, in id order, a batch at a time.
fn each_run(mut f: impl FnMut(RunRow) -> Result<()>) -> Result<()> {
    let mut after: Option<Uuid> = None;
    loop {
        let batch = with_spi(|spi| {
            let rows = match &after {
                None => RUNS_FIRST.execute(spi, &[], &[], true, 0)?,
                Some(a) => {
                    RUNS_NEXT.execute(spi, &[pg_sys::UUIDOID], &[Some(a.datum())], true, 0)?
                }
            };
            read_runs(&rows)
        })?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = Some(last.id);
        for r in batch {
            f(r)?;
        }
    }
}

/// The steps of a run in id order, a batch at a time, until `f` says stop.
fn each_step(run: &Uuid, mut f: impl FnMut(StepRow) -> Result<bool>) -> Result<()> {
    let mut after = i64::MIN;
    loop {
        let batch: Vec<StepRow> = with_spi(|spi| {
            let rows = STEPS.execute(
                spi,
                &[pg_sys::UUIDOID, pg_sys::INT8OID],
                &[Some(run.datum()), Some(Datum::from(after))],
                true,
                0,
            )?;
            (0..rows.len())
                .map(|i| {
                    Ok(StepRow {
                        id: rows.must::<i64>(i, 1)?,
                        kind: rows.must::<String>(i, 2)?,
                        tool: rows.get::<String>(i, 3)?,
                        labels: rows.must::<LabelSetBuf>(i, 4)?.0,
                        args: rows.get::<String>(i, 5)?,
                        decision: rows.get::<String>(i, 6)?,
                        rule: rows.get::<String>(i, 7)?,
                        reason: rows.get::<String>(i, 8)?,
                        request_id: rows.get::<i64>(i, 9)?,
                        origin_run: rows.get::<Uuid>(i, 10)?,
                        artifact_id: rows.get::<Uuid>(i, 11)?,
                        digest: rows.get::<String>(i, 12)?,
                        share_id: rows.get::<i64>(i, 13)?,
                        crossing_ids: rows.get::<Vec<i64>>(i, 14)?,
                        actor: rows.get::<String>(i, 15)?.unwrap_or_default(),
                        created_at: rows.must::<Timestamp>(i, 16)?.0,
                        prev: hash_of(rows.get::<Bytea>(i, 17)?),
                        hash: hash_of(rows.get::<Bytea>(i, 18)?),
                        slot: rows.get::<i16>(i, 19)?.unwrap_or_default(),
                    })
                })
                .collect()
        })?;
        let full = batch.len() as i64 == BATCH;
        for s in batch {
            after = s.id;
            if !f(s)? {
                return Ok(());
            }
        }
        if !full {
            return Ok(());
        }
    }
}

/// A run's genesis, from its row (`None`: the run has no chain).
fn genesis(run: &RunRow) -> Option<Hash> {
    let opened = run.opened_labels.as_deref()?;
    let scope_text = scope::to_text(&run.scope);
    Some(chain::genesis(&chain::RunOpening {
        id: run.id.0,
        agent: run.agent.as_deref(),
        agent_version: run.agent_version,
        scope: &scope_text,
        labels: LabelSet::from_canonical(opened),
        listener_id: run.listener_id,
        opened_at: run.opened_at,
    }))
}

/// The step's leaf, given the digest of the run's labels after it.
fn leaf(run: &RunRow, scope_text: &str, s: &StepRow, labels_after: &Hash) -> Hash {
    chain::leaf(&content(run, scope_text, s, labels_after))
}

fn content<'a>(
    run: &RunRow,
    scope_text: &'a str,
    s: &'a StepRow,
    labels_after: &Hash,
) -> chain::StepContent<'a> {
    chain::StepContent {
        id: s.id,
        run_id: run.id.0,
        kind: &s.kind,
        tool: s.tool.as_deref(),
        labels: LabelSet::from_canonical(&s.labels),
        args: s.args.as_deref(),
        decision: s.decision.as_deref(),
        rule: s.rule.as_deref(),
        reason: s.reason.as_deref(),
        request_id: s.request_id,
        origin_run: s.origin_run.map(|u| u.0),
        artifact_id: s.artifact_id.map(|u| u.0),
        digest: s.digest.as_deref(),
        share_id: s.share_id,
        crossing_ids: s.crossing_ids.as_deref(),
        actor: &s.actor,
        created_at: s.created_at,
        scope: scope_text,
        labels_after: *labels_after,
    }
}

/// What checking one run found.
struct Checked {
    steps: i64,
    /// The first break: the step, how, and a sentence.
    broken: Option<(Option<i64>, &'static str, String)>,
}

/// Check a run's chain against what is stored: its steps (from the purge's cut, if any), the
/// checkpoint its row keeps, and its labels.
fn check_run(run: &RunRow) -> Result<Checked> {
    let (Some(genesis), Some(head), Some(opened)) =
        (genesis(run), run.head, run.opened_labels.as_deref())
    else {
        return Ok(Checked {
            steps: 0,
            broken: Some((
                None,
                "unchained",
                "the run has no hash chain (written without the database's triggers, or by a release without chains)".into(),
            )),
        });
    };
    let scope_text = scope::to_text(&run.scope);
    let mut v = Verifier::passing(run.cut.unwrap_or(genesis), run.cut_length, head);
    let mut carried = opened.to_vec();
    let mut steps = 0i64;
    each_step(&run.id, |s| {
        steps += 1;
        v.push(&stored(run, &scope_text, &s));
        carried = LabelSet::from_canonical(&carried).union(LabelSet::from_canonical(&s.labels));
        Ok(true)
    })?;
    let broken = match v.finish() {
        Some(b) => Some(describe(&b)),
        None => {
            let stored = LabelSet::from_canonical(&run.labels);
            let missing = LabelSet::from_canonical(&carried).filter(|l| !stored.contains(l.0));
            if missing.is_empty() {
                None
            } else {
                Some((
                    None,
                    "edited",
                    format!(
                        "the run's labels were edited: its steps brought {} it no longer carries",
                        LabelSet::from_canonical(&missing)
                            .to_text_capped(pg_labels_core::refusal::LIST_LIMIT)
                    ),
                ))
            }
        }
    };
    Ok(Checked { steps, broken })
}

/// A stored step for the verifier, with the hash its stored content links to.
fn stored(run: &RunRow, scope_text: &str, s: &StepRow) -> Stored {
    let computed = s.prev.map(|p| {
        let after = chain::labels_next(&p, LabelSet::from_canonical(&s.labels));
        chain::link(&p, &leaf(run, scope_text, s, &after))
    });
    Stored {
        id: s.id,
        prev: s.prev,
        hash: s.hash,
        computed,
    }
}

fn describe(b: &Break) -> (Option<i64>, &'static str, String) {
    (b.step, b.how.name(), b.to_string())
}

// ---- the ledger ----

/// One run in a digest: its id, how many steps its chain held, and its head then.
struct Mark {
    run: Uuid,
    length: i64,
    head: Hash,
}

const MARK_LEN: usize = 16 + 8 + 32;

fn marks_bytes(marks: &[Mark]) -> Vec<u8> {
    let mut out = Vec::with_capacity(marks.len() * MARK_LEN);
    for m in marks {
        out.extend_from_slice(&m.run.0);
        out.extend_from_slice(&m.length.to_be_bytes());
        out.extend_from_slice(&m.head);
    }
    out
}

fn marks_from(bytes: &[u8]) -> Option<Vec<Mark>> {
    if bytes.len() % MARK_LEN != 0 {
        return None;
    }
    bytes
        .chunks(MARK_LEN)
        .map(|c| {
            Some(Mark {
                run: Uuid(c[..16].try_into().ok()?),
                length: i64::from_be_bytes(c[16..24].try_into().ok()?),
                head: c[24..].try_into().ok()?,
            })
        })
        .collect()
}

fn ledger_root(marks: &[Mark]) -> Hash {
    let mut root = chain::Root::default();
    for m in marks {
        root.push(&chain::head_leaf(&m.run.0, m.length, &m.head));
    }
    root.finish()
}

static SAVE_DIGEST: SavedPlan = SavedPlan::new(
    c"INSERT INTO pg_labels.digests (root, runs, steps, marks) VALUES ($1, $2, $3, $4)
      RETURNING id, taken_at",
);
static DIGEST: SavedPlan =
    SavedPlan::new(c"SELECT root, marks, taken_at FROM pg_labels.digests WHERE id = $1");

/// A digest the caller hands back: its id and root.
fn digest_arg(call: &Call<'_>, n: usize, function: &str) -> Result<(i64, Hash)> {
    let bad = |why: &str| {
        Error::new(
            INVALID_PARAMETER_VALUE,
            format!("{function}: the digest {why}"),
        )
        .hint("Pass the value pg_labels.ledger_digest() returned, as it was kept.")
    };
    if call.is_null(n) {
        return Err(bad("is NULL"));
    }
    let text = Jsonb(call.datum(n)).text();
    let v: Value = serde_json::from_str(&text).map_err(|_| bad("is not JSON"))?;
    if v.get("version").and_then(Value::as_i64) != Some(1) {
        return Err(bad("is not of version 1"));
    }
    let id = v
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("has no id"))?;
    let root = v
        .get("root")
        .and_then(Value::as_str)
        .and_then(from_hex)
        .ok_or_else(|| bad("has no root of 64 hexadecimal digits"))?;
    Ok((id, root))
}

/// The marks a digest recorded (`None`: the database holds no record of it).
fn digest_record(id: i64) -> Result<Option<(Hash, Option<Vec<Mark>>, Timestamp)>> {
    with_spi(|spi| {
        let rows = DIGEST.execute(spi, &[pg_sys::INT8OID], &[Some(Datum::from(id))], true, 1)?;
        if rows.is_empty() {
            return Ok(None);
        }
        let root = hash_of(rows.get::<Bytea>(0, 1)?).unwrap_or([0; 32]);
        let marks = rows.get::<Bytea>(0, 2)?.and_then(|b| marks_from(&b.0));
        Ok(Some((root, marks, rows.must::<Timestamp>(0, 3)?)))
    })
}

/// Where walking a run's chain by what is stored now ends, at its `length`-th step.
enum HeadAt {
    /// The head those steps lead to.
    Head(Hash),
    /// Fewer steps are stored (how many the chain holds, the purged ones counted).
    Short(i64),
    /// A purge removed them: the run's chain now starts after them.
    Purged,
    /// The run has no chain.
    Unchained,
}

/// Walk a run's chain from its genesis (or a purge's cut) by what is stored now, to its
/// `length`-th step, handing each step, the chain value before it, its leaf and its labels
/// digest to `visit`.
fn head_at(
    run: &RunRow,
    length: i64,
    mut visit: impl FnMut(&StepRow, &Hash, &Hash, &Hash),
) -> Result<HeadAt> {
    let Some(start) = genesis(run) else {
        return Ok(HeadAt::Unchained);
    };
    let mut h = run.cut.unwrap_or(start);
    let mut seen = run.cut_length;
    if length < seen || (length == seen && seen > 0 && run.cut.is_none()) {
        return Ok(HeadAt::Purged);
    }
    let scope_text = scope::to_text(&run.scope);
    if length > seen {
        each_step(&run.id, |s| {
            seen += 1;
            let after = chain::labels_next(&h, LabelSet::from_canonical(&s.labels));
            let l = leaf(run, &scope_text, &s, &after);
            visit(&s, &h, &l, &after);
            h = chain::link(&h, &l);
            Ok(seen < length)
        })?;
    }
    Ok(if seen == length {
        HeadAt::Head(h)
    } else {
        HeadAt::Short(seen)
    })
}

sql_function! {
    /// `pg_labels.verify(run uuid) → TABLE (intact, steps, step, how, detail)`: one row.
    fn pgl_verify(call) {
        let out = srf::materialize(&call, "pg_labels.verify()", 5)?;
        if call.is_null(0) {
            return Ok(Datum::from(0usize));
        }
        let id = crate::pg::datum::uuid_arg(&call, 0);
        let Some(run) = run_row(&id)? else {
            out.push(&[
                Some(Datum::from(false)),
                Some(Datum::from(0i64)),
                None,
                Some(text_datum("removed")?),
                Some(text_datum(&format!("there is no run {id} (or it is not visible to you)"))?),
            ]);
            return Ok(Datum::from(0usize));
        };
        let c = check_run(&run)?;
        out.push(&[
            Some(Datum::from(c.broken.is_none())),
            Some(Datum::from(c.steps)),
            c.broken.as_ref().and_then(|b| b.0).map(Datum::from),
            c.broken.as_ref().map(|b| text_datum(b.1)).transpose()?,
            c.broken.as_ref().map(|b| text_datum(&b.2)).transpose()?,
        ]);
        Ok(Datum::from(0usize))
    }

    /// `pg_labels.verify_all() → TABLE (run, step, how, detail)`: the runs whose chain breaks.
    fn pgl_verify_all(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || verify_all(&call))
    }

    /// `pg_labels.ledger_digest() → jsonb`: the root over every run's head, recorded.
    fn pgl_ledger_digest(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || ledger_digest(&call))
    }

    /// `pg_labels.verify_digest(digest jsonb) → TABLE (holds, run, detail)`.
    fn pgl_verify_digest(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || verify_digest(&call))
    }

    /// `pg_labels.prove(step bigint, digest jsonb) → jsonb`: an inclusion proof of the step
    /// in the ledger the digest describes, for `pg_labels_verify`.
    fn pgl_prove(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || prove(&call))
    }
}

static STEP_RUN: SavedPlan = SavedPlan::new(c"SELECT run_id FROM pg_labels.steps WHERE id = $1");

/// Where, within the steps a digest saw, a run's stored chain first breaks.
fn check_prefix(run: &RunRow, m: &Mark) -> Result<String> {
    let Some(start) = genesis(run) else {
        return Ok("the run's chain was removed from its row".into());
    };
    let scope_text = scope::to_text(&run.scope);
    let mut v = Verifier::new(run.cut.unwrap_or(start), run.cut_length, m.head, m.length);
    let mut seen = run.cut_length;
    each_step(&run.id, |s| {
        seen += 1;
        v.push(&stored(run, &scope_text, &s));
        Ok(seen < m.length)
    })?;
    Ok(match v.finish() {
        Some(b) => b.to_string(),
        None => "the steps' hashes were computed again after they were changed".into(),
    })
}

/// A step's content in the proof's JSON (see `pg_labels_verify`).
fn step_json(c: &chain::StepContent<'_>, run: &Uuid) -> Value {
    let uuid = |u: Option<[u8; 16]>| u.map(|u| Uuid(u).to_string());
    let mut labels = String::new();
    let _ = write!(labels, "{}", c.labels.to_text());
    json!({
        "id": c.id,
        "run_id": run.to_string(),
        "kind": c.kind,
        "tool": c.tool,
        "labels": labels,
        "args": c.args,
        "decision": c.decision,
        "rule": c.rule,
        "reason": c.reason,
        "request_id": c.request_id,
        "origin_run": uuid(c.origin_run),
        "artifact_id": uuid(c.artifact_id),
        "digest": c.digest,
        "share_id": c.share_id,
        "crossing_ids": c.crossing_ids,
        "actor": c.actor,
        "created_at": c.created_at,
        "scope": c.scope,
        "labels_after": hex(&c.labels_after),
    })
}

static CHAIN_STEP: SavedPlan = SavedPlan::new(
    c"UPDATE pg_labels.steps SET prev_hash = $3, hash = $4 WHERE id = $1 AND slot = $2",
);
static CHAIN_RUN: SavedPlan = SavedPlan::new(
    c"UPDATE pg_labels.runs SET opened_labels = labels, chain_head = $2, chain_slot = $3
       WHERE id = $1 AND chain_head IS NULL",
);

sql_function! {
    /// `pg_labels.start_chains() → bigint`: chains the runs that have none (written by a
    /// release without chains, or loaded around the triggers), from what they hold now.
    fn pgl_start_chains(call) {
        let _ = &call;
        let mut chained = 0i64;
        each_run(|run| {
            if run.head.is_some() {
                return Ok(());
            }
            // from here on: the run's opening is taken to be what it carries now
            let mut run = run.clone();
            run.opened_labels = Some(run.labels.clone());
            let Some(mut h) = genesis(&run) else {
                return Ok(());
            };
            let scope_text = scope::to_text(&run.scope);
            let mut slot: Option<i16> = None;
            each_step(&run.id, |s| {
                let after = chain::labels_next(&h, LabelSet::from_canonical(&s.labels));
                let next = chain::link(&h, &leaf(&run, &scope_text, &s, &after));
                with_spi(|spi| {
                    CHAIN_STEP.execute(
                        spi,
                        &[pg_sys::INT8OID, pg_sys::INT2OID, pg_sys::BYTEAOID, pg_sys::BYTEAOID],
                        &[
                            Some(Datum::from(s.id)),
                            Some(Datum::from(s.slot)),
                            Some(crate::pg::datum::bytea_datum(&h)?),
                            Some(crate::pg::datum::bytea_datum(&next)?),
                        ],
                        false,
                        0,
                    )
                    .map(|_| ())
                })?;
                h = next;
                slot = Some(s.slot);
                Ok(true)
            })?;
            with_spi(|spi| {
                CHAIN_RUN.execute(
                    spi,
                    &[pg_sys::UUIDOID, pg_sys::BYTEAOID, pg_sys::INT2OID],
                    &[
                        Some(run.id.datum()),
                        Some(crate::pg::datum::bytea_datum(&h)?),
                        slot.map(Datum::from),
                    ],
                    false,
                    0,
                )
                .map(|_| ())
            })?;
            chained += 1;
            Ok(())
        })?;
        fill_carried_scopes()?;
        Ok(Datum::from(chained))
    }
}

/// The extension's own schema (where `scope` and `labelset` and their functions are), when
/// the trail has the column (not while the update from 0.1.0 chains the runs).
static EXTENSION_SCHEMA: SavedPlan = SavedPlan::new(
    c"SELECT n.nspname::text FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
       WHERE e.extname = 'pg_labels'
         AND EXISTS (SELECT FROM pg_catalog.pg_attribute a
                      WHERE a.attrelid = 'pg_labels.steps'::pg_catalog.regclass
                        AND a.attname = 'carried_scope' AND NOT a.attisdropped)",
);

/// Do runs have the scope they are read in (release 0.3.1)?
static RUNS_CARRIED: SavedPlan = SavedPlan::new(
    c"SELECT FROM pg_catalog.pg_attribute a
       WHERE a.attrelid = 'pg_labels.runs'::pg_catalog.regclass
         AND a.attname = 'carried_scope' AND NOT a.attisdropped",
);

/// Fill the scope steps and shares are read in where a release before 0.3.0 (a restore of its
/// dump) left none: for a step, the scope that can carry its run's labels now; for a share, its
/// artifact's (as the update from 0.2.0 does). The append-only triggers let a superuser
/// session fill that column, and only it, from NULL.
fn fill_carried_scopes() -> Result<()> {
    with_spi(|spi| {
        let rows = EXTENSION_SCHEMA.execute(spi, &[], &[], true, 1)?;
        let Some(ns) = rows.get::<String>(0, 1)? else {
            return Ok(());
        };
        let steps = Sql::new("UPDATE pg_labels.steps s SET carried_scope = ")
            .ident(&ns)
            .push(".scope_lca(r.scope, coalesce(")
            .ident(&ns)
            .push(".labelset_scope(r.labels), r.scope)) FROM pg_labels.runs r WHERE r.id = s.run_id AND s.carried_scope IS NULL");
        let steps = run(spi, &steps, false)?.len();
        let shares = Sql::new("UPDATE pg_labels.shares sh SET carried_scope = coalesce(")
            .ident(&ns)
            .push(".labelset_scope(a.labels), '*') FROM pg_labels.artifacts a WHERE a.id = sh.artifact_id AND sh.carried_scope IS NULL");
        let shares = run(spi, &shares, false)?.len();
        // runs and artifacts (release 0.3.1): a run's follows its labels (runs_seal writes it
        // when its row is written), an artifact's is its labels'
        let (mut runs, mut artifacts) = (0, 0);
        if RUNS_CARRIED.execute(spi, &[], &[], true, 1)?.len() > 0 {
            let fill =
                Sql::new("UPDATE pg_labels.runs SET labels = labels WHERE carried_scope IS NULL");
            runs = run(spi, &fill, false)?.len();
            let fill = Sql::new("UPDATE pg_labels.artifacts SET carried_scope = ")
                .ident(&ns)
                .push(".labelset_scope(labels) WHERE carried_scope IS NULL AND ")
                .ident(&ns)
                .push(".labelset_scope(labels) IS NOT NULL");
            artifacts = run(spi, &fill, false)?.len();
        }
        if steps + shares + runs + artifacts > 0 {
            notice(&format!(
                "pg_labels.start_chains: the scope {runs} runs, {steps} steps, {artifacts} artifacts and {shares} shares are read in, filled from their labels"
            ));
        }
        Ok(())
    })
}

fn verify_all(call: &Call<'_>) -> Result<Datum> {
    let out = srf::materialize(call, "pg_labels.verify_all()", 4)?;
    let (mut runs, mut steps, mut broken) = (0i64, 0i64, 0i64);
    each_run(|run| {
        let c = check_run(&run)?;
        runs += 1;
        steps += c.steps;
        if let Some((step, how, detail)) = &c.broken {
            broken += 1;
            out.push(&[
                Some(run.id.datum()),
                step.map(Datum::from),
                Some(text_datum(how)?),
                Some(text_datum(detail)?),
            ]);
        }
        if runs % 10_000 == 0 {
            notice(&format!(
                "pg_labels.verify_all: {runs} runs, {steps} steps checked, {broken} broken"
            ));
        }
        Ok(())
    })?;
    notice(&format!(
        "pg_labels.verify_all: {runs} runs, {steps} steps checked, {broken} broken"
    ));
    Ok(Datum::from(0usize))
}

/// How many steps a run holds, and the hash of its last one.
static HEAD_NOW: SavedPlan = SavedPlan::new(
    c"SELECT (SELECT count(*) FROM pg_labels.steps WHERE run_id = $1),
             (SELECT hash FROM pg_labels.steps WHERE run_id = $1 ORDER BY id DESC LIMIT 1)",
);

fn ledger_digest(call: &Call<'_>) -> Result<Datum> {
    let _ = call;
    let mut marks = Vec::new();
    let mut steps = 0i64;
    each_run(|run| {
        if let Some(checkpoint) = run.head {
            // the head now: the run's last step (steps after the row's checkpoint are chained
            // in the trail alone), or the checkpoint when it has none
            let (count, last) = with_spi(|spi| {
                let rows =
                    HEAD_NOW.execute(spi, &[pg_sys::UUIDOID], &[Some(run.id.datum())], true, 1)?;
                Ok((
                    rows.get::<i64>(0, 1)?.unwrap_or_default(),
                    hash_of(rows.get::<Bytea>(0, 2)?),
                ))
            })?;
            let length = run.cut_length + count;
            steps += length;
            marks.push(Mark {
                run: run.id,
                length,
                head: last.unwrap_or(checkpoint),
            });
        }
        Ok(())
    })?;
    let root = ledger_root(&marks);
    let bytes = marks_bytes(&marks);
    let (id, taken_at) = with_spi(|spi| {
        let rows = SAVE_DIGEST.execute(
            spi,
            &[
                pg_sys::BYTEAOID,
                pg_sys::INT8OID,
                pg_sys::INT8OID,
                pg_sys::BYTEAOID,
            ],
            &[
                Some(crate::pg::datum::bytea_datum(&root)?),
                Some(Datum::from(marks.len() as i64)),
                Some(Datum::from(steps)),
                Some(crate::pg::datum::bytea_datum(&bytes)?),
            ],
            false,
            1,
        )?;
        Ok((rows.must::<i64>(0, 1)?, rows.must::<Timestamp>(0, 2)?))
    })?;
    let v = json!({
        "version": 1,
        "id": id,
        "taken_at": taken_at.text(),
        "runs": marks.len(),
        "steps": steps,
        "root": hex(&root),
    });
    Ok(Jsonb::from_text(&v.to_string())?.0)
}

fn verify_digest(call: &Call<'_>) -> Result<Datum> {
    let out = srf::materialize(call, "pg_labels.verify_digest()", 3)?;
    let (id, root) = digest_arg(call, 0, "pg_labels.verify_digest()")?;
    let problem = |run: Option<&Uuid>, detail: String| -> Result<()> {
        out.push(&[
            Some(Datum::from(false)),
            run.map(Uuid::datum),
            Some(text_datum(&detail)?),
        ]);
        Ok(())
    };
    let Some((recorded_root, marks, taken_at)) = digest_record(id)? else {
        problem(
            None,
            format!("the database holds no record of digest {id}: it was removed"),
        )?;
        return Ok(Datum::from(0usize));
    };
    let Some(marks) = marks else {
        problem(
            None,
            format!("the database's record of digest {id} is damaged"),
        )?;
        return Ok(Datum::from(0usize));
    };
    let mut fine = true;
    if recorded_root != root || ledger_root(&marks) != root {
        fine = false;
        problem(
            None,
            format!("the database's record of digest {id} is not the digest given: it was changed"),
        )?;
    }
    let mut now = chain::Root::default();
    let mut steps = 0i64;
    let mut purged = 0usize;
    for m in &marks {
        steps += m.length;
        let Some(run) = run_row(&m.run)? else {
            fine = false;
            problem(
                Some(&m.run),
                format!("the run was removed (the digest saw {} steps)", m.length),
            )?;
            continue;
        };
        match head_at(&run, m.length, |_, _, _, _| {})? {
            HeadAt::Unchained => {
                fine = false;
                problem(
                    Some(&m.run),
                    "the run's chain was removed from its row".into(),
                )?;
            }
            HeadAt::Short(seen) => {
                fine = false;
                problem(
                    Some(&m.run),
                    format!(
                        "steps were removed: the digest saw {} steps, the trail holds {seen}",
                        m.length
                    ),
                )?;
            }
            HeadAt::Purged => {
                // what purge() removed cannot be shown again; the run's chain goes on from
                // the cut it recorded, which verify() checks
                purged += 1;
                now.push(&chain::head_leaf(&m.run.0, m.length, &m.head));
            }
            HeadAt::Head(h) if h != m.head => {
                fine = false;
                let located = check_prefix(&run, m)?;
                problem(
                    Some(&m.run),
                    format!(
                        "its first {} steps are not the ones the digest saw: {located}",
                        m.length
                    ),
                )?;
            }
            HeadAt::Head(h) => now.push(&chain::head_leaf(&m.run.0, m.length, &h)),
        }
    }
    if fine && now.finish() == root {
        out.push(&[
            Some(Datum::from(true)),
            None,
            Some(text_datum(&format!(
                "today's trail extends digest {id} of {}: its {} runs and {steps} steps are all there, unchanged{}",
                taken_at.text(),
                marks.len(),
                if purged > 0 { format!(" (the steps of {purged} runs as far as purge() removed them since)") } else { String::new() }
            ))?),
        ]);
    } else if fine {
        problem(
            None,
            "the runs' heads do not lead to the digest's root".into(),
        )?;
    }
    Ok(Datum::from(0usize))
}

fn prove(call: &Call<'_>) -> Result<Datum> {
    if call.is_null(0) {
        return call.null();
    }
    let step_id = call.i64(0);
    let (id, root) = digest_arg(call, 1, "pg_labels.prove()")?;
    let not_found = |what: String| {
        Error::new(
            INVALID_PARAMETER_VALUE,
            format!("pg_labels.prove(): {what}"),
        )
    };
    let run_id = with_spi(|spi| {
        let rows = STEP_RUN.execute(
            spi,
            &[pg_sys::INT8OID],
            &[Some(Datum::from(step_id))],
            true,
            1,
        )?;
        rows.get::<Uuid>(0, 1)
    })?
    .ok_or_else(|| {
        not_found(format!(
            "there is no step {step_id} (or it is not visible to you)"
        ))
    })?;
    let (_, marks, _) = digest_record(id)?
        .ok_or_else(|| not_found(format!("the database holds no record of digest {id}")))?;
    let marks = marks.ok_or_else(|| not_found(format!("the record of digest {id} is damaged")))?;
    let index = marks
        .iter()
        .position(|m| m.run == run_id)
        .ok_or_else(|| not_found(format!("run {run_id} was opened after digest {id}")))?;
    let mark = &marks[index];
    let run = run_row(&run_id)?.ok_or_else(|| not_found(format!("there is no run {run_id}")))?;
    let scope_text = scope::to_text(&run.scope);
    let mut found: Option<(Value, Hash)> = None;
    let mut later: Vec<String> = Vec::new();
    let head = head_at(&run, mark.length, |s, before, l, after| {
        if s.id == step_id {
            let c = content(&run, &scope_text, s, after);
            found = Some((step_json(&c, &run_id), *before));
        } else if found.is_some() {
            later.push(hex(l));
        }
    })?;
    let (step, prev) = found.ok_or_else(|| {
        not_found(format!(
            "step {step_id} was written after digest {id}, or purged"
        ))
    })?;
    if !matches!(head, HeadAt::Head(h) if h == mark.head) {
        return Err(not_found(format!(
            "run {run_id} no longer holds what digest {id} saw (see pg_labels.verify_digest())"
        )));
    }
    let leaves: Vec<Hash> = marks
        .iter()
        .map(|m| chain::head_leaf(&m.run.0, m.length, &m.head))
        .collect();
    let v = json!({
        "version": 1,
        "step": step,
        "prev": hex(&prev),
        "later": later,
        "length": mark.length,
        "ledger": {
            "digest": id,
            "index": index,
            "size": leaves.len(),
            "path": chain::audit_path(&leaves, index).iter().map(|h| hex(h)).collect::<Vec<_>>(),
            "root": hex(&root),
        }
    });
    Ok(Jsonb::from_text(&v.to_string())?.0)
}
