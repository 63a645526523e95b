//! What every refusal says: the one table of rules and checks, and the constructors that build
//! each refusal from the decision that made it.
//!
//! The error contract: one SQLSTATE per rule ([`RULES`]), the message starting with the rule
//! name, DETAIL naming the run, its scope and the labels at issue, HINT with the operator's
//! checklist, and the rule name in the error's constraint-name field. The checks that are not
//! rules ([`CHECKS`]) use PostgreSQL's own SQLSTATEs and name the constraint they stand for.
//! The extension turns a [`Refusal`] into a PostgreSQL `ERROR` unchanged; the error
//! table is checked against these two tables by a test.

use crate::labelset::LabelSet;
use crate::rules::{Effect, Rule};
use crate::scope;
use crate::sqlstate::{self, SqlState};

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

impl Refusal {
    fn with_state(mut self, s: SqlState) -> Refusal {
        self.sqlstate = s;
        self
    }
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

/// A request decided twice.
pub fn already_decided(request: i64) -> Refusal {
    Refusal::check(
        "steps_one_decision",
        format!("approval_required: approval request {request} was already decided"),
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_one_state_and_every_check_one_spec() {
        for r in Rule::ALL {
            assert_eq!(RULES.iter().filter(|s| s.rule == r).count(), 1);
        }
        let mut names: Vec<_> = CHECKS.iter().map(|c| c.constraint).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
        // every check constructor finds its spec (not the fallback)
        for c in ["runs_scope_check", "steps_shape_check", "crossings_guard"] {
            assert_eq!(check_spec(c).constraint, c);
        }
    }

    #[test]
    fn messages_start_with_the_rule_and_are_short() {
        let big: Vec<u8> = (0..100_000)
            .flat_map(|i| {
                let mut e = vec![b'o'];
                e.extend_from_slice(format!("slack\x01C{i}").as_bytes());
                e.push(0);
                e
            })
            .collect();
        let set = crate::labelset::from_entries(
            LabelSet::from_canonical(&big)
                .iter()
                .map(|l| l.0.to_vec())
                .collect(),
        );
        let r = tool_call(
            "r",
            b"acme",
            Some("stripe.refund"),
            Some(Effect::Financial),
            Rule::UntrustedToIrreversible,
            &[],
            &set,
        );
        assert!(r.message.starts_with("untrusted_to_irreversible:"));
        assert_eq!(r.constraint, Some("untrusted_to_irreversible"));
        assert_eq!(r.sqlstate, sqlstate::UNTRUSTED_TO_IRREVERSIBLE);
        let d = r.detail.unwrap();
        assert!(d.len() < 2000, "{}", d.len());
        assert!(d.contains("and 99980 more"));
        // its record keeps the origins (nothing escaped)
        assert_eq!(r.labels.as_deref(), Some(&set));
    }
}
