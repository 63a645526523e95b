//! Enforcement on the way into the trail: `pg_labels.steps_insert()`, BEFORE INSERT FOR EACH ROW
//! on `pg_labels.steps`. For every step it
//!
//! 1. **gathers**: the row (kind parsed once), who writes it, the run (locked, see
//!    [`run_lock::lock_run`]), the tool's catalog entry, and for a context read the artifact and
//!    the share that offers it;
//! 2. **decides**, by the core: the step's shape ([`step::check`]), a context read
//!    ([`barrier::read`]), a tool call or gate decision ([`barrier::judge`]);
//! 3. **writes**: grows the run's labels when the step brought new ones, and returns the row
//!    with what the database fills in (id, actor, decision, rule, reason, the approval, share
//!    and crossings used). A refused tool call raises its rule's error instead.

use crate::pg::datum::{bytea_datum, Bytea, Jsonb, Timestamp, Uuid};
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::Call;
use crate::pg::spi::{as_owner, current_user_name, with_spi, SavedPlan};
use crate::pg::trigger::{col, Columns, Op, Spec, Timing, Trigger, Tuple};
use crate::platform::context::{self, refuse_given, trail_time};
use crate::platform::crossings::active_into;
use crate::platform::refused;
use crate::platform::run_lock::{self, LockedRun};
use crate::platform::sharing;
use crate::platform::state::DECIDING;
use crate::platform::{ids, tools};
use crate::sql_function;
use crate::types::datum::{labelset_datum, scope_datum, LabelSetBuf, ScopeBuf};
use pg_labels_core::barrier::{self, Summary, ToolFacts, Verdict};
use pg_labels_core::chain;
use pg_labels_core::crossing::{self, Owned};
use pg_labels_core::refusal;
use pg_labels_core::rules::Decision;
use pg_labels_core::step::{self, Column, Kind};
use pg_labels_core::{label, labelset, LabelSet};
use pgrx::pg_sys::{self, Datum};
use std::borrow::Cow;

