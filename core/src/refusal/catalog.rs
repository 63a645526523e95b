//! The refusals of the catalog and its operators: dropping the extension, retention's purge, the
//! sealed tables, publishing an agent version, and the grants of acts, agents and scopes.

use super::{Refusal, CROSSINGS_SEALED_HINT, PUBLICATION_HINT, SEALED_HINT};
use crate::rules::Rule;
use crate::scope;
use crate::sqlstate;

// ------------------------------------------------------------------------------------------
// Dropping the extension
// ------------------------------------------------------------------------------------------

/// `DROP EXTENSION pg_labels` while the trail holds rows: (table, rows) of each that does.
pub fn drop_refused(held: &[(&str, i64)]) -> Refusal {
    let what: Vec<String> = held
        .iter()
        .map(|(t, n)| format!("{n} in pg_labels.{t}"))
        .collect();
    Refusal::check(
        "pg_labels_trail",
        "cannot drop extension pg_labels while the trail holds rows".into(),
    )
    .detail(format!("The trail holds {}.", what.join(", ")))
    .hint(
        "Dropping the extension would destroy the trail (with CASCADE as well). To remove pg_labels on purpose, \
         back the database up (pg_dump), then as a superuser: BEGIN; SET LOCAL session_replication_role = replica; \
         DROP EXTENSION pg_labels CASCADE; COMMIT; (see docs/operations.md, Removing the extension).",
    )
}

// ------------------------------------------------------------------------------------------
// Retention
// ------------------------------------------------------------------------------------------

/// `purge(NULL)`.
pub fn purge_without_cutoff() -> Refusal {
    Refusal::plain(
        sqlstate::NULL_VALUE_NOT_ALLOWED,
        Some("steps"),
        "purge needs a cutoff: older_than is NULL".into(),
    )
    .hint("Name the time before which runs and months of the trail go, e.g. pg_labels.purge(now() - interval '1 year').")
}

/// `purge('infinity')` or `purge('-infinity')`.
pub fn purge_cutoff_infinite(which: &str, latest: &str) -> Refusal {
    Refusal::plain(
        sqlstate::INVALID_PARAMETER_VALUE,
        Some("steps"),
        format!("purge needs a finite cutoff, not {which}"),
    )
    .detail(format!("The latest cutoff accepted now is {latest}."))
    .hint("Name the time before which runs and months of the trail go, e.g. pg_labels.purge(now() - interval '1 year').")
}

/// A cutoff that would remove the present: later than the start of the kept window.
pub fn purge_removes_present(cutoff: &str, latest: &str, months: i64) -> Refusal {
    Refusal::plain(
        sqlstate::INVALID_PARAMETER_VALUE,
        Some("steps"),
        format!("purge would remove the present: cutoff {cutoff} is later than {latest}"),
    )
    .detail(format!(
        "Retention keeps at least the current month and the {months} before it (UTC): the latest cutoff accepted now is {latest}."
    ))
    .hint("Retention removes the past only; a run that is still going keeps its steps.")
}

// ------------------------------------------------------------------------------------------
// Sealed
// ------------------------------------------------------------------------------------------

/// A change to the sealed trail.
pub fn sealed(table: &'static str, message: String, detail: String) -> Refusal {
    Refusal::rule(Rule::Sealed, table, format!("sealed: {message}"))
        .detail(detail)
        .hint(SEALED_HINT)
}

/// A change to a crossing (sealed, with the crossings' hint).
pub fn crossing_sealed(message: String, detail: String) -> Refusal {
    sealed("crossings", message, detail).hint(CROSSINGS_SEALED_HINT)
}

/// A change to a published agent version.
pub fn version_sealed(message: String, detail: String) -> Refusal {
    sealed("agent_versions", message, detail).hint(
        "Publish a new version (the same agent, a higher version); runs keep naming the version they were opened for.",
    )
}

