//! Context shared by reference: artifacts, shares, and reading an artifact into a run.
//!
//! - `pg_labels.artifacts_insert()` (BEFORE INSERT on `artifacts`): locks the origin run like a
//!   step does and records at least the labels it carries (an artifact is the run's output);
//! - `pg_labels.shares_insert()` (BEFORE INSERT on `shares`): gathers the artifact, the target
//!   and the active crossings, and asks [`barrier::share`];
//! - [`read`], called by the steps trigger for a `context_read` step: gathers the artifact and
//!   its shares and asks [`barrier::read`]; origin run, digest and labels come from the artifact.

use crate::pg::datum::{text_datum, Timestamp, Uuid};
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::Call;
use crate::pg::spi::{as_owner, current_user_name, with_spi, SavedPlan};
use crate::pg::trigger::{col, Columns, Op, Spec, Timing, Trigger};
use crate::platform::context::{self, refuse_given, trail_time};
use crate::platform::crossings::active_into;
use crate::platform::{ids, relations, run_lock};
use crate::sql_function;
use crate::types::datum::{labelset_datum, scope_datum, LabelSetBuf, ScopeBuf};
use pg_labels_core::barrier::{self, ArtifactFacts, ReadOutcome, ShareFacts};
use pg_labels_core::refusal;
use pg_labels_core::LabelSet;
use pgrx::pg_sys::{self, Datum, Oid};

static ARTIFACT: SavedPlan =
    SavedPlan::new(c"SELECT origin_run, digest, labels FROM pg_labels.artifacts WHERE id = $1");

static RUN_SCOPE: SavedPlan = SavedPlan::new(c"SELECT scope FROM pg_labels.runs WHERE id = $1");

static SHARES_OF: SavedPlan = SavedPlan::new(
    c"SELECT id, to_scope, to_run FROM pg_labels.shares WHERE artifact_id = $1 ORDER BY id",
);

/// An artifact, as the barrier needs it.
pub struct Artifact {
    pub origin_run: Uuid,
    pub digest: String,
    pub labels: Vec<u8>,
}

/// Look an artifact up (as `owner`); `None` when there is none.
fn artifact(owner: Oid, id: &Uuid) -> Result<Option<Artifact>> {
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = ARTIFACT.execute(spi, &[pg_sys::UUIDOID], &[Some(id.datum())], true, 1)?;
            if rows.is_empty() {
                return Ok(None);
            }
            Ok(Some(Artifact {
                origin_run: rows.must(0, 1)?,
                digest: rows.must(0, 2)?,
                labels: rows.must::<LabelSetBuf>(0, 3)?.0,
            }))
        })
    })
}

