//! The refusals of a run's life: a tool call the rules refuse, a run that cannot open, a step
//! of the wrong shape or written where the database writes, an approval decided by whom it may not.

use super::{article, text, Refusal, BARRIER_HINT, DECIDE_HINT};
use crate::rules::{Effect, Rule};
use crate::scope;
use crate::sqlstate;

// ------------------------------------------------------------------------------------------
// Tool calls
// ------------------------------------------------------------------------------------------

/// A tool call refused by the rules: `rule` decided it; `escaping` is what the run's scope
/// cannot carry (data_barrier), `origins` the untrusted origins it carries. Its record keeps
/// `escaping`, or `origins` when nothing escapes.
pub fn tool_call(
    run: &str,
    run_scope: &[u8],
    tool: Option<&str>,
    effect: Option<Effect>,
    rule: Rule,
    escaping: &[u8],
    origins: &[u8],
) -> Refusal {
    let scope = scope::to_text(run_scope);
    let tool = tool.unwrap_or("(none)");
    let refusal = match rule {
        Rule::DataBarrier | Rule::Sealed => Refusal::rule(
            Rule::DataBarrier,
            "steps",
            format!("data_barrier: run {run} carries data from outside its company or area"),
        )
        .detail(format!(
            "Run {run} (scope {scope}) carries {}, which scope {scope} cannot carry; tool {tool} was not called.",
            text(escaping)
        ))
        .hint(BARRIER_HINT),
        Rule::UnknownTool => Refusal::rule(
            Rule::UnknownTool,
            "steps",
            if tool == "(none)" {
                "unknown_tool: a tool call names no tool".to_string()
            } else {
                format!("unknown_tool: tool {tool} is not in the tool catalog")
            },
        )
        .detail(if tool == "(none)" {
            format!("Run {run} (scope {scope}) recorded a tool call with no tool name.")
        } else {
            format!("Run {run} (scope {scope}) called {tool}, which pg_labels.tools does not list.")
        })
        .hint(
            "Add the tool to pg_labels.tools with its effect (read, reversible_write, destructive or financial) \
             before calling it: tools absent from the catalog are refused.",
        ),
        Rule::UntrustedToIrreversible => {
            let effect = effect.map(Effect::name).unwrap_or("irreversible");
            Refusal::rule(
                rule,
                "steps",
                format!("untrusted_to_irreversible: {effect} tool {tool} refused on untrusted data"),
            )
            .detail(format!(
                "Run {run} (scope {scope}) carries {}; no approval makes a {effect} call on data from outside acceptable.",
                text(origins)
            ))
            .hint(
                "Untrusted data (Slack, webhooks, events, tool results) must never reach a destructive or financial \
                 tool, approved or not. Run such a step where no untrusted input has entered the run.",
            )
        }
        Rule::ApprovalRequired => Refusal::rule(
            rule,
            "steps",
            format!("approval_required: reversible write {tool} on untrusted data needs a person's approval"),
        )
        .detail(format!(
            "Run {run} (scope {scope}) carries {}; no unused granted approval matches tool {tool} with these arguments.",
            text(origins)
        ))
        .hint(
            "Record the request with pg_labels.request_approval(run, tool, args) and have a person the DBA allows \
             grant it with pg_labels.decide_approval(request, true): one approval lets exactly one identical call through.",
        ),
    };
    Refusal {
        labels: Some(Box::new(
            if escaping.is_empty() {
                origins
            } else {
                escaping
            }
            .to_vec(),
        )),
        ..refusal
    }
}

// ------------------------------------------------------------------------------------------
// Runs
// ------------------------------------------------------------------------------------------

