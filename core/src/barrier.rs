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

use crate::crossing::{self, Crossing, Owned};
use crate::label;
use crate::labelset::{self, LabelSet};
use crate::refusal::{self, Refusal, LIST_LIMIT};
use crate::rules::{Decision, Effect, Rule};
use crate::scope;
use crate::step::Kind;
use std::borrow::Cow;
use std::fmt;

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

// ------------------------------------------------------------------------------------------
// Opening a run
// ------------------------------------------------------------------------------------------

/// The listener a run is opened for, as found in the catalog.
#[derive(Clone, Copy, Debug)]
pub struct ListenerFacts<'a> {
    pub id: i64,
    pub scope: &'a [u8],
    pub agent: Option<&'a str>,
}

/// The agent version a run is opened for: its number and, when it is published, its scope.
#[derive(Clone, Copy, Debug)]
pub struct VersionFacts<'a> {
    pub version: i32,
    pub scope: Option<&'a [u8]>,
}

/// What a run is opened with.
#[derive(Clone, Copy, Debug)]
pub struct Opening<'a> {
    /// The run's id, for messages.
    pub run: &'a str,
    /// The scope the writer gave, if any.
    pub scope: Option<&'a [u8]>,
    /// The initial labels the writer gave.
    pub labels: LabelSet<'a>,
    /// The agent the writer gave, if any.
    pub agent: Option<&'a str>,
    pub listener: Option<ListenerFacts<'a>>,
    pub version: Option<VersionFacts<'a>>,
}

/// What the opened run is: its scope and labels, and what the database fills in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    pub scope: Vec<u8>,
    /// The scope was not given and comes from the listener or the version.
    pub scope_filled: bool,
    /// The agent was not given and comes from the listener.
    pub agent_filled: Option<String>,
    /// The initial labels with the run's own scope label.
    pub labels: Vec<u8>,
}

/// Open a run, or say why it is not even opened. A run opened through a listener has exactly
/// the listener's scope and agent; a run of a published version has the version's scope; its
/// initial labels must fit its scope; and it is opened in a company or area, never in `*`.
pub fn open_run(o: &Opening<'_>) -> Answer<Opened> {
    let mut scope_filled = false;
    let mut agent_filled = None;
    let mut agent = o.agent;
    let mut path: Option<&[u8]> = o.scope;
    if let Some(l) = o.listener {
        // The event binding decides where the run is: the listener's scope, nothing wider (it
        // could carry more) and nothing else.
        match path {
            Some(p) if p != l.scope => {
                return Err(refusal::run_not_opened(
                    o.run,
                    p,
                    &[],
                    Some((l.id, l.scope)),
                ))
            }
            Some(_) => {}
            None => {
                path = Some(l.scope);
                scope_filled = true;
            }
        }
        match (agent, l.agent) {
            (Some(a), Some(b)) if a != b => {
                return Err(refusal::listener_agent(o.run, l.id, b, a));
            }
            (None, Some(b)) => {
                agent = Some(b);
                agent_filled = Some(b.to_string());
            }
            _ => {}
        }
    }
    if let Some(v) = o.version {
        // A run of a published version has the version's scope ("the agent was published in
        // the right company and area").
        let Some(a) = agent else {
            return Err(refusal::no_version(o.run, None, v.version));
        };
        let Some(vs) = v.scope else {
            return Err(refusal::no_version(o.run, Some(a), v.version));
        };
        match path {
            Some(p) if p != vs => {
                return Err(refusal::run_not_published(o.run, p, a, v.version, vs));
            }
            Some(_) => {}
            None => {
                path = Some(vs);
                scope_filled = true;
            }
        }
    }
    let Some(path) = path else {
        return Err(Refusal {
            sqlstate: crate::sqlstate::NOT_NULL_VIOLATION,
            message:
                "null value in column \"scope\" of relation \"runs\" violates not-null constraint"
                    .into(),
            detail: None,
            hint: None,
            constraint: None,
            table: Some("runs"),
            labels: None,
        });
    };
    if path.is_empty() {
        return Err(refusal::run_in_installation(o.run));
    }
    let own = labelset::from_entries(vec![label::of_scope(path)]);
    let initial = o.labels.union(LabelSet::from_canonical(&own));
    let escaping = LabelSet::from_canonical(&initial).escaping(path);
    if !escaping.is_empty() {
        return Err(refusal::run_not_opened(o.run, path, &escaping, None));
    }
    Ok(Opened {
        scope: path.to_vec(),
        scope_filled,
        agent_filled,
        labels: initial,
    })
}

