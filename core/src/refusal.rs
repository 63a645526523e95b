//! What every refusal says: the one table of rules and checks, and the constructors that build
//! each refusal from the decision that made it.
//!
//! The error contract: one SQLSTATE per rule ([`RULES`]), the message starting with the rule
//! name, DETAIL naming the run, its scope and the labels at issue, HINT with the operator's
//! checklist, and the rule name in the error's constraint-name field. The checks that are not
//! rules ([`CHECKS`]) use PostgreSQL's own SQLSTATEs and name the constraint they stand for.
//! The extension turns a [`Refusal`] into a PostgreSQL `ERROR` unchanged; the error
//! table is checked against these two tables by a test.
//!
//! The constructors, by concern: a run's life in `runs` (tool calls, runs, steps, approvals),
//! `context` (artifacts, shares, reads, crossings), `catalog` (dropping the extension,
//! retention, the sealed tables, publication, grants); all re-exported here.

use crate::labelset::LabelSet;
use crate::rules::Rule;
use crate::sqlstate::{self, SqlState};

mod catalog;
mod context;
mod runs;
#[cfg(test)]
mod tests;

pub use catalog::{
    act_not_granted, agent_not_granted, crossing_sealed, declaration_invalid,
    declaration_unknown_tool, drop_refused, publication_refused, purge_cutoff_infinite,
    purge_removes_present, purge_without_cutoff, scope_not_granted, sealed, version_not_positive,
    version_sealed,
};
pub use context::{
    artifact_below_run, bad_digest, crossing_already_revoked, crossing_authorizes_nothing,
    crossing_from_installation, crossing_in_the_past, crossing_not_through,
    crossing_without_reason, no_artifact, no_crossing, not_shared, read_mismatch, read_refused,
    share_refused, share_scope_mismatch,
};
pub use runs::{
    already_decided, approver_denied, decision_not_through_function, listener_agent, no_listener,
    no_request, no_run, no_version, not_utf8, read_without_artifact, request_expired,
    run_in_installation, run_not_opened, run_not_published, step_before_run, step_shape, tool_call,
    written_by_database,
};

/// Most labels a message lists before saying how many more there are.
pub const LIST_LIMIT: usize = 20;

/// A refusal on its way to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub sqlstate: SqlState,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// The constraint-name field: the rule's name, or the constraint a check stands for.
    pub constraint: Option<&'static str>,
    /// The table of schema `pg_labels` the refusal is about.
    pub table: Option<&'static str>,
    /// The labels the refusal is about, for its record (`pg_labels.refused_writes`), when the
    /// decision names them: a refused tool call's labels no crossing covers, or else the
    /// run's origins (a labelset body). Not part of the error the client sees. (Boxed: a
    /// refusal is the `Err` of every decision, kept small.)
    pub labels: Option<Box<Vec<u8>>>,
}

/// A rule of the seed: its name, its SQLSTATE, and when it refuses.
pub struct RuleSpec {
    pub rule: Rule,
    pub sqlstate: SqlState,
    pub when: &'static str,
}

/// The rules, in the order they are checked.
pub const RULES: [RuleSpec; 5] = [
    RuleSpec {
        rule: Rule::DataBarrier,
        sqlstate: sqlstate::DATA_BARRIER,
        when: "a run, share or read would carry labels its scope cannot carry, and no active crossing covers them",
    },
    RuleSpec {
        rule: Rule::UntrustedToIrreversible,
        sqlstate: sqlstate::UNTRUSTED_TO_IRREVERSIBLE,
        when: "untrusted data would reach a destructive or financial tool",
    },
    RuleSpec {
        rule: Rule::ApprovalRequired,
        sqlstate: sqlstate::APPROVAL_REQUIRED,
        when: "a reversible write on untrusted data has no unused granted approval",
    },
    RuleSpec {
        rule: Rule::UnknownTool,
        sqlstate: sqlstate::UNKNOWN_TOOL,
        when: "a tool is absent from the catalog",
    },
    RuleSpec {
        rule: Rule::Sealed,
        sqlstate: sqlstate::SEALED,
        when: "the trail, a run's scope or a published version would change",
    },
];

/// A check that is not one of the rules: the constraint it stands for and its SQLSTATE.
pub struct CheckSpec {
    pub constraint: &'static str,
    pub sqlstate: SqlState,
    pub table: &'static str,
}