const ARTIFACTS: Spec = Spec {
    function: "pg_labels.artifacts_insert()",
    tables: &["artifacts"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

const SHARES: Spec = Spec {
    function: "pg_labels.shares_insert()",
    tables: &["shares"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

static ARTIFACT_COLUMNS: Columns<5> = Columns::new([
    col::<Uuid>(c"origin_run"),
    col::<LabelSetBuf>(c"labels"),
    col::<String>(c"actor"),
    col::<String>(c"digest"),
    col::<Timestamp>(c"created_at"),
]);

static SHARE_COLUMNS: Columns<7> = Columns::new([
    col::<i64>(c"id"),
    col::<Uuid>(c"artifact_id"),
    col::<ScopeBuf>(c"to_scope"),
    col::<Uuid>(c"to_run"),
    col::<i64>(c"crossing_id"),
    col::<String>(c"actor"),
    col::<Timestamp>(c"created_at"),
]);

/// The scope a share (none before release 0.3.0) or an artifact (release 0.3.1) is readable in.
static SHARE_CARRIED: Columns<1> = Columns::new([col::<ScopeBuf>(c"carried_scope")]);

fn is_digest(d: &[u8]) -> bool {
    d.len() == 64 && d.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.artifacts.
    fn pgl_artifacts_insert(call) {
        crate::platform::refused::guarded("artifact", || artifacts_insert(&call))
    }

    /// BEFORE INSERT FOR EACH ROW on pg_labels.shares.
    fn pgl_shares_insert(call) {
        crate::platform::refused::guarded("share", || shares_insert(&call))
    }

    /// `pg_labels.next_share_id() → bigint`: the default of `shares.id` on a Citus cluster
    /// (pg_labels.distribute()), evaluated where the statement enters it, from that node's
    /// range: every copy of the reference table gets the same id.
    fn pgl_next_share_id(_call) {
        let namespace = crate::pg::trigger::platform_schema()
            .ok_or_else(|| Error::new(crate::pg::error::NOT_IN_PREREQUISITE_STATE, "pg_labels: the schema pg_labels is missing"))?;
        let owner = relations::platform_owner()?;
        let on_node = crate::pg::citus::loaded();
        Ok(Datum::from(ids::next_id_where(namespace, c"shares_id_seq", owner, on_node)?))
    }
}

fn artifacts_insert(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &ARTIFACTS)?;
    let row = trigger.row();
    if crate::platform::context::restoring() {
        return Ok(row.unchanged());
    }
    let [c_run, c_labels, c_actor, c_digest, c_created] = ARTIFACT_COLUMNS.of(&row)?;
    let run_id: Uuid = row.must(c_run, "artifacts")?;
    let digest: &str = row.must(c_digest, "artifacts")?;
    if !is_digest(digest.as_bytes()) {
        return Err(refusal::bad_digest(digest.as_bytes()).into());
    }
    let writer = current_user_name();
    if row.get::<&str>(c_actor)?.is_some_and(|a| a != writer) {
        return Err(refuse_given(
            "artifacts",
            "actor",
            "the role that made the artifact",
        ));
    }
    // on a Citus node (a copy of the reference table) the time was filled where the statement
    // entered the cluster, the same for every copy
    let on_shard = context::on_shard();
    if !on_shard && row.get::<Timestamp>(c_created)? != Some(trail_time()) {
        return Err(refuse_given(
            "artifacts",
            "created_at",
            "the time the database recorded it",
        ));
    }
    let given = row
        .get::<LabelSet<'_>>(c_labels)?
        .unwrap_or(LabelSet::EMPTY);
    // where the artifact can be read, kept inline for the policy (none before release 0.3.1)
    let carried = SHARE_CARRIED.of(&row).ok().map(|[c]| c);
    if carried.is_some_and(|c| row.datum(c).is_some()) {
        return Err(refuse_given(
            "artifacts",
            "carried_scope",
            "the scope of the artifact's labels",
        ));
    }
    let with_carried = |mut changes: Vec<(i32, Option<Datum>)>, labels: LabelSet<'_>| {
        if let Some(c) = carried {
            changes.push((c, labels.scope().map(scope_datum).transpose()?));
        }
        Ok::<_, Error>(row.modified(&changes))
    };
    let no_run = || {
        Error::from(refusal::no_run(
            &run_id.to_string(),
            "artifacts_origin_run_fkey",
        ))
    };
    match run_lock::run_place(trigger.namespace(), &run_id)? {
        // Serialized with the run's steps: the artifact carries every label that had entered
        // the run when it was made.
        run_lock::RunPlace::Single => {
            let run = run_lock::lock_run(trigger.namespace(), &run_id)?.ok_or_else(no_run)?;
            let labels = given.union(run.labels.set());
            with_carried(
                vec![
                    (c_labels, Some(labelset_datum(&labels)?)),
                    (c_actor, Some(text_datum(&writer)?)),
                ],
                LabelSet::from_canonical(&labels),
            )
        }
        // On Citus every node writes the same row, and one alone holds the run: the labels
        // are the writer's, and that node refuses them unless they hold the run's.
        run_lock::RunPlace::Here(_place) => {
            let run = run_lock::lock_run(trigger.namespace(), &run_id)?.ok_or_else(no_run)?;
            let missing =
                LabelSet::from_canonical(run.labels.set().body()).filter(|l| !given.contains(l.0));
            if !missing.is_empty() {
                return Err(refusal::artifact_below_run(&run_id.to_string(), &missing).into());
            }
            with_carried(vec![(c_actor, Some(text_datum(&writer)?))], given)
        }
        run_lock::RunPlace::Elsewhere => {
            with_carried(vec![(c_actor, Some(text_datum(&writer)?))], given)
        }
    }
}

fn shares_insert(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &SHARES)?;
    let row = trigger.row();
    if crate::platform::context::restoring() {
        return Ok(row.unchanged());
    }
    let [c_id, c_artifact, c_to_scope, c_to_run, c_crossing, c_actor, c_created] =
        SHARE_COLUMNS.of(&row)?;
    // (none before release 0.3.0)
    let carried = SHARE_CARRIED.of(&row).ok().map(|[c]| c);
    if carried.is_some_and(|c| row.datum(c).is_some()) {
        return Err(refuse_given(
            "shares",
            "carried_scope",
            "the scope of the artifact's labels",
        ));
    }
    // (a table of release 0.1.0, until ALTER EXTENSION UPDATE, takes ids from an identity)
    let legacy_ids = row.is_identity(c_id);
    // on a Citus node (a copy of the reference table) the id and time were filled where the
    // statement entered the cluster (the column's default there), the same for every copy
    let on_shard = context::on_shard();
    if row.datum(c_id).is_some() && !legacy_ids && !on_shard {
        return Err(refuse_given("shares", "id", "assigned by the database"));
    }
    let writer = current_user_name();
    if row.get::<&str>(c_actor)?.is_some_and(|a| a != writer) {
        return Err(refuse_given("shares", "actor", "the role that shared"));
    }
    if !on_shard && row.get::<Timestamp>(c_created)? != Some(trail_time()) {
        return Err(refuse_given(
            "shares",
            "created_at",
            "the time the database recorded it",
        ));
    }
    let owner = trigger.owner();
    let artifact_id: Uuid = row.must(c_artifact, "shares")?;
    let art = artifact(owner, &artifact_id)?.ok_or_else(|| {
        Error::from(refusal::no_artifact(
            &artifact_id.to_string(),
            "shares_artifact_id_fkey",
        ))
    })?;

    // To one run: judged by that run's scope, which the share records.
    let given_scope = row.get::<ScopeBuf>(c_to_scope)?;
    let to_run = row.get::<Uuid>(c_to_run)?;
    // what a refusal's record names (platform::refused): the artifact's run, read where the
    // artifact can be read; where the writer would share it, apart (the target's scope is
    // another company's, maybe: its analysts do not read this company's data)
    crate::platform::refused::about(|a| {
        a.run = Some(art.origin_run);
        a.scope = Some(
            LabelSet::from_canonical(&art.labels)
                .scope()
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
        );
        a.labels = Some(art.labels.clone());
    });
    crate::platform::refused::attempted("artifact_id", Some(artifact_id.to_string().into()));
    crate::platform::refused::attempted(
        "to_scope",
        given_scope
            .as_ref()
            .map(|s| pg_labels_core::scope::to_text(&s.0).into()),
    );
    crate::platform::refused::attempted("to_run", to_run.map(|r| r.to_string().into()));
    let (target, filled) = match &to_run {
        // On Citus one node alone holds the run: the writer names its scope, which that node
        // checks (every copy of the share must be the same)
        Some(run_id) if on_shard => {
            let given = given_scope
                .clone()
                .ok_or_else(|| crate::pg::trigger::not_null("shares", "to_scope"))?;
            if let run_lock::RunPlace::Here(_place) =
                run_lock::run_place(trigger.namespace(), run_id)?
            {
                let run = run_lock::lock_run(trigger.namespace(), run_id)?.ok_or_else(|| {
                    Error::from(refusal::no_run(&run_id.to_string(), "shares_to_run_fkey"))
                })?;
                if run.scope != given.0 {
                    return Err(refusal::share_scope_mismatch(
                        &run_id.to_string(),
                        &run.scope,
                        &given.0,
                    )
                    .into());
                }
            }
            (given.0, false)
        }
        Some(run_id) => {
            let run_scope = as_owner(owner, || {
                with_spi(|spi| {
                    let rows = RUN_SCOPE.execute(
                        spi,
                        &[pg_sys::UUIDOID],
                        &[Some(run_id.datum())],
                        true,
                        1,
                    )?;
                    Ok(rows.get::<ScopeBuf>(0, 1)?.map(|s| s.0))
                })
            })?
            .ok_or_else(|| {
                Error::from(refusal::no_run(&run_id.to_string(), "shares_to_run_fkey"))
            })?;
            if let Some(g) = &given_scope {
                if g.0 != run_scope {
                    return Err(refusal::share_scope_mismatch(
                        &run_id.to_string(),
                        &run_scope,
                        &g.0,
                    )
                    .into());
                }
            }
            (run_scope, given_scope.is_none())
        }
        None => (
            given_scope
                .ok_or_else(|| crate::pg::trigger::not_null("shares", "to_scope"))?
                .0,
            false,
        ),
    };

    // The barrier: what the target scope cannot carry needs one active crossing.
    let facts = ArtifactFacts {
        id: &artifact_id.to_string(),
        origin_run: &art.origin_run.to_string(),
        labels: LabelSet::from_canonical(&art.labels),
    };
    let to_run_text = to_run.map(|r| r.to_string());
    let used = barrier::share(
        &facts,
        &target,
        to_run_text.as_deref(),
        row.get::<i64>(c_crossing)?,
        || active_into(owner, &target),
    )??;

    let mut changes = vec![
        (c_crossing, used.map(Datum::from)),
        (c_actor, Some(text_datum(&writer)?)),
    ];
    if !legacy_ids && !on_shard {
        let id = ids::next_id(trigger.namespace(), c"shares_id_seq", trigger.owner())?;
        changes.push((c_id, Some(Datum::from(id))));
    }
    if filled {
        changes.push((c_to_scope, Some(scope_datum(&target)?)));
    }
    // where the share can be read: where its artifact's labels can be (kept in the row, so
    // row-level security decides from it alone: pg_labels.readable_in). An artifact holds its
    // run's labels, its scope label among them; one without any is read only in *.
    if let Some(c_carried) = carried {
        let readable_in = LabelSet::from_canonical(&art.labels).scope().unwrap_or(&[]);
        changes.push((c_carried, Some(scope_datum(readable_in)?)));
    }
    Ok(row.modified(&changes))
}

/// What a `context_read` step is filled with.
pub struct Read {
    pub outcome: ReadOutcome,
    pub origin_run: Uuid,
    pub digest: String,
}

/// Gather and judge a `context_read` of `artifact_id` by run `run_id` (in `run_scope`, locked
/// by the caller), whose step claims `claimed_origin` and `claimed_digest` and carries
/// `step_labels`.
pub fn read(
    owner: Oid,
    run_id: &Uuid,
    run_scope: &[u8],
    artifact_id: &Uuid,
    claimed_origin: Option<Uuid>,
    claimed_digest: Option<&str>,
    step_labels: LabelSet<'_>,
) -> Result<Read> {
    let (run, art_text) = (run_id.to_string(), artifact_id.to_string());
    let art = artifact(owner, artifact_id)?
        .ok_or_else(|| Error::from(refusal::no_artifact(&art_text, "steps_artifact_id_fkey")))?;

    // what the step says it read must be what the artifact is
    if let Some(o) = claimed_origin {
        if o != art.origin_run {
            return Err(refusal::read_mismatch(&art_text, "origin_run", &o.to_string()).into());
        }
    }
    if let Some(d) = claimed_digest {
        if d != art.digest {
            return Err(refusal::read_mismatch(&art_text, "digest", d).into());
        }
    }

    // the shares of the artifact, and the first that offers it to this run
    let share = as_owner(owner, || {
        with_spi(|spi| {
            let rows = SHARES_OF.execute(
                spi,
                &[pg_sys::UUIDOID],
                &[Some(artifact_id.datum())],
                true,
                0,
            )?;
            let mut shares = Vec::with_capacity(rows.len() as usize);
            for i in 0..rows.len() {
                shares.push((
                    rows.must::<i64>(i, 1)?,
                    rows.must::<ScopeBuf>(i, 2)?.0,
                    rows.get::<Uuid>(i, 3)?,
                ));
            }
            Ok(barrier::covering_share(
                run_scope,
                shares.iter().map(|(id, to_scope, to_run)| ShareFacts {
                    id: *id,
                    to_this_run: to_run.map(|r| r == *run_id),
                    to_scope,
                }),
            ))
        })
    })?;

    let facts = ArtifactFacts {
        id: &art_text,
        origin_run: &art.origin_run.to_string(),
        labels: LabelSet::from_canonical(&art.labels),
    };
    let outcome = barrier::read(&run, run_scope, &facts, share, step_labels, || {
        active_into(owner, run_scope)
    })??;
    Ok(Read {
        outcome,
        origin_run: art.origin_run,
        digest: art.digest,
    })
}
