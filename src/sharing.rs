//! Context shared by reference: artifacts, shares, and reading an artifact into a run.
//!
//! - `pgl_artifacts_insert` (BEFORE INSERT on `pg_labels.artifacts`): locks the origin run like a
//!   step does and records at least the labels it carries (an artifact is the run's output);
//! - `pgl_shares_insert` (BEFORE INSERT on `pg_labels.shares`): the barrier for a share — its
//!   scope must carry the artifact's labels, or one active crossing must cover the rest;
//! - [`read`], called by the steps trigger for a `context_read` step: the artifact must be
//!   shared with the reading run, and the run's scope must carry its labels or active crossings
//!   must cover them; origin run, digest and labels come from the artifact.

use crate::crossing::{self, active_into};
use crate::error::{Error, Result, CHECK_VIOLATION};
use crate::fmgr::{datum_labelset, datum_scope, ret_labelset};
use crate::heap;
use crate::refusal::{self, FOREIGN_KEY_VIOLATION};
use crate::spi::{
    self, as_owner, current_user_name, datum_text, datum_uuid, result_datum, uuid_string,
    uuid_text, with_spi, Columns, SavedPlan, Uuid,
};
use crate::sql_function;
use crate::trail::{not_null, Row, TRIGGER_PROTOCOL};
use pg_labels_core::crossing::{cover_all, cover_each};
use pg_labels_core::{scope, LabelSet};
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
unsafe fn artifact(owner: Oid, id: Datum) -> Result<Option<Artifact>> {
    unsafe {
        as_owner(owner, || {
            with_spi(|| {
                if ARTIFACT.execute(&[pg_sys::UUIDOID], &[Some(id)], true, 1)? == 0 {
                    return Ok(None);
                }
                let col = |c| result_datum(0, c).ok_or_else(|| Error::corrupt("artifact"));
                Ok(Some(Artifact {
                    origin_run: datum_uuid(col(1)?),
                    digest: datum_text(col(2)?),
                    labels: datum_labelset(col(3)?)?.body().to_vec(),
                }))
            })
        })
    }
}

fn no_artifact(id: &str, table: &str, constraint: &str) -> Error {
    Error::new(
        FOREIGN_KEY_VIOLATION,
        format!("artifact {id} does not exist"),
    )
    .detail("Shares and context reads name an artifact of pg_labels.artifacts.")
    .constraint(constraint)
    .table("pg_labels", table)
}

