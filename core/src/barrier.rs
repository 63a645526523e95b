//! Every barrier decision, as a pure function of plain values: a tool call (or a gate
//! decision), what a step brings into its run, a share, a context read, the opening of a run.
//! The extension gathers the facts (the run's sealed scope, what it carries, the tool's catalog
//! entry, the active crossings, an approval), calls one of these, and writes what it returns;
//! it decides nothing itself.
//!
//! Every decision answers in one shape, an [`Answer`]: allowed, with what to record, or the
//! [`Refusal`] to raise. Lookups that cost a statement (crossings, an approval) are passed as
//! closures and asked only when the decision needs them; a decision that may ask one answers
//! inside the lookups' own `Result` (a lookup that fails is no answer).
//!
//! Tool calls and what a step brings are decided here; the opening of a run in `open`, shares
//! and context reads in `context`; all re-exported here.

use crate::label;
use crate::labelset::{self, LabelSet};
use crate::refusal::{self, Refusal, LIST_LIMIT};
use crate::rules::{Decision, Effect, Rule};
use crate::scope;
use crate::step::Kind;
use std::borrow::Cow;
use std::fmt;

mod context;
mod open;
#[cfg(test)]
mod tests;

pub use context::{covering_share, read, share, ArtifactFacts, ReadOutcome, ShareFacts};
pub use open::{open_run, ListenerFacts, Opened, Opening, VersionFacts};

/// What every barrier decision answers: allowed, with what the platform records of it (`T`),
/// or refused, with the [`Refusal`] the platform raises.
pub type Answer<T> = Result<T, Refusal>;

/// What the rules need of the labels a run carries: the scope labels its scope cannot carry,
/// and the origin labels. Both only grow with the run's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub escaping: Vec<u8>,
    pub origins: Vec<u8>,
}

impl Summary {
    /// The summary of `labels` for a run in `run_scope`.
    pub fn of(labels: LabelSet<'_>, run_scope: &[u8]) -> Summary {
        Summary {
            escaping: labels.escaping(run_scope),
            origins: labels.origins(),
        }
    }

    pub fn escaping(&self) -> LabelSet<'_> {
        LabelSet::from_canonical(&self.escaping)
    }

    pub fn origins(&self) -> LabelSet<'_> {
        LabelSet::from_canonical(&self.origins)
    }

    /// The deepest scope that can carry the run's labels, for a run in `run_scope` (whose own
    /// scope label its labels hold): the run's scope, or the common ancestor of it and the
    /// labels it cannot carry. An entered scope can carry the labels exactly when it reaches
    /// this one, so a row kept with it (a step, with the labels its run carried once it was
    /// written) is judged readable from the row alone.
    pub fn carried_scope(&self, run_scope: &[u8]) -> Vec<u8> {
        match self.escaping().scope() {
            Some(escaping) => scope::lca(run_scope, escaping).to_vec(),
            None => run_scope.to_vec(),
        }
    }

    /// The summary of the run's labels with `more` added.
    pub fn with(&self, more: LabelSet<'_>, run_scope: &[u8]) -> Summary {
        let add = Summary::of(more, run_scope);
        Summary {
            escaping: self.escaping().union(add.escaping()),
            origins: self.origins().union(add.origins()),
        }
    }
}

/// The catalog entry of the tool being called, as far as the rules need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolFacts {
    pub effect: Effect,
}

/// The rules' verdict on one proposed tool call: what a gate decision records whatever it is,
/// and an allowed call records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// The rule that decided, when one did (an allowed call under an approval names
    /// `approval_required`).
    pub rule: Option<Rule>,
    /// One line for the trail.
    pub reason: Option<String>,
    /// When the barrier blocked: the escaping labels no crossing covers (a labelset body).
    pub uncovered: Vec<u8>,
    /// The approval request this call uses, when one was needed and found.
    pub approval: Option<i64>,
    /// The crossings that let the escaping labels through (ascending), when something escaped
    /// and active crossings covered all of it.
    pub crossings: Vec<i64>,
}

/// A proposed tool call, as the rules judge it.
#[derive(Clone, Copy)]
pub struct Proposal<'a> {
    /// `tool_called`: refused unless allowed; `gate_decided` (or any other kind): recorded
    /// whatever the verdict.
    pub kind: Kind,
    /// The run, for a refusal's text (written out only when refused).
    pub run: &'a dyn fmt::Display,
    /// The run's sealed scope (a path).
    pub run_scope: &'a [u8],
    /// The [`Summary`] of the run's labels united with the step's own.
    pub summary: &'a Summary,
    /// The tool's name.
    pub tool: Option<&'a str>,
    /// Its catalog entry (`None`: not in the catalog).
    pub facts: Option<ToolFacts>,
}

