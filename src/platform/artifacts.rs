//! `pg_labels.artifacts_insert()` (BEFORE INSERT on `artifacts`): an artifact is its run's
//! output, shared by reference: the origin run is locked like a step locks it, and the artifact
//! records at least the labels the run carries, and where it can be read (`carried_scope`;
//! `run_scope`, its run's, where that differs). A writer makes artifacts only of runs its grants
//! reach.

use crate::pg::columns::{col, Columns};
use crate::pg::datum::{text_datum, Timestamp, Uuid};
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::Call;
use crate::pg::role::current_user_name;
use crate::pg::sys::Datum;
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::context::{self, refuse_given, trail_time};
use crate::platform::run_lock;
use crate::platform::sharing::{RUN_SCOPE_COLUMN, SHARE_CARRIED};
use crate::sql_function;
use crate::types::datum::{labelset_datum, scope_datum, LabelSetBuf};
use pg_labels_core::refusal;
use pg_labels_core::LabelSet;

const ARTIFACTS: Spec = Spec {
    function: "pg_labels.artifacts_insert()",
    tables: &["artifacts"],
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

fn is_digest(d: &[u8]) -> bool {
    d.len() == 64 && d.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.artifacts.
    fn pgl_artifacts_insert(call) {
        crate::platform::refused::guarded("artifact", || artifacts_insert(&call))
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
    if let Ok([c_run_scope]) = RUN_SCOPE_COLUMN.of(&row) {
        if row.datum(c_run_scope).is_some() {
            return Err(refuse_given("artifacts", "run_scope", "its run's scope"));
        }
    }
    let acting = crate::platform::grants::acting();
    let with_carried =
        |mut changes: Vec<(i32, Option<Datum>)>, labels: LabelSet<'_>, run_scope: &[u8]| {
            if let Some(c) = carried {
                let scope = labels.scope();
                changes.push((c, scope.map(scope_datum).transpose()?));
                // and where its run's writers read it, when it differs
                if let Ok([c_run_scope]) = RUN_SCOPE_COLUMN.of(&row) {
                    if scope != Some(run_scope) {
                        changes.push((c_run_scope, Some(scope_datum(run_scope)?)));
                    }
                }
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
            // a writer makes artifacts only of runs its grants reach
            if !crate::platform::grants::reaches(acting, &run.scope)? {
                return Err(no_run());
            }
            let labels = given.union(run.labels.set());
            with_carried(
                vec![
                    (c_labels, Some(labelset_datum(&labels)?)),
                    (c_actor, Some(text_datum(&writer)?)),
                ],
                LabelSet::from_canonical(&labels),
                &run.scope,
            )
        }
        // On Citus every node writes the same row, and one alone holds the run: the labels
        // are the writer's, and that node refuses them unless they hold the run's.
        run_lock::RunPlace::Here(_place) => {
            let run = run_lock::lock_run(trigger.namespace(), &run_id)?.ok_or_else(no_run)?;
            if !crate::platform::grants::reaches(acting, &run.scope)? {
                return Err(no_run());
            }
            let missing =
                LabelSet::from_canonical(run.labels.set().body()).filter(|l| !given.contains(l.0));
            if !missing.is_empty() {
                return Err(refusal::artifact_below_run(&run_id.to_string(), &missing).into());
            }
            with_carried(
                vec![(c_actor, Some(text_datum(&writer)?))],
                given,
                &run.scope,
            )
        }
        run_lock::RunPlace::Elsewhere => {
            let scope = given.scope().unwrap_or(&[]).to_vec();
            with_carried(vec![(c_actor, Some(text_datum(&writer)?))], given, &scope)
        }
    }
}
