//! The error contract of the rules: one SQLSTATE per rule, the message starting with the rule
//! name, DETAIL naming the run, its scope and the labels at issue, HINT with the operator's
//! checklist, and the rule name in the error's constraint-name field.
//!
//! The SQLSTATEs are in class 23 (integrity constraint violation), in the subclass range that
//! PostgreSQL leaves to implementations: clients that only look at the class see a refused
//! write, clients that look closer see which rule refused it.

use crate::error::{Error, SqlState};
use pg_labels_core::rules::{Rule, Verdict};
use pg_labels_core::{scope, LabelSet};

pub const DATA_BARRIER: SqlState = *b"23L01";
pub const UNTRUSTED_TO_IRREVERSIBLE: SqlState = *b"23L02";
pub const APPROVAL_REQUIRED: SqlState = *b"23L03";
pub const UNKNOWN_TOOL: SqlState = *b"23L04";
pub const SEALED: SqlState = *b"23L05";
pub use crate::error::{FOREIGN_KEY_VIOLATION, INSUFFICIENT_PRIVILEGE};

/// The seed's checklist for a blocked call.
pub const BARRIER_HINT: &str = "This is not a policy to edit and not a missing approval: the data flow crossed a boundary \
the platform is not authorized to cross. Check that the agent was published in the right company and area; \
check that the channel's conversation points at the same area as the agent; check the event binding before \
assuming the listener is wrong. Do not try to fix it by widening the query: the label has already travelled.";

fn text(body: &[u8]) -> String {
    LabelSet::from_canonical(body).to_text()
}

/// The error for a tool call refused by `verdict` (whose decision is block or ask).
pub fn tool_call(
    run: &str,
    run_scope: &[u8],
    tool: Option<&str>,
    effect: Option<&str>,
    v: &Verdict,
) -> Error {
    let scope = scope::to_text(run_scope);
    let tool = tool.unwrap_or("(none)");
    let rule = v.rule.unwrap_or(Rule::DataBarrier);
    let (state, message, detail, hint) = match rule {
        Rule::DataBarrier => (
            DATA_BARRIER,
            format!("data_barrier: run {run} carries data from outside its company or area"),
            format!(
                "Run {run} (scope {scope}) carries {}, which scope {scope} cannot carry; tool {tool} was not called.",
                text(&v.escaping)
            ),
            BARRIER_HINT.to_string(),
        ),
        Rule::UnknownTool => (
            UNKNOWN_TOOL,
            if tool == "(none)" {
                "unknown_tool: a tool call names no tool".to_string()
            } else {
                format!("unknown_tool: tool {tool} is not in the tool catalog")
            },
            if tool == "(none)" {
                format!("Run {run} (scope {scope}) recorded a tool call with no tool name.")
            } else {
                format!("Run {run} (scope {scope}) called {tool}, which pg_labels.tools does not list.")
            },
            "Add the tool to pg_labels.tools with its effect (read, reversible_write, destructive or financial) \
             before calling it: tools absent from the catalog are refused."
                .to_string(),
        ),
        Rule::UntrustedToIrreversible => {
            let effect = effect.unwrap_or("irreversible");
            (
                UNTRUSTED_TO_IRREVERSIBLE,
                format!("untrusted_to_irreversible: {effect} tool {tool} refused on untrusted data"),
                format!(
                    "Run {run} (scope {scope}) carries {}; no approval makes a {effect} call on data from outside acceptable.",
                    text(&v.origins)
                ),
                "Untrusted data (Slack, webhooks, events, tool results) must never reach a destructive or financial \
                 tool, approved or not. Run such a step where no untrusted input has entered the run."
                    .to_string(),
            )
        }
        Rule::ApprovalRequired => (
            APPROVAL_REQUIRED,
            format!("approval_required: reversible write {tool} on untrusted data needs a person's approval"),
            format!(
                "Run {run} (scope {scope}) carries {}; no unused granted approval matches tool {tool} with these arguments.",
                text(&v.origins)
            ),
            "Record the request with pg_labels.request_approval(run, tool, args) and have a person the DBA allows \
             grant it with pg_labels.decide_approval(request, true): one approval lets exactly one identical call through."
                .to_string(),
        ),
    };
    Error::new(state, message)
        .detail(detail)
        .hint(hint)
        .constraint(rule.name())
        .table("pg_labels", "steps")
}

/// A run that is not even opened: its initial labels escape its scope (`escaping`), or it is
/// opened for a listener bound in another scope (`listener`: its id and scope).
pub fn run_not_opened(
    run: &str,
    run_scope: &[u8],
    escaping: &[u8],
    listener: Option<(i64, &[u8])>,
) -> Error {
    let scope = scope::to_text(run_scope);
    let detail = match listener {
        Some((id, ls)) => format!(
            "Run {run} (scope {scope}) was opened for listener {id}, bound in scope {}: a run opened through a listener has the listener's scope.",
            scope::to_text(ls),
        ),
        None => format!(
            "Run {run} (scope {scope}) was opened with {}, which scope {scope} cannot carry.",
            text(escaping)
        ),
    };
    let message = match listener {
        Some((_, ls)) => format!(
            "data_barrier: run {run} is not opened: its listener is bound in scope {}, not {scope}",
            scope::to_text(ls)
        ),
        None => format!(
            "data_barrier: run {run} is not opened: its data comes from outside scope {scope}"
        ),
    };
    Error::new(DATA_BARRIER, message)
        .detail(detail)
        .hint(BARRIER_HINT)
        .constraint(Rule::DataBarrier.name())
        .table("pg_labels", "runs")
}