// ------------------------------------------------------------------------------------------
// Publication
// ------------------------------------------------------------------------------------------

/// A version whose number is not positive.
pub fn version_not_positive(agent: &str, version: i32) -> Refusal {
    Refusal::check(
        "agent_versions_version_check",
        format!("version {version} of agent {agent} is not positive"),
    )
    .detail("Versions are numbered from 1.")
}

/// A version whose declared steps are malformed (`problem` says where and what).
pub fn declaration_invalid(who: &str, problem: &str, format_hint: &str) -> Refusal {
    Refusal::plain(
        sqlstate::INVALID_PARAMETER_VALUE,
        Some("agent_versions"),
        format!("{who} is not published: its declared steps are invalid"),
    )
    .detail(format!("In the declared steps, {problem}."))
    .hint(format_hint)
}

/// A version calling a tool absent from the catalog.
pub fn declaration_unknown_tool(who: &str, problem: &str) -> Refusal {
    Refusal::rule(
        Rule::UnknownTool,
        "agent_versions",
        format!("unknown_tool: {who} is not published: {problem}"),
    )
    .detail("Publication checks every declared step against pg_labels.tools: a tool absent from it is refused (fail closed).")
    .hint("Add the tool to pg_labels.tools with its effect before publishing a version that calls it.")
}

/// A version letting untrusted data reach an irreversible tool: the first path, and every
/// irreversible step reached (already described).
pub fn publication_refused(who: &str, first: &str, reached: &[String], more: usize) -> Refusal {
    let mut detail: Vec<String> = reached
        .iter()
        .map(|r| format!("Untrusted data reaches {r}."))
        .collect();
    if more > 0 {
        detail.push(format!("And {more} more."));
    }
    Refusal::rule(
        Rule::UntrustedToIrreversible,
        "agent_versions",
        format!(
            "untrusted_to_irreversible: {who} is not published: untrusted data reaches {first}"
        ),
    )
    .detail(detail.join(" "))
    .hint(PUBLICATION_HINT)
}

// ------------------------------------------------------------------------------------------
// Scopes
// ------------------------------------------------------------------------------------------

/// `enter_scope()` of a scope no grant of the role reaches.
/// A role acting (writing, deciding, authorizing) in a scope no grant of its reaches. `act`
/// says what it tried, e.g. "open a run", "publish a version", "authorize a crossing".
pub fn act_not_granted(role: &str, act: &str, target: &[u8]) -> Refusal {
    let text = scope::to_text(target);
    Refusal::check(
        "scope_not_granted",
        format!("permission denied: role {role} may not {act} in scope {text}"),
    )
    .detail(format!("No grant in pg_labels.grants gives role {role}, or a role it is a member of, a scope reaching {text}: a role acts only where its grants reach."))
    .hint(format!("A DBA grants it, if it is to act there: INSERT INTO pg_labels.grants (role, scope) VALUES ('{}', '{text}');", role.replace('\'', "''")))
}

/// A writer publishing a version of an agent published where its grants do not reach.
pub fn agent_not_granted(role: &str, agent: &str) -> Refusal {
    Refusal::check(
        "scope_not_granted",
        format!("permission denied: role {role} may not publish a version of agent {agent}"),
    )
    .detail(format!("Agent {agent} has versions published in a scope no grant of role {role} reaches: an agent's versions are published by the roles of its own company."))
}

pub fn scope_not_granted(role: &str, target: &[u8]) -> Refusal {
    let text = scope::to_text(target);
    Refusal::plain(
        sqlstate::INSUFFICIENT_PRIVILEGE,
        Some("grants"),
        format!("permission denied to enter scope {text}"),
    )
    .detail(format!("No grant in pg_labels.grants gives role {role}, or a role it is a member of, a scope reaching {text}."))
    .hint(format!("A DBA grants it: INSERT INTO pg_labels.grants (role, scope) VALUES ('{}', '{text}');", role.replace('\'', "''")))
}