/// Judge a proposed tool call: its [`Verdict`], or for a `tool_called` the verdict does not
/// allow, its refusal (built by [`refusal::tool_call`]; its record keeps the labels no crossing
/// covers, or else the run's origins).
///
/// * `cover`: asked only when some scope labels escape the run's scope, with those labels;
///   returns the active crossings into the run's scope that cover every one of them (see
///   [`crate::crossing::cover_each`]), or the labels none covers;
/// * `approval`: looked up only for an untrusted reversible write; returns an unused granted
///   approval request for exactly this call, if any.
///
/// Rules, in order: `data_barrier` (nothing but an active crossing lets escaping labels
/// through; approvals never do), `unknown_tool` (fail closed), `untrusted_to_irreversible` (no
/// approval changes it), `approval_required`.
pub fn judge<E>(
    p: &Proposal<'_>,
    cover: impl FnOnce(LabelSet<'_>) -> Result<Result<Vec<i64>, Vec<u8>>, E>,
    approval: impl FnOnce() -> Result<Option<i64>, E>,
) -> Result<Answer<Verdict>, E> {
    let origins = p.summary.origins();
    let v = verdict(
        p.run_scope,
        p.summary.escaping(),
        origins,
        p.tool,
        p.facts,
        cover,
        approval,
    )?;
    if p.kind != Kind::ToolCalled || v.decision == Decision::Allow {
        return Ok(Ok(v));
    }
    Ok(Err(refusal::tool_call(
        &p.run.to_string(),
        p.run_scope,
        p.tool,
        p.facts.map(|f| f.effect),
        v.rule.unwrap_or(Rule::DataBarrier),
        &v.uncovered,
        origins.body(),
    )))
}

/// The verdict of the rules on a proposed call (see [`judge`]).
fn verdict<E>(
    run_scope: &[u8],
    escaping: LabelSet<'_>,
    origins: LabelSet<'_>,
    tool: Option<&str>,
    facts: Option<ToolFacts>,
    cover: impl FnOnce(LabelSet<'_>) -> Result<Result<Vec<i64>, Vec<u8>>, E>,
    approval: impl FnOnce() -> Result<Option<i64>, E>,
) -> Result<Verdict, E> {
    let mut v = Verdict {
        decision: Decision::Allow,
        rule: None,
        reason: None,
        uncovered: Vec::new(),
        approval: None,
        crossings: Vec::new(),
    };
    let tool_name = tool.unwrap_or("(none)");
    if !escaping.is_empty() {
        match cover(escaping)? {
            Ok(crossings) => {
                v.reason = Some(format!(
                    "carries {} into scope {} under crossing {}",
                    escaping.to_text_capped(LIST_LIMIT),
                    scope::to_text(run_scope),
                    ids_text(&crossings)
                ));
                v.crossings = crossings;
            }
            Err(uncovered) => {
                v.decision = Decision::Block;
                v.rule = Some(Rule::DataBarrier);
                v.reason = Some(format!(
                    "run scope {} cannot carry {}: the run carries data from outside this company or area",
                    scope::to_text(run_scope),
                    LabelSet::from_canonical(&uncovered).to_text_capped(LIST_LIMIT)
                ));
                v.uncovered = uncovered;
                return Ok(v);
            }
        }
    }
    let Some(facts) = facts else {
        v.decision = Decision::Block;
        v.rule = Some(Rule::UnknownTool);
        v.reason = Some(match tool {
            Some(t) => format!("tool {t} is not in the tool catalog"),
            None => "a tool call names no tool".to_string(),
        });
        return Ok(v);
    };
    if origins.is_empty() {
        return Ok(v);
    }
    // (the origins are listed only when a rule speaks: a run may carry 100,000 of them)
    let from = || origins.to_text_capped(LIST_LIMIT);
    if facts.effect.is_irreversible() {
        v.decision = Decision::Block;
        v.rule = Some(Rule::UntrustedToIrreversible);
        v.reason = Some(format!(
            "{} tool {tool_name} on data from {}",
            facts.effect.name(),
            from()
        ));
        return Ok(v);
    }
    if facts.effect == Effect::ReversibleWrite {
        v.rule = Some(Rule::ApprovalRequired);
        match approval()? {
            Some(request) => {
                v.approval = Some(request);
                v.reason = Some(format!(
                    "reversible write {tool_name} on data from {}, approved (request {request})",
                    from()
                ));
            }
            None => {
                v.decision = Decision::Ask;
                v.reason = Some(format!(
                    "reversible write {tool_name} on data from {} needs a person's approval of this call",
                    from()
                ));
            }
        }
    }
    Ok(v)
}

// ------------------------------------------------------------------------------------------
// What a step brings
// ------------------------------------------------------------------------------------------

/// What a step of `kind` that carries `labels` brings into its run (before a context read's
/// artifact, see [`read`]): its own labels, and for a tool's result whose output is not trusted
/// (`trusted_output`: the tool's catalog entry says so; `None`: the tool is not in the catalog,
/// and so not trusted) the label `origin:tool` too. Borrowed when that is `labels` itself.
#[inline]
pub fn brought<'a>(
    kind: Kind,
    labels: LabelSet<'a>,
    trusted_output: Option<bool>,
) -> Cow<'a, [u8]> {
    if kind != Kind::ToolResult || trusted_output == Some(true) {
        return Cow::Borrowed(labels.body());
    }
    let origin = labelset::from_entries(vec![label::parse(b"origin:tool").unwrap_or_default()]);
    let with = labels.union(LabelSet::from_canonical(&origin));
    if with == labels.body() {
        Cow::Borrowed(labels.body())
    } else {
        Cow::Owned(with)
    }
}

/// `3` or `3, 7`: crossing ids for a message.
pub fn ids_text(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