// ------------------------------------------------------------------------------------------
// Shares and context reads
// ------------------------------------------------------------------------------------------

/// The artifact a share or read is about, for messages.
#[derive(Clone, Copy, Debug)]
pub struct ArtifactFacts<'a> {
    pub id: &'a str,
    pub origin_run: &'a str,
    pub labels: LabelSet<'a>,
}

/// A share of an artifact to `target` (a scope, or the scope of the run `to_run`): the one
/// crossing it uses when the target cannot carry all of the artifact's labels (`None` when it
/// can), or the refusal. `named`: the crossing the writer asked to use, if any. `active`
/// (asked only when something escapes) returns the active crossings into the target.
pub fn share<E>(
    artifact: &ArtifactFacts<'_>,
    target: &[u8],
    to_run: Option<&str>,
    named: Option<i64>,
    active: impl FnOnce() -> Result<Vec<Owned>, E>,
) -> Result<Answer<Option<i64>>, E> {
    let escaping = artifact.labels.escaping(target);
    if escaping.is_empty() {
        return Ok(Ok(None));
    }
    let active = active()?;
    let candidates: Vec<Crossing<'_>> = active
        .iter()
        .map(Owned::view)
        .filter(|c| named.is_none_or(|n| n == c.id))
        .collect();
    Ok(
        match crossing::cover_all(LabelSet::from_canonical(&escaping), target, &candidates) {
            Some(id) => Ok(Some(id)),
            None => Err(refusal::share_refused(
                artifact.id,
                artifact.origin_run,
                target,
                to_run,
                &escaping,
                named,
            )),
        },
    )
}

/// A share of an artifact, as a read sees it.
#[derive(Clone, Copy, Debug)]
pub struct ShareFacts<'a> {
    pub id: i64,
    /// Shared with one run: is it the reading run?
    pub to_this_run: Option<bool>,
    pub to_scope: &'a [u8],
}

/// The first share (in the order given) that offers the artifact to a run in `run_scope`: one
/// to this very run, or to a scope reaching the run's.
pub fn covering_share<'a>(
    run_scope: &[u8],
    shares: impl IntoIterator<Item = ShareFacts<'a>>,
) -> Option<i64> {
    shares
        .into_iter()
        .find(|s| match s.to_this_run {
            Some(this) => this,
            None => scope::reaches(s.to_scope, run_scope),
        })
        .map(|s| s.id)
}

/// What a context read brings into the run: the step's labels with the artifact's, and the
/// crossings that let those the run's scope cannot carry through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOutcome {
    pub labels: Vec<u8>,
    pub share: i64,
    pub crossings: Vec<i64>,
}