const SPEC: Spec = Spec {
    function: "pg_labels.steps_insert()",
    tables: &["steps"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

static COLUMNS: Columns<17> = Columns::new([
    col::<i64>(c"id"),
    col::<Uuid>(c"run_id"),
    col::<String>(c"kind"),
    col::<String>(c"tool"),
    col::<LabelSetBuf>(c"labels"),
    col::<Jsonb>(c"args"),
    col::<String>(c"decision"),
    col::<String>(c"rule"),
    col::<String>(c"reason"),
    col::<i64>(c"request_id"),
    col::<String>(c"actor"),
    col::<Uuid>(c"origin_run"),
    col::<Uuid>(c"artifact_id"),
    col::<String>(c"digest"),
    col::<i64>(c"share_id"),
    col::<Vec<i64>>(c"crossing_ids"),
    col::<Timestamp>(c"created_at"),
]);

/// The ring slot (a table of release 0.1.0, until ALTER EXTENSION UPDATE, has none).
static SLOT: Columns<1> = Columns::new([col::<i16>(c"slot")]);

/// The step's place in its run's hash chain (none either, in release 0.1.0).
static CHAIN: Columns<2> = Columns::new([col::<Bytea>(c"prev_hash"), col::<Bytea>(c"hash")]);

/// The scope the step is readable in (none before release 0.3.0).
static CARRIED: Columns<1> = Columns::new([col::<ScopeBuf>(c"carried_scope")]);

/// The columns of a step, by name.
struct Cols {
    id: i32,
    run: i32,
    kind: i32,
    tool: i32,
    labels: i32,
    args: i32,
    decision: i32,
    rule: i32,
    reason: i32,
    request: i32,
    actor: i32,
    origin_run: i32,
    artifact: i32,
    digest: i32,
    share: i32,
    crossings: i32,
    created_at: i32,
    slot: Option<i32>,
    chain: Option<[i32; 2]>,
    carried: Option<i32>,
}

impl Cols {
    fn of(row: &Tuple<'_>) -> Result<Cols> {
        let [id, run, kind, tool, labels, args, decision, rule, reason, request, actor, origin_run, artifact, digest, share, crossings, created_at] =
            COLUMNS.of(row)?;
        let slot = SLOT.of(row).ok().map(|[s]| s);
        let chain = CHAIN.of(row).ok();
        let carried = CARRIED.of(row).ok().map(|[c]| c);
        Ok(Cols {
            id,
            run,
            kind,
            tool,
            labels,
            args,
            decision,
            rule,
            reason,
            request,
            actor,
            origin_run,
            artifact,
            digest,
            share,
            crossings,
            created_at,
            slot,
            chain,
            carried,
        })
    }

    fn of_column(&self, c: Column) -> i32 {
        match c {
            Column::Tool => self.tool,
            Column::Args => self.args,
            Column::Reason => self.reason,
            Column::Decision => self.decision,
            Column::Rule => self.rule,
            Column::RequestId => self.request,
            Column::OriginRun => self.origin_run,
            Column::ArtifactId => self.artifact,
            Column::Digest => self.digest,
            Column::ShareId => self.share,
            Column::CrossingIds => self.crossings,
        }
    }
}

static GROW_LABELS: SavedPlan =
    SavedPlan::new(c"UPDATE pg_labels.runs SET labels = $2 WHERE id = $1");

/// An unused, granted approval of exactly this call (same run, tool and arguments).
static FIND_APPROVAL: SavedPlan = SavedPlan::new(
    c"SELECT req.id FROM pg_labels.steps req
       WHERE req.run_id = $1 AND req.kind = 'approval_requested'
         AND req.tool = $2 AND req.args IS NOT DISTINCT FROM $3
         AND EXISTS (SELECT FROM pg_labels.steps d
                      WHERE d.request_id = req.id AND d.kind = 'approval_decided' AND d.decision = 'granted')
         AND NOT EXISTS (SELECT FROM pg_labels.steps u
                          WHERE u.request_id = req.id AND u.kind = 'tool_called')
       ORDER BY req.id
       LIMIT 1",
);

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.steps.
    fn pgl_steps_insert(call) {
        crate::platform::refused::guarded("step", || steps_insert(&call))
    }
}

fn steps_insert(call: &Call<'_>) -> Result<Datum> {
    // ---- gather: the row ----
    let trigger = Trigger::fired(call, &SPEC)?;
    let row = trigger.row();
    if context::restoring() {
        return Ok(row.unchanged());
    }
    let c = Cols::of(&row)?;
    let run_id: Uuid = row.must(c.run, "steps")?;
    let Some(kind) = row.get::<&str>(c.kind)?.map(|k| (k, Kind::parse(k))) else {
        return Err(crate::pg::trigger::not_null("steps", "kind"));
    };
    // an unknown kind is refused by the table's CHECK constraint (steps_kind_check), once the
    // row is otherwise complete
    let (_, Some(kind)) = kind else {
        if row.is_identity(c.id) {
            return Ok(row.unchanged());
        }
        let id = ids::next_id(trigger.namespace(), c"steps_id_seq", trigger.owner())?;
        return Ok(row.modified(&[(c.id, Some(Datum::from(id)))]));
    };
    // what a refusal's record names (platform::refused)
    refused::about(|a| {
        a.kind = kind.name().to_string();
        a.run = Some(run_id);
        a.tool = row.get::<String>(c.tool).ok().flatten();
    });
    // (a table of release 0.1.0, until ALTER EXTENSION UPDATE, takes ids from an identity)
    let legacy_ids = row.is_identity(c.id);
    if row.datum(c.id).is_some() && !legacy_ids {
        return Err(refuse_given("steps", "id", "assigned in decision order"));
    }
    let now = trail_time();
    // on a Citus shard the row's time was filled where the statement entered the cluster:
    // the trigger writes its own (context::on_shard)
    let on_shard = context::on_shard();
    if !on_shard && row.get::<Timestamp>(c.created_at)? != Some(now) {
        return Err(refuse_given(
            "steps",
            "created_at",
            "the time the database recorded it",
        ));
    }
    if let Some(slot) = c.slot {
        if row.get::<i16>(slot)? != Some(step::trail_slot(now.0)) {
            return Err(refuse_given(
                "steps",
                "slot",
                "the month of the step's time",
            ));
        }
    }
    if let Some(chain) = c.chain {
        for (col, name) in chain.iter().zip(["prev_hash", "hash"]) {
            if row.datum(*col).is_some() {
                return Err(refuse_given(
                    "steps",
                    name,
                    "the step's place in its run's hash chain",
                ));
            }
        }
    }
    if let Some(carried) = c.carried {
        if row.datum(carried).is_some() {
            return Err(refuse_given(
                "steps",
                "carried_scope",
                "the scope of what the run carried once the step was written",
            ));
        }
    }
    // Who writes the step. An approval decision is written by pg_labels.decide_approval()
    // on behalf of the person deciding, and only by it.
    let writer = current_user_name();
    let actor = if kind == Kind::ApprovalDecided {
        let request = row.get::<i64>(c.request)?;
        match DECIDING.current() {
            Some((r, approver)) if Some(r) == request => approver,
            // On a Citus shard the decision comes from decide_approval() on the node the
            // statement entered, which writes it as the tables' owner and names the decider.
            None if context::owner_on_shard(trigger.owner()) => {
                match row.get::<String>(c.actor)? {
                    Some(approver) => approver,
                    None => return Err(refusal::decision_not_through_function(&writer).into()),
                }
            }
            _ => return Err(refusal::decision_not_through_function(&writer).into()),
        }
    } else {
        if row.get::<&str>(c.actor)?.is_some_and(|a| a != writer) {
            return Err(refuse_given(
                "steps",
                "actor",
                "the role that wrote the step",
            ));
        }
        step::check(kind, |col| row.datum(c.of_column(col)).is_some()).map_err(|e| {
            if e.fill == step::Fill::Required && e.column == Column::ArtifactId {
                return Error::from(refusal::read_without_artifact());
            }
            Error::from(refusal::step_shape(
                kind.name(),
                e.column.name(),
                e.to_string(),
                e.fill == step::Fill::Database,
            ))
        })?;
        writer
    };
    let tool = row.get::<&str>(c.tool)?;
    let step_labels = row.must::<LabelSet<'_>>(c.labels, "steps")?;

    // ---- gather: the run (locked), the tool, the artifact ----
    let namespace = trigger.namespace();
    let owner = trigger.owner();
    // The run is locked and the step decided on it (run_lock::read_run). On a Citus shard the
    // run is read, and the step's one write of the run's row (its chain's head) is then also
    // its lock: if another step of the run was written first, or the decision is a refusal,
    // the step is decided again on the run locked.
    let mut lock = false;
    loop {
        let run = if lock {
            run_lock::lock_run(namespace, &run_id)
        } else {
            run_lock::read_run(namespace, &run_id)
        }?
        .ok_or_else(|| Error::from(refusal::no_run(&run_id.to_string(), "steps_run_id_fkey")))?;
        refused::about(|a| a.run_scope = Some(run.scope.clone()));
        // one decision per request: checked under the run's lock, which orders the deciders (a
        // decision committed stays; one being written holds the run's row, which this step's
        // write then waits for)
        if kind == Kind::ApprovalDecided {
            let request = row.get::<i64>(c.request)?.unwrap_or_default();
            if decided(owner, &run_id, request)? {
                return Err(refusal::already_decided(request).into());
            }
        }
        let tool_entry = match tool {
            Some(name) if kind.reads_tool() => tools::tool(namespace, name)?,
            _ => None,
        };

        // What the step brings: its own labels, and for a result of a tool whose output is not
        // trusted, origin:tool; for a context read, the artifact's labels too.
        let mut own: Cow<'_, [u8]> = Cow::Borrowed(step_labels.body());
        if kind == Kind::ToolResult && !tool_entry.as_ref().is_some_and(|t| t.trusted_output) {
            let origin =
                labelset::from_entries(vec![label::parse(b"origin:tool").unwrap_or_default()]);
            let with = step_labels.union(LabelSet::from_canonical(&origin));
            if with != step_labels.body() {
                own = Cow::Owned(with);
            }
        }
        let read = if kind == Kind::ContextRead {
            let artifact: Uuid = row.must(c.artifact, "steps")?;
            let r = sharing::read(
                owner,
                &run_id,
                &run.scope,
                &artifact,
                row.get::<Uuid>(c.origin_run)?,
                row.get::<&str>(c.digest)?,
                step_labels,
            )?;
            if r.outcome.labels != step_labels.body() {
                own = Cow::Owned(r.outcome.labels.clone());
            }
            Some(r)
        } else {
            None
        };
        let own_set = LabelSet::from_canonical(&own);

        // ---- decide ----
        let grows = !run.labels.has_all(own_set);
        let summary: Cow<'_, Summary> = if grows {
            Cow::Owned(run.labels.summary.with(own_set, &run.scope))
        } else {
            Cow::Borrowed(&run.labels.summary)
        };
        let verdict = if kind.is_judged() {
            Some(judge(
                &run,
                &run_id,
                owner,
                tool,
                tool_entry.as_ref(),
                &summary,
                row.get::<Jsonb>(c.args)?,
            )?)
        } else {
            None
        };
        if let Some(v) = &verdict {
            if kind == Kind::ToolCalled && v.decision != Decision::Allow {
                // a refusal is made on the run locked: a writer at it may be deciding an approval
                if !run.locked {
                    lock = true;
                    continue;
                }
                refused::about(|a| {
                    a.labels = Some(if v.uncovered.is_empty() {
                        summary.origins().body().to_vec()
                    } else {
                        v.uncovered.clone()
                    })
                });
                return Err(v
                    .refusal(
                        &run_id.to_string(),
                        &run.scope,
                        tool,
                        tool_entry.as_ref().and_then(|t| t.effect),
                        summary.origins(),
                    )
                    .into());
            }
        }

        // ---- write ----
        // The id, taken under the run's lock: ids follow the order in which a run's steps were
        // decided.
        // (room for every column the trigger may fill: no reallocation per row)
        let mut changes: Vec<(i32, Option<Datum>)> = Vec::with_capacity(20);
        changes.push((c.actor, Some(crate::pg::datum::text_datum(&actor)?)));
        if on_shard {
            changes.push((c.created_at, Some(Datum::from(now.0))));
        }
        if !legacy_ids {
            let id = ids::next_id(namespace, c"steps_id_seq", owner)?;
            changes.push((c.id, Some(Datum::from(id))));
        }
        if let Cow::Owned(body) = &own {
            changes.push((c.labels, Some(labelset_datum(body)?)));
        }
        // where the step can be read: the deepest scope that can carry what the run carries
        // with it (row-level security decides from the row alone: pg_labels.readable_in)
        if let Some(carried) = c.carried {
            changes.push((
                carried,
                Some(scope_datum(&summary.carried_scope(&run.scope))?),
            ));
        }
        let crossings_used: &[i64] = match (&verdict, &read) {
            (Some(v), _) => &v.crossings,
            (None, Some(r)) => &r.outcome.crossings,
            _ => &[],
        };
        if !crossings_used.is_empty() {
            changes.push((
                c.crossings,
                Some(crate::pg::datum::int8_array_datum(crossings_used)),
            ));
        }
        if let Some(r) = &read {
            changes.push((c.share, Some(Datum::from(r.outcome.share))));
            changes.push((c.origin_run, Some(r.origin_run.datum())));
            changes.push((c.digest, Some(crate::pg::datum::text_datum(&r.digest)?)));
        }
        if let Some(v) = &verdict {
            changes.push((
                c.decision,
                Some(crate::pg::datum::text_datum(v.decision.name())?),
            ));
            changes.push((
                c.rule,
                v.rule
                    .map(|r| crate::pg::datum::text_datum(r.name()))
                    .transpose()?,
            ));
            changes.push((
                c.reason,
                v.reason
                    .as_deref()
                    .map(crate::pg::datum::text_datum)
                    .transpose()?,
            ));
            if kind == Kind::ToolCalled {
                changes.push((c.request, v.approval.map(Datum::from)));
            }
        }
        // Labels accumulate: the run now carries what this step brought. The chain: the step's
        // hash links its content to its run's head, which moves on to it. The run's row is
        // written when its labels grow (and then keeps the head as its checkpoint), or when
        // the step is the run's first in another month of the ring (LockedRun::advance).
        let carried = grows.then(|| run.labels.set().union(own_set));
        if let (Some([c_prev, c_hash]), Some(state)) = (c.chain, &run.chain) {
            let id = match changes.iter().find(|(col, _)| *col == c.id) {
                Some((_, Some(d))) => d.value() as i64,
                _ => row.get::<i64>(c.id)?.unwrap_or_default(),
            };
            let text = |col: i32| -> Result<Option<&str>> {
                match changes.iter().find(|(c2, _)| *c2 == col) {
                    // SAFETY: the trigger's own text datums, made above.
                    Some((_, Some(d))) => unsafe {
                        crate::pg::datum::read::<&str>(Some(*d), pg_sys::TEXTOID, || String::new())
                    },
                    Some((_, None)) => Ok(None),
                    None => row.get::<&str>(col),
                }
            };
            let int = |col: i32| -> Result<Option<i64>> {
                match changes.iter().find(|(c2, _)| *c2 == col) {
                    Some((_, d)) => Ok(d.map(|d| d.value() as i64)),
                    None => row.get::<i64>(col),
                }
            };
            let args = row.get::<Jsonb>(c.args)?.map(|a| a.text());
            let crossing_ids: Option<Vec<i64>> = if crossings_used.is_empty() {
                row.get::<Vec<i64>>(c.crossings)?
            } else {
                Some(crossings_used.to_vec())
            };
            let scope = pg_labels_core::scope::to_text(&run.scope);
            let labels_after = chain::labels_next(&state.head, own_set);
            let leaf = chain::leaf(&chain::StepContent {
                id,
                run_id: run_id.0,
                kind: kind.name(),
                tool,
                labels: own_set,
                args: args.as_deref(),
                decision: text(c.decision)?,
                rule: text(c.rule)?,
                reason: text(c.reason)?,
                request_id: int(c.request)?,
                origin_run: match &read {
                    Some(r) => Some(r.origin_run.0),
                    None => row.get::<Uuid>(c.origin_run)?.map(|u| u.0),
                },
                artifact_id: row.get::<Uuid>(c.artifact)?.map(|u| u.0),
                digest: text(c.digest)?,
                share_id: int(c.share)?,
                crossing_ids: crossing_ids.as_deref(),
                actor: &actor,
                created_at: now.0,
                scope: &scope,
                labels_after,
            });
            let hash = chain::link(&state.head, &leaf);
            let slot = c.slot.map(|_| step::trail_slot(now.0));
            // A step's month is its transaction's: a transaction that began before the run's
            // last step, in an earlier month, would put a later decision into an earlier month
            // of the ring, which retention empties first (its approval's use gone, the request
            // kept: the approval usable again). Refused, to be retried in a new transaction.
            if let (Some(slot), Some(head_slot)) = (slot, state.slot) {
                if slot != head_slot && !on_shard {
                    if let Some(last) = last_step_time(owner, &run_id, head_slot)? {
                        if step::year_month(last.0) > step::year_month(now.0) {
                            return Err(refusal::step_before_run(
                                &run_id.to_string(),
                                &pg_labels_core::retention::utc_text(now.0),
                                &pg_labels_core::retention::utc_text(last.0),
                            )
                            .into());
                        }
                    }
                }
            }
            if !run.advance(&hash, id, carried.as_deref(), slot)? {
                // another step of the run was written first: decide again on the run locked
                lock = true;
                continue;
            }
            changes.push((c_prev, Some(bytea_datum(&state.head)?)));
            changes.push((c_hash, Some(bytea_datum(&hash)?)));
        } else if let Some(carried) = &carried {
            // a table of release 0.1.0 (no chain), until ALTER EXTENSION UPDATE
            as_owner(owner, || {
                with_spi(|spi| {
                    GROW_LABELS
                        .execute(
                            spi,
                            &[pg_sys::UUIDOID, labelset_type(&row, c.labels)],
                            &[Some(run_id.datum()), Some(labelset_datum(carried)?)],
                            false,
                            0,
                        )
                        .map(|rows| rows.len())
                })
            })?;
        }
        return Ok(row.modified(&changes));
    }
}

