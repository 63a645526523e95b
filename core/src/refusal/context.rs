//! The refusals about context: artifacts, shares and reads a run's scope cannot carry, and
//! crossings recorded or revoked other than through their functions.

use super::{text, Refusal, SHARE_HINT};
use crate::rules::Rule;
use crate::scope;
use crate::sqlstate;

// ------------------------------------------------------------------------------------------
// Artifacts, shares, reads
// ------------------------------------------------------------------------------------------

/// An artifact digest that is not 64 lower-case hex digits.
pub fn bad_digest(digest: &[u8]) -> Refusal {
    Refusal::check(
        "artifacts_digest_check",
        "an artifact's digest is the hex SHA-256 of its content".into(),
    )
    .detail(format!(
        "\"{}\" is not 64 lower-case hex digits.",
        String::from_utf8_lossy(&digest[..digest.len().min(80)])
    ))
    .hint("Compute it in the database with pg_labels.digest(content).")
}

/// A share or read naming an artifact that does not exist.
pub fn no_artifact(artifact: &str, constraint: &'static str) -> Refusal {
    Refusal::check(constraint, format!("artifact {artifact} does not exist"))
        .detail("Shares and context reads name an artifact of pg_labels.artifacts.")
}

/// A share to one run whose to_scope is not that run's scope.
pub fn share_scope_mismatch(run: &str, run_scope: &[u8], given: &[u8]) -> Refusal {
    Refusal::check(
        "shares_to_run_check",
        format!(
            "a share to run {run} is a share to its scope {}, not {}",
            scope::to_text(run_scope),
            scope::to_text(given)
        ),
    )
    .hint("Leave to_scope NULL when sharing with one run: it is filled with the run's scope.")
}

/// On a Citus cluster, an artifact whose labels lack some its run carries (the trigger
/// checks there, where one node alone holds the run, and cannot fill them in).
pub fn artifact_below_run(run: &str, missing: &[u8]) -> Refusal {
    Refusal::check(
        "artifacts_labels_check",
        format!(
            "an artifact of run {run} carries at least what the run carries; missing {}",
            text(missing)
        ),
    )
    .hint("On a Citus cluster, give the artifact's labels: at least the run's (SELECT labels FROM pg_labels.runs WHERE id = ...).")
}

/// A share whose scope cannot carry the artifact's labels, with no crossing covering them.
pub fn share_refused(
    artifact: &str,
    origin_run: &str,
    target: &[u8],
    to_run: Option<&str>,
    escaping: &[u8],
    named_crossing: Option<i64>,
) -> Refusal {
    let t = scope::to_text(target);
    let whom = match to_run {
        Some(r) => format!("run {r} (scope {t})"),
        None => format!("scope {t}"),
    };
    let why = match named_crossing {
        Some(c) => format!("crossing {c} is not active for {t} or does not cover them"),
        None => format!("no active crossing into {t} covers them"),
    };
    Refusal::rule(
        Rule::DataBarrier,
        "shares",
        format!("data_barrier: artifact {artifact} cannot be shared with {whom}"),
    )
    .detail(format!(
        "Artifact {artifact} (from run {origin_run}) carries {}, which scope {t} cannot carry, and {why}.",
        text(escaping)
    ))
    .hint(SHARE_HINT)
}

/// A context read of an artifact that no share offers to the reading run.
pub fn not_shared(run: &str, run_scope: &[u8], artifact: &str) -> Refusal {
    let s = scope::to_text(run_scope);
    Refusal::rule(
        Rule::DataBarrier,
        "steps",
        format!("data_barrier: artifact {artifact} is not shared with run {run}"),
    )
    .detail(format!(
        "Run {run} (scope {s}) read artifact {artifact}, but no share offers it to this run or to a scope reaching {s}."
    ))
    .hint(
        "Context is passed by reference through pg_labels.shares: share the artifact with the listener's scope \
         (or the run) first; the share is judged by the barrier.",
    )
}