/// Judge a context read of `artifact` by run `run` (in `run_scope`): a share must offer it to
/// the run (`share`, from [`covering_share`]), and the run's scope must carry its labels or
/// active crossings into it (asked only when something escapes) must cover each of the rest.
pub fn read<E>(
    run: &str,
    run_scope: &[u8],
    artifact: &ArtifactFacts<'_>,
    share: Option<i64>,
    step_labels: LabelSet<'_>,
    active: impl FnOnce() -> Result<Vec<Owned>, E>,
) -> Result<Answer<ReadOutcome>, E> {
    let Some(share) = share else {
        return Ok(Err(refusal::not_shared(run, run_scope, artifact.id)));
    };
    let labels = step_labels.union(artifact.labels);
    let escaping = LabelSet::from_canonical(&labels).escaping(run_scope);
    let crossings = if escaping.is_empty() {
        Vec::new()
    } else {
        let active = active()?;
        let views: Vec<Crossing<'_>> = active.iter().map(Owned::view).collect();
        match crossing::cover_each(LabelSet::from_canonical(&escaping), run_scope, &views) {
            Ok(ids) => ids,
            Err(uncovered) => {
                return Ok(Err(refusal::read_refused(
                    run,
                    run_scope,
                    artifact.id,
                    &uncovered,
                )))
            }
        }
    };
    Ok(Ok(ReadOutcome {
        labels,
        share,
        crossings,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labelset;

    fn run(
        scope_text: &str,
        labels: &str,
        tool: Option<(&str, Effect)>,
        approved: Option<i64>,
    ) -> Verdict {
        run_crossing(scope_text, labels, tool, approved, &[])
    }

    /// With active crossings `(id, from, to)`.
    fn run_crossing(
        scope_text: &str,
        labels: &str,
        tool: Option<(&str, Effect)>,
        approved: Option<i64>,
        crossings: &[(i64, &str, &str)],
    ) -> Verdict {
        let p = scope::parse(scope_text.as_bytes()).unwrap();
        let b = labelset::parse(labels.as_bytes()).unwrap();
        let (name, facts) = match tool {
            Some((n, e)) => (Some(n), Some(ToolFacts { effect: e })),
            None => (Some("ghost"), None),
        };
        let cs: Vec<Owned> = crossings
            .iter()
            .map(|&(id, f, t)| Owned {
                id,
                from: scope::parse(f.as_bytes()).unwrap(),
                to: scope::parse(t.as_bytes()).unwrap(),
            })
            .collect();
        let views: Vec<Crossing> = cs.iter().map(Owned::view).collect();
        let s = Summary::of(LabelSet::from_body(&b).unwrap(), &p);
        let proposal = |kind| Proposal {
            kind,
            run: &"r",
            run_scope: &p,
            summary: &s,
            tool: name,
            facts,
        };
        let judged = |kind| {
            judge::<()>(
                &proposal(kind),
                |esc| Ok(crossing::cover_each(esc, &p, &views)),
                || Ok(approved),
            )
            .unwrap()
        };
        // a gate records the verdict, whatever it is
        let v = judged(Kind::GateDecided).unwrap();
        // a call is refused unless the verdict allows it, by the rule that decided
        match judged(Kind::ToolCalled) {
            Ok(called) => {
                assert_eq!(v.decision, Decision::Allow);
                assert_eq!(called, v);
            }
            Err(r) => {
                assert_ne!(v.decision, Decision::Allow);
                let rule = v.rule.unwrap_or(Rule::DataBarrier);
                assert_eq!(r.constraint, Some(rule.name()));
                assert!(r.message.starts_with(rule.name()), "{}", r.message);
                let kept = if v.uncovered.is_empty() {
                    s.origins.clone()
                } else {
                    v.uncovered.clone()
                };
                assert_eq!(r.labels.as_deref(), Some(&kept));
            }
        }
        v
    }

    #[test]
    fn seed_scenarios() {
        let read = Some(("tickets.read", Effect::Read));
        // the seed's table
        assert_eq!(
            run("acme/platform", "{area:acme/platform}", read, None).decision,
            Decision::Allow
        );
        assert_eq!(
            run("acme", "{area:acme/platform}", read, None).decision,
            Decision::Allow
        );
        let v = run("acme/finance", "{area:acme/platform}", read, None);
        assert_eq!(
            (v.decision, v.rule),
            (Decision::Block, Some(Rule::DataBarrier))
        );
        assert_eq!(
            LabelSet::from_body(&v.uncovered).unwrap().to_text(),
            "{area:acme/platform}"
        );
        let v = run("globex/platform", "{area:acme/platform}", read, None);
        assert_eq!(v.rule, Some(Rule::DataBarrier));
    }

    #[test]
    fn rule_order_and_approvals() {
        let refund = Some(("stripe.refund", Effect::Financial));
        let wipe = Some(("db.drop", Effect::Destructive));
        let update = Some(("tickets.update", Effect::ReversibleWrite));
        let untrusted = "{area:acme/x,origin:slack}";
        // no approval makes an untrusted irreversible call acceptable
        for t in [refund, wipe] {
            let v = run("acme/x", untrusted, t, Some(7));
            assert_eq!(
                (v.decision, v.rule, v.approval),
                (Decision::Block, Some(Rule::UntrustedToIrreversible), None)
            );
        }
        assert_eq!(
            run("acme/x", "{area:acme/x}", refund, None).decision,
            Decision::Allow
        );
        // reversible writes ask, unless approved
        let v = run("acme/x", untrusted, update, None);
        assert_eq!(
            (v.decision, v.rule),
            (Decision::Ask, Some(Rule::ApprovalRequired))
        );
        let v = run("acme/x", untrusted, update, Some(7));
        assert_eq!((v.decision, v.approval), (Decision::Allow, Some(7)));
        assert_eq!(
            run("acme/x", "{area:acme/x}", update, None).decision,
            Decision::Allow
        );
        // approvals never override the barrier
        let v = run("acme/y", untrusted, update, Some(7));
        assert_eq!(
            (v.decision, v.rule, v.approval),
            (Decision::Block, Some(Rule::DataBarrier), None)
        );
        // unknown tools fail closed, after the barrier
        let v = run("acme/x", "{area:acme/x}", None, None);
        assert_eq!(
            (v.decision, v.rule),
            (Decision::Block, Some(Rule::UnknownTool))
        );
        assert_eq!(
            run("acme/y", "{area:acme/x}", None, None).rule,
            Some(Rule::DataBarrier)
        );
        // the lookups are only made when needed
        let p = scope::parse(b"acme").unwrap();
        let b = labelset::parse(b"{origin:slack}").unwrap();
        let s = Summary::of(LabelSet::from_body(&b).unwrap(), &p);
        let r = judge::<&str>(
            &Proposal {
                kind: Kind::ToolCalled,
                run: &"r",
                run_scope: &p,
                summary: &s,
                tool: Some("r"),
                facts: Some(ToolFacts {
                    effect: Effect::Read,
                }),
            },
            |_| Err("crossings looked up"),
            || Err("looked up"),
        );
        assert!(matches!(r, Ok(Ok(_))));
    }

    #[test]
    fn refused_calls_say_who_and_what() {
        let p = scope::parse(b"acme/x").unwrap();
        let b = labelset::parse(b"{area:acme/x,origin:slack}").unwrap();
        let s = Summary::of(LabelSet::from_body(&b).unwrap(), &p);
        let run = "5b1c";
        let r = judge::<()>(
            &Proposal {
                kind: Kind::ToolCalled,
                run: &run,
                run_scope: &p,
                summary: &s,
                tool: Some("stripe.refund"),
                facts: Some(ToolFacts {
                    effect: Effect::Financial,
                }),
            },
            |_| Ok(Ok(Vec::new())),
            || Ok(None),
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(
            r,
            Refusal {
                labels: Some(Box::new(s.origins.clone())),
                ..refusal::tool_call(
                    run,
                    &p,
                    Some("stripe.refund"),
                    Some(Effect::Financial),
                    Rule::UntrustedToIrreversible,
                    &[],
                    &s.origins,
                )
            }
        );
        assert!(r.detail.unwrap().starts_with("Run 5b1c (scope acme/x)"));
    }

    #[test]
    fn untrusted_tool_output_brings_origin_tool() {
        let b = labelset::parse(b"{area:acme/x}").unwrap();
        let labels = LabelSet::from_body(&b).unwrap();
        let text = |c: &Cow<'_, [u8]>| LabelSet::from_canonical(c).to_text();
        for trusted in [None, Some(false)] {
            let got = brought(Kind::ToolResult, labels, trusted);
            assert!(matches!(got, Cow::Owned(_)));
            assert_eq!(text(&got), "{area:acme/x,origin:tool}");
        }
        assert!(matches!(
            brought(Kind::ToolResult, labels, Some(true)),
            Cow::Borrowed(_)
        ));
        // carried already: nothing new
        let o = labelset::parse(b"{origin:tool}").unwrap();
        let got = brought(Kind::ToolResult, LabelSet::from_body(&o).unwrap(), None);
        assert!(matches!(got, Cow::Borrowed(_)));
        for kind in Kind::ALL.into_iter().filter(|k| *k != Kind::ToolResult) {
            assert!(matches!(brought(kind, labels, None), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn crossings_let_covered_labels_through_and_nothing_else() {
        let read = Some(("kb.search", Effect::Read));
        let refund = Some(("stripe.refund", Effect::Financial));
        let into_platform = [(4, "acme/finance", "acme/platform")];
        let v = run_crossing(
            "acme/platform",
            "{area:acme/finance}",
            read,
            None,
            &into_platform,
        );
        assert_eq!(
            (v.decision, v.rule, v.crossings.clone()),
            (Decision::Allow, None, vec![4])
        );
        assert!(v.reason.unwrap().contains("under crossing 4"));
        // a sub-area of the target is inside the crossing's to_scope; the parent is not
        let v = run_crossing(
            "acme/platform/infra",
            "{area:acme/finance/ledger}",
            read,
            None,
            &into_platform,
        );
        assert_eq!(v.decision, Decision::Allow);
        let v = run_crossing("acme", "{company:globex}", read, None, &into_platform);
        assert_eq!(v.rule, Some(Rule::DataBarrier));
        // a label the crossing does not cover still blocks, and only it is named
        let v = run_crossing(
            "acme/platform",
            "{area:acme/finance,area:acme/hr}",
            read,
            None,
            &into_platform,
        );
        assert_eq!(
            (v.decision, v.rule),
            (Decision::Block, Some(Rule::DataBarrier))
        );
        assert_eq!(
            LabelSet::from_canonical(&v.uncovered).to_text(),
            "{area:acme/hr}"
        );
        assert!(v.crossings.is_empty());
        // a crossing lifts the barrier only: the other rules still judge the call
        let v = run_crossing(
            "acme/platform",
            "{area:acme/finance,origin:webhook}",
            refund,
            Some(1),
            &into_platform,
        );
        assert_eq!(
            (v.decision, v.rule, v.crossings),
            (
                Decision::Block,
                Some(Rule::UntrustedToIrreversible),
                vec![4]
            )
        );
        let v = run_crossing(
            "acme/platform",
            "{area:acme/finance}",
            None,
            None,
            &into_platform,
        );
        assert_eq!(v.rule, Some(Rule::UnknownTool));
    }

    fn p(s: &str) -> Vec<u8> {
        scope::parse(s.as_bytes()).unwrap()
    }

    fn ls(s: &str) -> Vec<u8> {
        labelset::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn opening_runs() {
        let empty = ls("{}");
        let open = |scope: Option<&[u8]>,
                    labels: &[u8],
                    listener: Option<ListenerFacts>,
                    version: Option<VersionFacts>,
                    agent: Option<&str>| {
            open_run(&Opening {
                run: "r",
                scope,
                labels: LabelSet::from_canonical(labels),
                agent,
                listener,
                version,
            })
        };
        let (plat, fin) = (p("acme/platform"), p("acme/finance"));
        let o = open(Some(&plat), &empty, None, None, None).unwrap();
        assert_eq!(
            LabelSet::from_canonical(&o.labels).to_text(),
            "{area:acme/platform}"
        );
        // initial labels must fit
        let e = open(Some(&plat), &ls("{area:acme/finance}"), None, None, None).unwrap_err();
        assert_eq!(e.constraint, Some("data_barrier"));
        // never in the installation
        let e = open(Some(&p("*")), &empty, None, None, None).unwrap_err();
        assert_eq!(e.constraint, Some("runs_scope_check"));
        // a listener decides the scope and the agent
        let l = ListenerFacts {
            id: 3,
            scope: &plat,
            agent: Some("bot"),
        };
        let o = open(None, &empty, Some(l), None, None).unwrap();
        assert!(o.scope_filled);
        assert_eq!(o.agent_filled.as_deref(), Some("bot"));
        assert_eq!(
            open(Some(&fin), &empty, Some(l), None, None)
                .unwrap_err()
                .constraint,
            Some("data_barrier")
        );
        assert_eq!(
            open(None, &empty, Some(l), None, Some("other"))
                .unwrap_err()
                .constraint,
            Some("runs_listener_check")
        );
        // a published version decides the scope
        let v = VersionFacts {
            version: 2,
            scope: Some(&fin),
        };
        assert_eq!(
            open(Some(&plat), &empty, None, Some(v), Some("bot")).unwrap_err().message,
            "data_barrier: run r is not opened: agent bot version 2 is published in scope acme/finance, not acme/platform"
        );
        assert_eq!(
            open(None, &empty, None, Some(v), Some("bot"))
                .unwrap()
                .scope,
            fin
        );
        assert_eq!(
            open(None, &empty, None, Some(v), None)
                .unwrap_err()
                .constraint,
            Some("runs_agent_version_fkey")
        );
        let unpublished = VersionFacts {
            version: 9,
            scope: None,
        };
        assert_eq!(
            open(None, &empty, None, Some(unpublished), Some("bot"))
                .unwrap_err()
                .constraint,
            Some("runs_agent_version_fkey")
        );
    }

    #[test]
    fn shares_and_reads() {
        let labels = ls("{area:acme/finance}");
        let art = ArtifactFacts {
            id: "a",
            origin_run: "o",
            labels: LabelSet::from_canonical(&labels),
        };
        let none = || Ok::<_, ()>(Vec::new());
        let into_platform = || {
            Ok::<_, ()>(vec![Owned {
                id: 5,
                from: p("acme/finance"),
                to: p("acme/platform"),
            }])
        };
        assert_eq!(share(&art, &p("acme"), None, None, none).unwrap(), Ok(None));
        assert!(share(&art, &p("acme/platform"), None, None, none)
            .unwrap()
            .is_err());
        assert_eq!(
            share(&art, &p("acme/platform"), None, None, into_platform).unwrap(),
            Ok(Some(5))
        );
        // a named crossing must be the one that covers
        assert!(
            share(&art, &p("acme/platform"), None, Some(6), into_platform)
                .unwrap()
                .is_err()
        );
        // reads: a share must cover the run
        let plat = p("acme/platform");
        let shares = [
            ShareFacts {
                id: 1,
                to_this_run: Some(false),
                to_scope: &plat,
            },
            ShareFacts {
                id: 2,
                to_this_run: None,
                to_scope: b"acme",
            },
        ];
        assert_eq!(covering_share(&p("acme/platform/infra"), shares), Some(2));
        assert_eq!(covering_share(&p("globex"), shares), None);
        let r = read("r", &plat, &art, None, LabelSet::EMPTY, none).unwrap();
        assert_eq!(
            r.unwrap_err().message,
            "data_barrier: artifact a is not shared with run r"
        );
        assert!(read("r", &plat, &art, Some(2), LabelSet::EMPTY, none)
            .unwrap()
            .is_err());
        let ok = read("r", &plat, &art, Some(2), LabelSet::EMPTY, into_platform)
            .unwrap()
            .unwrap();
        assert_eq!((ok.share, ok.crossings), (2, vec![5]));
    }
}