/// Has the request been decided already (as committed now)? Called under the run's lock.
fn decided(owner: pg_sys::Oid, run: &Uuid, request: i64) -> Result<bool> {
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = DECIDED.execute_latest(
                spi,
                &[pg_sys::UUIDOID, pg_sys::INT8OID],
                &[Some(run.datum()), Some(Datum::from(request))],
                1,
            )?;
            Ok(!rows.is_empty())
        })
    })
}

/// The time of the run's last step in a partition of the ring (with the latest snapshot: under
/// the run's lock, the steps of transactions that committed before it was granted count).
fn last_step_time(owner: pg_sys::Oid, run: &Uuid, slot: i16) -> Result<Option<Timestamp>> {
    as_owner(owner, || {
        with_spi(|spi| {
            LAST_STEP_TIME
                .execute_latest(
                    spi,
                    &[pg_sys::UUIDOID, pg_sys::INT2OID],
                    &[Some(run.datum()), Some(Datum::from(slot))],
                    1,
                )?
                .get::<Timestamp>(0, 1)
        })
    })
}

static LAST_STEP_TIME: SavedPlan = SavedPlan::new(
    c"SELECT created_at FROM pg_labels.steps WHERE run_id = $1 AND slot = $2 ORDER BY id DESC LIMIT 1",
);