/// A run that is not even opened: its initial labels escape its scope (`escaping`), or it is
/// opened for a listener bound in another scope (`listener`: its id and scope).
pub fn run_not_opened(
    run: &str,
    run_scope: &[u8],
    escaping: &[u8],
    listener: Option<(i64, &[u8])>,
) -> Refusal {
    let scope = scope::to_text(run_scope);
    let (message, detail) = match listener {
        Some((id, ls)) => (
            format!(
                "data_barrier: run {run} is not opened: its listener is bound in scope {}, not {scope}",
                scope::to_text(ls)
            ),
            format!(
                "Run {run} (scope {scope}) was opened for listener {id}, bound in scope {}: a run opened through a listener has the listener's scope.",
                scope::to_text(ls),
            ),
        ),
        None => (
            format!("data_barrier: run {run} is not opened: its data comes from outside scope {scope}"),
            format!(
                "Run {run} (scope {scope}) was opened with {}, which scope {scope} cannot carry.",
                text(escaping)
            ),
        ),
    };
    Refusal::rule(Rule::DataBarrier, "runs", message)
        .detail(detail)
        .hint(BARRIER_HINT)
}

/// A run opened for an agent version in another scope than the version's.
pub fn run_not_published(
    run: &str,
    run_scope: &[u8],
    agent: &str,
    version: i32,
    version_scope: &[u8],
) -> Refusal {
    let (s, v) = (scope::to_text(run_scope), scope::to_text(version_scope));
    Refusal::rule(
        Rule::DataBarrier,
        "runs",
        format!("data_barrier: run {run} is not opened: agent {agent} version {version} is published in scope {v}, not {s}"),
    )
    .detail(format!(
        "Run {run} (scope {s}) was opened for agent {agent} version {version}, published in scope {v}: a run of a published version has the version's scope."
    ))
    .hint(BARRIER_HINT)
}

/// A run opened in the installation's scope.
pub fn run_in_installation(run: &str) -> Refusal {
    Refusal::check(
        "runs_scope_check",
        format!("run {run} is not opened: a run is opened in a company or an area, not in the installation (*)"),
    )
    .detail("A run in scope * could carry every company's data: the barrier could never refuse anything.")
    .hint("Open the run in the company or area of the agent; data of the whole installation is carried by nothing.")
}

/// A run opened for a listener bound to another agent.
pub fn listener_agent(run: &str, listener: i64, bound: &str, given: &str) -> Refusal {
    Refusal::check(
        "runs_listener_check",
        format!("run {run} is opened for listener {listener}, which is bound to agent {bound}, not {given}"),
    )
    .hint("Check the event binding before assuming the listener is wrong: leave agent NULL to take the listener's.")
}

/// A run naming a listener that does not exist.
pub fn no_listener(listener: i64) -> Refusal {
    Refusal::check(
        "runs_listener_id_fkey",
        format!("listener {listener} does not exist"),
    )
}

/// A run naming an agent version that is not published (`agent` None: no agent named).
pub fn no_version(run: &str, agent: Option<&str>, version: i32) -> Refusal {
    Refusal::check(
        "runs_agent_version_fkey",
        match agent {
            Some(a) => format!("agent {a} has no published version {version}"),
            None => format!("run {run} names agent version {version} but no agent"),
        },
    )
    .detail("A run opened for an agent version names an agent and a version of pg_labels.agent_versions.")
}

/// A step, artifact or share naming a run that does not exist.
/// A step whose transaction began in an earlier month than its run's last step was written in.
pub fn step_before_run(run: &str, began: &str, last: &str) -> Refusal {
    Refusal::plain(
        sqlstate::SERIALIZATION_FAILURE,
        Some("steps"),
        format!("could not serialize a step of run {run} after its later steps"),
    )
    .detail(format!(
        "This transaction began at {began}, in an earlier month than the run's last step ({last}): \
         the step would go into an earlier month of the trail than steps decided before it."
    ))
    .hint("Retry the step in a new transaction.")
}

pub fn no_run(run: &str, constraint: &'static str) -> Refusal {
    let r = Refusal::check(constraint, format!("run {run} does not exist"));
    match constraint {
        "steps_run_id_fkey" => r.detail("Every step belongs to a run of pg_labels.runs."),
        "artifacts_origin_run_fkey" => {
            r.detail("An artifact is made by a run of pg_labels.runs (its origin_run).")
        }
        _ => r,
    }
}

// ------------------------------------------------------------------------------------------
// Steps
// ------------------------------------------------------------------------------------------