/// A context read bringing labels the run's scope cannot carry, with no crossing covering them.
pub fn read_refused(run: &str, run_scope: &[u8], artifact: &str, uncovered: &[u8]) -> Refusal {
    let s = scope::to_text(run_scope);
    Refusal::rule(
        Rule::DataBarrier,
        "steps",
        format!("data_barrier: run {run} cannot read artifact {artifact}: its data comes from outside scope {s}"),
    )
    .detail(format!(
        "Artifact {artifact} carries {}, which scope {s} cannot carry, and no active crossing into {s} covers it.",
        text(uncovered)
    ))
    .hint(SHARE_HINT)
}

/// A context read whose stated origin run or digest is not the artifact's. What the artifact
/// records is not said: the writer may not be allowed to read the artifact.
pub fn read_mismatch(artifact: &str, what: &str, claimed: &str) -> Refusal {
    Refusal::check(
        "steps_context_read_check",
        format!("context_read: the step's {what} is not artifact {artifact}'s"),
    )
    .detail(format!("The step names {what} {claimed}, which artifact {artifact} does not record."))
    .hint("Leave origin_run and digest NULL: they are filled from the artifact. A different digest means different content.")
}

// ------------------------------------------------------------------------------------------
// Crossings
// ------------------------------------------------------------------------------------------

/// A crossing written or changed other than by its functions.
pub fn crossing_not_through(what: &str, function: &str) -> Refusal {
    Refusal::check("crossings_guard", format!("crossings are {what} only by {function}"))
        .detail("pg_labels.crossings is the audited record of boundary-crossing authorizations.")
        .hint(format!(
            "A DBA allows a person to record and end crossings with GRANT EXECUTE ON FUNCTION \
             pg_labels.authorize_crossing(scope, scope, text, timestamptz), pg_labels.revoke_crossing(bigint, text) TO <role>; \
             {function} is the way."
        ))
}

/// A crossing whose target already reaches its source.
pub fn crossing_authorizes_nothing(from: &[u8], to: &[u8]) -> Refusal {
    Refusal::plain(
        sqlstate::INVALID_PARAMETER_VALUE,
        Some("crossings"),
        format!(
            "a crossing from {} to {} authorizes nothing",
            scope::to_text(from),
            scope::to_text(to)
        ),
    )
    .detail(format!(
        "Scope {} already reaches {}: its runs may carry that data without a crossing.",
        scope::to_text(to),
        scope::to_text(from)
    ))
}

/// A crossing from the installation's scope: it would let every label into its target.
pub fn crossing_from_installation(to: &[u8]) -> Refusal {
    Refusal::plain(
        sqlstate::INVALID_PARAMETER_VALUE,
        Some("crossings"),
        format!(
            "a crossing from * to {} would let every company's data in",
            scope::to_text(to)
        ),
    )
    .detail("A crossing names the company or area the data comes from; from * it would switch the barrier off for its target.")
    .hint("Authorize one crossing per company or area whose data may cross.")
}

/// A crossing without a reason.
pub fn crossing_without_reason() -> Refusal {
    Refusal::check("crossings_reason_check", "a crossing needs a reason".into())
        .detail("Why this data may cross is part of the record: reason must not be empty.")
}

/// A crossing that would expire before it starts.
pub fn crossing_in_the_past() -> Refusal {
    Refusal::plain(
        sqlstate::INVALID_PARAMETER_VALUE,
        Some("crossings"),
        "a crossing cannot expire in the past".into(),
    )
    .detail("expires_at must be later than now, or NULL (until revoked).")
}

/// No such crossing.
pub fn no_crossing(id: i64) -> Refusal {
    Refusal {
        constraint: Some("crossings_pkey"),
        ..Refusal::plain(
            sqlstate::FOREIGN_KEY_VIOLATION,
            Some("crossings"),
            format!("there is no crossing {id}"),
        )
    }
}

/// A crossing revoked twice.
pub fn crossing_already_revoked(id: i64, at: &str, by: &str) -> Refusal {
    Refusal::plain(
        sqlstate::NOT_IN_PREREQUISITE_STATE,
        Some("crossings"),
        format!("crossing {id} was already revoked"),
    )
    .detail(format!("Revoked at {at} by {by}."))
}
