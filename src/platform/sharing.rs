//! Context shared by reference: artifacts, shares, and reading an artifact into a run.
//!
//! - `pg_labels.artifacts_insert()`: [`crate::platform::artifacts`];
//! - `pg_labels.shares_insert()` (BEFORE INSERT on `shares`): gathers the artifact, the target
//!   and the active crossings, and asks [`barrier::share`];
//! - [`read`], called by the steps trigger for a `context_read` step: gathers the artifact and
//!   its shares and asks [`barrier::read`]; origin run, digest and labels come from the artifact.

use crate::pg::columns::{col, Columns};
use crate::pg::datum::{text_datum, Timestamp, Uuid};
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::Call;
use crate::pg::role::{as_owner, current_user_name};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::{Datum, Oid};
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::context::{self, refuse_given, trail_time};
use crate::platform::crossings::active_into;
use crate::platform::{ids, relations, run_lock};
use crate::sql_function;
use crate::types::datum::{scope_datum, LabelSetBuf, ScopeBuf};
use pg_labels_core::barrier::{self, ArtifactFacts, ReadOutcome, ShareFacts};
use pg_labels_core::refusal;
use pg_labels_core::LabelSet;

static ARTIFACT: SavedPlan =
    SavedPlan::new(c"SELECT origin_run, digest, labels FROM pg_labels.artifacts WHERE id = $1");

static RUN_SCOPE: SavedPlan = SavedPlan::new(c"SELECT scope FROM pg_labels.runs WHERE id = $1");

/// The scope of an artifact's run (release 0.3.1: kept in the artifact's row, so that every
/// node of a Citus cluster knows it).
static ARTIFACT_RUN_SCOPE: SavedPlan = SavedPlan::new(
    c"SELECT coalesce(run_scope, carried_scope) FROM pg_labels.artifacts WHERE id = $1",
);

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
            let rows = ARTIFACT.execute(
                spi,
                &[crate::pg::sys::types::UUIDOID],
                &[Some(id.datum())],
                true,
                1,
            )?;
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

/// May the acting writer use artifact `id` as its own (its grants reach the artifact's run)?
/// Asked only of a role bound to its grants, on the tables of release 0.3.1.
fn artifact_reached(owner: Oid, id: &Uuid) -> Result<bool> {
    let reach = crate::platform::grants::reach(crate::platform::grants::acting())?;
    if reach.everywhere {
        return Ok(true);
    }
    Ok(artifact_run_scope(owner, id)?.is_some_and(|s| reach.reaches(&s)))
}

/// The scope of artifact `id`'s run, from its row (the tables of release 0.3.1).
fn artifact_run_scope(owner: Oid, id: &Uuid) -> Result<Option<Vec<u8>>> {
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = ARTIFACT_RUN_SCOPE.execute(
                spi,
                &[crate::pg::sys::types::UUIDOID],
                &[Some(id.datum())],
                true,
                1,
            )?;
            Ok(rows.get::<ScopeBuf>(0, 1)?.map(|s| s.0))
        })
    })
}

const SHARES: Spec = Spec {
    function: "pg_labels.shares_insert()",
    tables: &["shares"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

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
pub(super) static SHARE_CARRIED: Columns<1> = Columns::new([col::<ScopeBuf>(c"carried_scope")]);

/// The scope of an artifact's (a share's artifact's) run, when it is read in a wider one
/// (release 0.3.1).
pub(super) static RUN_SCOPE_COLUMN: Columns<1> = Columns::new([col::<ScopeBuf>(c"run_scope")]);

sql_function! {
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

fn shares_insert(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &SHARES)?;
    let row = trigger.row();
    if crate::platform::context::restoring() {
        return Ok(row.unchanged());
    }
    let [c_id, c_artifact, c_to_scope, c_to_run, c_crossing, c_actor, c_created] =
        SHARE_COLUMNS.of(&row)?;
    // (none before release 0.3.0)
    if let Ok([c_run_scope]) = RUN_SCOPE_COLUMN.of(&row) {
        if row.datum(c_run_scope).is_some() {
            return Err(refuse_given(
                "shares",
                "run_scope",
                "its artifact's run's scope",
            ));
        }
    }
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
    let no_artifact = || {
        Error::from(refusal::no_artifact(
            &artifact_id.to_string(),
            "shares_artifact_id_fkey",
        ))
    };
    let art = artifact(owner, &artifact_id)?.ok_or_else(no_artifact)?;
    // a writer shares only what its grants reach (the artifact's run): another's artifact is
    // answered as one that does not exist
    let acting = crate::platform::grants::acting();
    if !artifact_reached(owner, &artifact_id)? {
        return Err(no_artifact());
    }

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
                .ok_or_else(|| crate::pg::tuple::not_null("shares", "to_scope"))?;
            if let run_lock::RunPlace::Here(_place) =
                run_lock::run_place(trigger.namespace(), run_id)?
            {
                let run = run_lock::lock_run(trigger.namespace(), run_id)?.ok_or_else(|| {
                    Error::from(refusal::no_run(&run_id.to_string(), "shares_to_run_fkey"))
                })?;
                if !crate::platform::grants::reaches(acting, &run.scope)? {
                    return Err(refusal::no_run(&run_id.to_string(), "shares_to_run_fkey").into());
                }
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
            // (a run the writer's grants do not reach: as one that does not exist)
            let run_scope = scope_of_run(owner, run_id)?
                .filter(|scope| crate::platform::grants::reaches(acting, scope).unwrap_or(false))
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
        // (a share follows its artifact's run: the writer offers what its grants reach to a
        // scope it names, which the barrier judges; a crossing is the target's consent)
        None => (
            given_scope
                .ok_or_else(|| crate::pg::tuple::not_null("shares", "to_scope"))?
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
        // and where its artifact's writers read it: its run's scope, kept when it differs
        if let Ok([c_run_scope]) = RUN_SCOPE_COLUMN.of(&row) {
            if let Some(origin) = artifact_run_scope(owner, &artifact_id)? {
                if origin.as_slice() != readable_in {
                    changes.push((c_run_scope, Some(scope_datum(&origin)?)));
                }
            }
        }
    }
    Ok(row.modified(&changes))
}

/// A run's scope (`None`: no such run), read as the tables' owner.
fn scope_of_run(owner: Oid, run: &Uuid) -> Result<Option<Vec<u8>>> {
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = RUN_SCOPE.execute(
                spi,
                &[crate::pg::sys::types::UUIDOID],
                &[Some(run.datum())],
                true,
                1,
            )?;
            Ok(rows.get::<ScopeBuf>(0, 1)?.map(|s| s.0))
        })
    })
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

    // the shares of the artifact, and the first that offers it to this run
    let share = as_owner(owner, || {
        with_spi(|spi| {
            let rows = SHARES_OF.execute(
                spi,
                &[crate::pg::sys::types::UUIDOID],
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

    // an artifact neither offered to this run nor of a run the writer's grants reach is one
    // that does not exist (whether it was shared, and what it holds, included)
    if share.is_none() && !artifact_reached(owner, artifact_id)? {
        return Err(refusal::no_artifact(&art_text, "steps_artifact_id_fkey").into());
    }

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