static ARTIFACT_COLUMNS: Columns<4> = Columns::new([c"origin_run", c"labels", c"actor", c"digest"]);
static SHARE_COLUMNS: Columns<5> = Columns::new([
    c"artifact_id",
    c"to_scope",
    c"to_run",
    c"crossing_id",
    c"actor",
]);

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.artifacts.
    fn pgl_artifacts_insert(fc) {
        let row = Row::of(fc, "pg_labels.artifacts_insert()")?;
        if !row.is_before_row() || row.op() != pg_sys::TRIGGER_EVENT_INSERT {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.artifacts_insert() must fire BEFORE INSERT FOR EACH ROW"));
        }
        let [c_run, c_labels, c_actor, c_digest] = ARTIFACT_COLUMNS.of(row.relid(), row.desc)?;
        let run_id = row.get(c_run).ok_or_else(|| not_null("artifacts", "origin_run"))?;
        let digest = spi::datum_bytes(row.get(c_digest).ok_or_else(|| not_null("artifacts", "digest"))?);
        if digest.len() != 64 || !digest.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(Error::new(CHECK_VIOLATION, "an artifact's digest is the hex SHA-256 of its content")
                .detail(format!("\"{}\" is not 64 lower-case hex digits.", String::from_utf8_lossy(&digest[..digest.len().min(80)])))
                .hint("Compute it in the database with pg_labels.digest(content).")
                .constraint("artifacts_digest_check")
                .table("pg_labels", "artifacts"));
        }
        let given = match row.get(c_labels) {
            Some(d) => datum_labelset(d)?,
            None => LabelSet::EMPTY,
        };
        // Serialized with the run's steps: the artifact carries every label that had entered
        // the run when it was made.
        let run = heap::lock_run(row.namespace(), run_id)?.ok_or_else(|| {
            Error::new(FOREIGN_KEY_VIOLATION, format!("run {} does not exist", uuid_text(run_id)))
                .detail("An artifact is made by a run of pg_labels.runs (its origin_run).")
                .constraint("artifacts_origin_run_fkey")
                .table("pg_labels", "artifacts")
        })?;
        let labels = given.union(LabelSet::from_canonical(&run.labels));
        Ok(row.modified(&[
            (c_labels, Some(ret_labelset(&labels)?)),
            (c_actor, Some(spi::text_datum(&current_user_name())?)),
        ]))
    }

    /// BEFORE INSERT FOR EACH ROW on pg_labels.shares.
    fn pgl_shares_insert(fc) {
        let row = Row::of(fc, "pg_labels.shares_insert()")?;
        if !row.is_before_row() || row.op() != pg_sys::TRIGGER_EVENT_INSERT {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.shares_insert() must fire BEFORE INSERT FOR EACH ROW"));
        }
        let [c_artifact, c_to_scope, c_to_run, c_crossing, c_actor] = SHARE_COLUMNS.of(row.relid(), row.desc)?;
        let owner = row.owner();
        let artifact_id = row.get(c_artifact).ok_or_else(|| not_null("shares", "artifact_id"))?;
        let art = artifact(owner, artifact_id)?
            .ok_or_else(|| no_artifact(&uuid_text(artifact_id), "shares", "shares_artifact_id_fkey"))?;

        // To one run: judged by that run's scope, which the share records.
        let given_scope = row.get(c_to_scope).map(|d| datum_scope(d)).transpose()?;
        let (target, filled) = match row.get(c_to_run) {
            Some(run_id) => {
                let run_scope = as_owner(owner, || with_spi(|| {
                    if RUN_SCOPE.execute(&[pg_sys::UUIDOID], &[Some(run_id)], true, 1)? == 0 {
                        return Ok(None);
                    }
                    Ok(Some(datum_scope(result_datum(0, 1).ok_or_else(|| Error::corrupt("scope"))?)?.to_vec()))
                }))?
                .ok_or_else(|| {
                    Error::new(FOREIGN_KEY_VIOLATION, format!("run {} does not exist", uuid_text(run_id)))
                        .constraint("shares_to_run_fkey")
                        .table("pg_labels", "shares")
                })?;
                if let Some(g) = given_scope {
                    if g != run_scope.as_slice() {
                        return Err(Error::new(CHECK_VIOLATION, format!(
                            "a share to run {} is a share to its scope {}, not {}",
                            uuid_text(run_id), scope::to_text(&run_scope), scope::to_text(g)))
                            .hint("Leave to_scope NULL when sharing with one run: it is filled with the run's scope.")
                            .constraint("shares_to_run_check")
                            .table("pg_labels", "shares"));
                    }
                }
                (run_scope, given_scope.is_none())
            }
            None => (given_scope.ok_or_else(|| not_null("shares", "to_scope"))?.to_vec(), false),
        };

        // The barrier: what the target scope cannot carry needs one active crossing.
        let labels = LabelSet::from_canonical(&art.labels);
        let escaping = labels.escaping(&target);
        let named = row.get(c_crossing).map(|d| d.value() as i64);
        let used = if escaping.is_empty() {
            None
        } else {
            let active = active_into(owner, &target)?;
            let candidates: Vec<_> = crossing::views(&active)
                .into_iter()
                .filter(|c| named.is_none_or(|n| n == c.id))
                .collect();
            match cover_all(LabelSet::from_canonical(&escaping), &target, &candidates) {
                Some(id) => Some(id),
                None => {
                    return Err(refusal::share_refused(
                        &uuid_text(artifact_id),
                        &uuid_string(&art.origin_run),
                        &target,
                        row.get(c_to_run).map(|d| uuid_text(d)).as_deref(),
                        &escaping,
                        named,
                    ))
                }
            }
        };

        let mut changes = vec![
            (c_crossing, used.map(Datum::from)),
            (c_actor, Some(spi::text_datum(&current_user_name())?)),
        ];
        if filled {
            changes.push((c_to_scope, Some(crate::fmgr::ret_scope(&target)?)));
        }
        Ok(row.modified(&changes))
    }
}