/// A step whose columns do not fit its kind (`database`: a column only the database writes).
pub fn step_shape(kind: &str, column: &str, message: String, database: bool) -> Refusal {
    if database {
        Refusal::check("steps_written_by_database", message)
            .detail(format!("Column {column} of {} {kind} step is written by the database; leave it out.", article(kind)))
    } else {
        Refusal::check("steps_shape_check", message).detail(format!(
            "Each kind of step has a fixed set of columns; see the table of step kinds in docs/platform.md ({kind})."
        ))
    }
    .hint("Context is passed by reference (context_read steps name an artifact); decisions, approvals used, shares \
           and crossings are the database's to record.")
}

/// A context read without an artifact.
pub fn read_without_artifact() -> Refusal {
    Refusal::check(
        "steps_context_read_check",
        "a context_read step names the artifact it read".into(),
    )
    .detail("artifact_id is NULL: context is passed by reference, as an artifact of pg_labels.artifacts.")
    .hint("Record data that entered the run some other way as an input step with its labels.")
}

/// A column of the trail that is the database's (its id, time or writer), given by a writer.
pub fn written_by_database(table: &'static str, column: &str, why: &str) -> Refusal {
    let constraint = match table {
        "runs" => "runs_written_by_database",
        "listeners" => "listeners_written_by_database",
        _ => "steps_written_by_database",
    };
    Refusal::check(
        constraint,
        format!("cannot insert a value into column \"{column}\" of pg_labels.{table}"),
    )
    .detail(format!(
        "Column {column} is {why}: the database writes it, never the writer."
    ))
    .hint(format!(
        "Leave {column} out of the INSERT; read it back with RETURNING."
    ))
}

/// A text the checks read (a tool's name, a kind, an actor) that is not UTF-8: possible only in
/// a database whose encoding is `SQL_ASCII`, which stores any bytes.
pub fn not_utf8(column: &str) -> Refusal {
    Refusal::check(
        "text_not_utf8",
        format!("column \"{column}\" holds text that is not valid UTF-8"),
    )
    .detail(
        "pg_labels reads the names it judges (tools, kinds, roles, scopes) as UTF-8; this \
         database's encoding (SQL_ASCII) let bytes that are not through."
            .to_string(),
    )
    .hint("Write the value in UTF-8.".to_string())
}

/// An approval decision written other than by `decide_approval()`.
pub fn decision_not_through_function(role: &str) -> Refusal {
    Refusal::rule(
        Rule::ApprovalRequired,
        "steps",
        "approval_required: approval decisions are recorded only by pg_labels.decide_approval()".into(),
    )
    .with_state(sqlstate::INSUFFICIENT_PRIVILEGE)
    .detail(format!("Role {role} inserted an approval_decided step directly."))
    .hint("A DBA allows a person to decide with GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO <role>.")
}

// ------------------------------------------------------------------------------------------
// Approvals
// ------------------------------------------------------------------------------------------

/// A role that may not decide this request (`detail` says why).
pub fn approver_denied(message: String, detail: String) -> Refusal {
    Refusal::rule(Rule::ApprovalRequired, "steps", message)
        .with_state(sqlstate::INSUFFICIENT_PRIVILEGE)
        .detail(detail)
        .hint(DECIDE_HINT)
}

/// No such approval request.
pub fn no_request(request: i64) -> Refusal {
    Refusal::plain(
        sqlstate::FOREIGN_KEY_VIOLATION,
        Some("steps"),
        format!("approval_required: there is no approval request {request}"),
    )
    .detail("request must be the id of an approval_requested step.")
}

/// A request past its expiry (`at`: when it expired, as text), which nobody may grant or deny
/// any more.
pub fn request_expired(request: i64, at: &str) -> Refusal {
    Refusal::plain(
        sqlstate::NOT_IN_PREREQUISITE_STATE,
        Some("steps"),
        format!("approval_required: approval request {request} expired at {at}"),
    )
    .detail("A request is decided before its expires_at (request_approval()'s ttl).")
    .hint("The call has to be asked for again: a new request, with the arguments as they are now.")
}

/// A request decided twice.
pub fn already_decided(request: i64) -> Refusal {
    Refusal::check(
        "steps_one_decision",
        format!("approval_required: approval request {request} was already decided"),
    )
}