/// The seed's rule for publication.
pub const PUBLICATION_HINT: &str = "If data from an untrusted source can reach a destructive or financial tool, the version is \
not published: such actions do not become safe by being approved after the model has already proposed them. Let the \
irreversible step read only trusted inputs (source:agent, or outputs of tools with trusted_output = true on trusted \
inputs), or make it a reversible write, which a person approves on the concrete call.";

/// A run opened for an agent version in another scope than the version's.
pub fn run_not_published(
    run: &str,
    run_scope: &[u8],
    agent: &str,
    version: i32,
    version_scope: &[u8],
) -> Error {
    let (s, v) = (scope::to_text(run_scope), scope::to_text(version_scope));
    Error::new(
        DATA_BARRIER,
        format!("data_barrier: run {run} is not opened: agent {agent} version {version} is published in scope {v}, not {s}"),
    )
    .detail(format!(
        "Run {run} (scope {s}) was opened for agent {agent} version {version}, published in scope {v}: a run of a published version has the version's scope."
    ))
    .hint(BARRIER_HINT)
    .constraint(Rule::DataBarrier.name())
    .table("pg_labels", "runs")
}

/// The seed's rule for context: where a share or read is refused.
pub const SHARE_HINT: &str = "A listener may only receive context when its scope can carry that context's labels, or when \
an explicit boundary-crossing authorization is recorded. If this data is meant to cross, a person the DBA allows records \
it with pg_labels.authorize_crossing(from_scope, to_scope, reason, expires_at). Do not widen the listener's scope or \
strip labels: the labels travel with the data.";

/// A share whose scope cannot carry the artifact's labels, with no crossing covering them.
pub fn share_refused(
    artifact: &str,
    origin_run: &str,
    target: &[u8],
    to_run: Option<&str>,
    escaping: &[u8],
    named_crossing: Option<i64>,
) -> Error {
    let t = scope::to_text(target);
    let whom = match to_run {
        Some(r) => format!("run {r} (scope {t})"),
        None => format!("scope {t}"),
    };
    let why = match named_crossing {
        Some(c) => format!("crossing {c} is not active for {t} or does not cover them"),
        None => format!("no active crossing into {t} covers them"),
    };
    Error::new(DATA_BARRIER, format!("data_barrier: artifact {artifact} cannot be shared with {whom}"))
        .detail(format!(
            "Artifact {artifact} (from run {origin_run}) carries {}, which scope {t} cannot carry, and {why}.",
            text(escaping)
        ))
        .hint(SHARE_HINT)
        .constraint(Rule::DataBarrier.name())
        .table("pg_labels", "shares")
}

/// A context read of an artifact that no share offers to the reading run.
pub fn not_shared(run: &str, run_scope: &[u8], artifact: &str) -> Error {
    let s = scope::to_text(run_scope);
    Error::new(DATA_BARRIER, format!("data_barrier: artifact {artifact} is not shared with run {run}"))
        .detail(format!(
            "Run {run} (scope {s}) read artifact {artifact}, but no share offers it to this run or to a scope reaching {s}."
        ))
        .hint("Context is passed by reference through pg_labels.shares: share the artifact with the listener's scope \
               (or the run) first; the share is judged by the barrier.")
        .constraint(Rule::DataBarrier.name())
        .table("pg_labels", "steps")
}

/// A context read bringing labels the run's scope cannot carry, with no crossing covering them.
pub fn read_refused(run: &str, run_scope: &[u8], artifact: &str, uncovered: &[u8]) -> Error {
    let s = scope::to_text(run_scope);
    Error::new(
        DATA_BARRIER,
        format!("data_barrier: run {run} cannot read artifact {artifact}: its data comes from outside scope {s}"),
    )
    .detail(format!(
        "Artifact {artifact} carries {}, which scope {s} cannot carry, and no active crossing into {s} covers it.",
        text(uncovered)
    ))
    .hint(SHARE_HINT)
    .constraint(Rule::DataBarrier.name())
    .table("pg_labels", "steps")
}

/// A change to the sealed trail.
pub fn sealed(table: &str, message: String, detail: String) -> Error {
    Error::new(SEALED, format!("sealed: {message}"))
        .detail(detail)
        .hint("The trail is append-only and a run's scope is sealed when it is opened. Retention goes through \
               pg_labels.purge(older_than), which the DBA grants.")
        .constraint("sealed")
        .table("pg_labels", table)
}