/// What a `context_read` step is filled with.
pub struct Read {
    /// The step's labels with the artifact's.
    pub labels: Vec<u8>,
    pub share: i64,
    pub crossings: Vec<i64>,
    pub origin_run: Uuid,
    pub digest: String,
}

/// Judge a `context_read` of `artifact_id` by run `run_id` (in `run_scope`, locked by the
/// caller), whose step claims `claimed_origin` and `claimed_digest` and carries `step_labels`.
pub unsafe fn read(
    owner: Oid,
    run_id: Datum,
    run_scope: &[u8],
    artifact_id: Datum,
    claimed_origin: Option<Datum>,
    claimed_digest: Option<Datum>,
    step_labels: LabelSet<'_>,
) -> Result<Read> {
    unsafe {
        let (run, art_text) = (uuid_text(run_id), uuid_text(artifact_id));
        let art = artifact(owner, artifact_id)?
            .ok_or_else(|| no_artifact(&art_text, "steps", "steps_artifact_id_fkey"))?;

        // what the step says it read must be what the artifact is
        let mismatch = |what: &str, claimed: String, recorded: String| {
            Error::new(CHECK_VIOLATION, format!("context_read: the step's {what} is not artifact {art_text}'s"))
                .detail(format!("The step names {what} {claimed}; artifact {art_text} records {recorded}."))
                .hint("Leave origin_run and digest NULL: they are filled from the artifact. A different digest means different content.")
                .constraint("steps_context_read_check")
                .table("pg_labels", "steps")
        };
        if let Some(o) = claimed_origin {
            if datum_uuid(o) != art.origin_run {
                return Err(mismatch(
                    "origin_run",
                    uuid_text(o),
                    uuid_string(&art.origin_run),
                ));
            }
        }
        if let Some(d) = claimed_digest {
            let claimed = datum_text(d);
            if claimed != art.digest {
                return Err(mismatch("digest", claimed, art.digest));
            }
        }

        // a share must offer it to this run, or to a scope reaching the run's
        let this_run = datum_uuid(run_id);
        let share = as_owner(owner, || {
            with_spi(|| {
                let n = SHARES_OF.execute(&[pg_sys::UUIDOID], &[Some(artifact_id)], true, 0)?;
                for i in 0..n {
                    let covers = match result_datum(i, 3) {
                        Some(to_run) => datum_uuid(to_run) == this_run,
                        None => {
                            let to = datum_scope(
                                result_datum(i, 2).ok_or_else(|| Error::corrupt("scope"))?,
                            )?;
                            scope::reaches(to, run_scope)
                        }
                    };
                    if covers {
                        return Ok(result_datum(i, 1).map(|d| d.value() as i64));
                    }
                }
                Ok(None)
            })
        })?
        .ok_or_else(|| refusal::not_shared(&run, run_scope, &art_text))?;

        // the run's scope must carry what it reads, or active crossings into it cover the rest
        let labels = step_labels.union(LabelSet::from_canonical(&art.labels));
        let escaping = LabelSet::from_canonical(&labels).escaping(run_scope);
        let crossings = if escaping.is_empty() {
            Vec::new()
        } else {
            let active = active_into(owner, run_scope)?;
            cover_each(
                LabelSet::from_canonical(&escaping),
                run_scope,
                &crossing::views(&active),
            )
            .map_err(|uncovered| refusal::read_refused(&run, run_scope, &art_text, &uncovered))?
        };
        Ok(Read {
            labels,
            share,
            crossings,
            origin_run: art.origin_run,
            digest: art.digest,
        })
    }
}