/// The checks, by the constraint name each refusal carries.
pub const CHECKS: [CheckSpec; 24] = [
    check(
        "steps_run_id_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "steps",
    ),
    check(
        "steps_artifact_id_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "steps",
    ),
    check(
        "artifacts_origin_run_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "artifacts",
    ),
    check(
        "shares_artifact_id_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "shares",
    ),
    check(
        "shares_to_run_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "shares",
    ),
    check(
        "runs_listener_id_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "runs",
    ),
    check(
        "runs_agent_version_fkey",
        sqlstate::FOREIGN_KEY_VIOLATION,
        "runs",
    ),
    check(
        "steps_context_read_check",
        sqlstate::CHECK_VIOLATION,
        "steps",
    ),
    check("steps_shape_check", sqlstate::CHECK_VIOLATION, "steps"),
    check(
        "steps_written_by_database",
        sqlstate::GENERATED_ALWAYS,
        "steps",
    ),
    check(
        "runs_written_by_database",
        sqlstate::GENERATED_ALWAYS,
        "runs",
    ),
    check(
        "listeners_written_by_database",
        sqlstate::GENERATED_ALWAYS,
        "listeners",
    ),
    check(
        "artifacts_digest_check",
        sqlstate::CHECK_VIOLATION,
        "artifacts",
    ),
    check("shares_to_run_check", sqlstate::CHECK_VIOLATION, "shares"),
    check(
        "artifacts_labels_check",
        sqlstate::CHECK_VIOLATION,
        "artifacts",
    ),
    check("runs_listener_check", sqlstate::CHECK_VIOLATION, "runs"),
    check("runs_scope_check", sqlstate::CHECK_VIOLATION, "runs"),
    check(
        "agent_versions_version_check",
        sqlstate::CHECK_VIOLATION,
        "agent_versions",
    ),
    check(
        "crossings_reason_check",
        sqlstate::CHECK_VIOLATION,
        "crossings",
    ),
    check(
        "crossings_guard",
        sqlstate::INSUFFICIENT_PRIVILEGE,
        "crossings",
    ),
    check("steps_one_decision", sqlstate::UNIQUE_VIOLATION, "steps"),
    check(
        "pg_labels_trail",
        sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
        "steps",
    ),
    check(
        "text_not_utf8",
        sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
        "steps",
    ),
    check(
        "scope_not_granted",
        sqlstate::INSUFFICIENT_PRIVILEGE,
        "grants",
    ),
];

const fn check(constraint: &'static str, sqlstate: SqlState, table: &'static str) -> CheckSpec {
    CheckSpec {
        constraint,
        sqlstate,
        table,
    }
}

/// The SQLSTATE of a rule.
pub fn rule_state(rule: Rule) -> SqlState {
    match rule {
        Rule::DataBarrier => RULES[0].sqlstate,
        Rule::UntrustedToIrreversible => RULES[1].sqlstate,
        Rule::ApprovalRequired => RULES[2].sqlstate,
        Rule::UnknownTool => RULES[3].sqlstate,
        Rule::Sealed => RULES[4].sqlstate,
    }
}

/// The SQLSTATE and table of a check, by its constraint name.
fn check_spec(constraint: &'static str) -> &'static CheckSpec {
    CHECKS
        .iter()
        .find(|c| c.constraint == constraint)
        .unwrap_or(&CHECKS[0])
}

impl Refusal {
    /// A refusal by one of the rules.
    fn rule(rule: Rule, table: &'static str, message: String) -> Refusal {
        Refusal {
            sqlstate: rule_state(rule),
            message,
            detail: None,
            hint: None,
            constraint: Some(rule.name()),
            table: Some(table),
            labels: None,
        }
    }

    /// A refusal by one of the checks (its SQLSTATE and table from [`CHECKS`]).
    fn check(constraint: &'static str, message: String) -> Refusal {
        let spec = check_spec(constraint);
        Refusal {
            sqlstate: spec.sqlstate,
            message,
            detail: None,
            hint: None,
            constraint: Some(constraint),
            table: Some(spec.table),
            labels: None,
        }
    }

    /// A refusal with a standard SQLSTATE and no constraint.
    fn plain(sqlstate: SqlState, table: Option<&'static str>, message: String) -> Refusal {
        Refusal {
            sqlstate,
            message,
            detail: None,
            hint: None,
            constraint: None,
            table,
            labels: None,
        }
    }

    fn detail(mut self, d: impl Into<String>) -> Refusal {
        self.detail = Some(d.into());
        self
    }

    fn hint(mut self, h: impl Into<String>) -> Refusal {
        self.hint = Some(h.into());
        self
    }

    fn with_state(mut self, s: SqlState) -> Refusal {
        self.sqlstate = s;
        self
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn text(body: &[u8]) -> String {
    LabelSet::from_canonical(body).to_text_capped(LIST_LIMIT)
}

/// The seed's checklist for a blocked call.
pub const BARRIER_HINT: &str = "This is not a policy to edit and not a missing approval: the data flow crossed a boundary \
the platform is not authorized to cross. Check that the agent was published in the right company and area; \
check that the channel's conversation points at the same area as the agent; check the event binding before \
assuming the listener is wrong. Do not try to fix it by widening the query: the label has already travelled.";

/// The seed's rule for publication.
pub const PUBLICATION_HINT: &str = "If data from an untrusted source can reach a destructive or financial tool, the version is \
not published: such actions do not become safe by being approved after the model has already proposed them. Let the \
irreversible step read only trusted inputs (source:agent, or outputs of tools with trusted_output = true on trusted \
inputs), or make it a reversible write, which a person approves on the concrete call.";

/// The seed's rule for context: where a share or read is refused.
pub const SHARE_HINT: &str = "A listener may only receive context when its scope can carry that context's labels, or when \
an explicit boundary-crossing authorization is recorded. If this data is meant to cross, a person the DBA allows records \
it with pg_labels.authorize_crossing(from_scope, to_scope, reason, expires_at). Do not widen the listener's scope or \
strip labels: the labels travel with the data.";

const SEALED_HINT: &str = "The trail is append-only and a run's scope is sealed when it is opened. Retention goes through \
pg_labels.purge(older_than), which the DBA grants.";

/// Where crossings are sealed.
pub const CROSSINGS_SEALED_HINT: &str =
    "Crossings are the audited record of who let which data cross, and why: \
they are ended with pg_labels.revoke_crossing(crossing, reason), never edited or deleted.";

const DECIDE_HINT: &str = "The role that writes the platform's steps cannot approve its own calls; a DBA allows a person to \
decide with GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO <role>.";