static DECIDED: SavedPlan = SavedPlan::new(
    c"SELECT FROM pg_labels.steps d
       WHERE d.run_id = $1 AND d.request_id = $2 AND d.kind = 'approval_decided'",
);

/// The type OID of the labels column (the extension's `labelset`).
fn labelset_type(row: &Tuple<'_>, col: i32) -> pg_sys::Oid {
    row.type_of(col)
}

/// Judge a tool call or gate decision: the core decides; the crossings and the approval are
/// looked up only if it asks.
#[allow(clippy::too_many_arguments)]
fn judge(
    run: &LockedRun,
    run_id: &Uuid,
    owner: pg_sys::Oid,
    tool: Option<&str>,
    entry: Option<&tools::Tool>,
    summary: &Summary,
    args: Option<Jsonb>,
) -> Result<Verdict> {
    let facts = entry
        .and_then(|t| t.effect)
        .map(|effect| ToolFacts { effect });
    let cover = |escaping: LabelSet<'_>| -> Result<std::result::Result<Vec<i64>, Vec<u8>>> {
        let active: Vec<Owned> = active_into(owner, &run.scope)?;
        let views: Vec<_> = active.iter().map(Owned::view).collect();
        Ok(crossing::cover_each(escaping, &run.scope, &views))
    };
    let approval = || -> Result<Option<i64>> {
        let tool_d = tool.map(crate::pg::datum::text_datum).transpose()?;
        as_owner(owner, || {
            with_spi(|spi| {
                // with the latest snapshot: under the run's lock, a use of the approval that
                // committed before counts, also in REPEATABLE READ
                let rows = FIND_APPROVAL.execute_latest(
                    spi,
                    &[pg_sys::UUIDOID, pg_sys::TEXTOID, pg_sys::JSONBOID],
                    &[Some(run_id.datum()), tool_d, args.map(|a| a.0)],
                    1,
                )?;
                rows.get::<i64>(0, 1)
            })
        })
    };
    barrier::judge(
        &run.scope,
        summary.escaping(),
        summary.origins(),
        tool,
        facts,
        cover,
        approval,
    )
}
