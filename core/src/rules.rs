//! The enforcement rules for a tool call, as a pure function of what the run carries.
//!
//! The database layer gathers the facts (the run's sealed scope, the labels the run carries with
//! the step's own, the tool's catalog entry) and asks [`judge`]; the same verdict serves the
//! trigger on `tool_called` steps (which refuses) and `pg_labels.gate()` (which records).

use crate::labelset::LabelSet;
use crate::scope;

/// What a tool does, from the tool catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Read,
    ReversibleWrite,
    Destructive,
    Financial,
}

impl Effect {
    pub const ALL: [Effect; 4] = [
        Effect::Read,
        Effect::ReversibleWrite,
        Effect::Destructive,
        Effect::Financial,
    ];

    pub fn parse(s: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|e| e.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::ReversibleWrite => "reversible_write",
            Effect::Destructive => "destructive",
            Effect::Financial => "financial",
        }
    }

    /// Cannot be undone: no untrusted data may reach it, approved or not.
    pub fn is_irreversible(self) -> bool {
        matches!(self, Effect::Destructive | Effect::Financial)
    }
}

/// The rules, by the names the trail and the errors use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    DataBarrier,
    UntrustedToIrreversible,
    ApprovalRequired,
    UnknownTool,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::DataBarrier => "data_barrier",
            Rule::UntrustedToIrreversible => "untrusted_to_irreversible",
            Rule::ApprovalRequired => "approval_required",
            Rule::UnknownTool => "unknown_tool",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Ask,
    Block,
}

impl Decision {
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Block => "block",
        }
    }
}

/// The outcome for one proposed tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// The rule that decided, when one did (an allowed call under an approval names
    /// `approval_required`).
    pub rule: Option<Rule>,
    /// One line for the trail.
    pub reason: Option<String>,
    /// The scope labels the run's scope cannot carry (a labelset body).
    pub escaping: Vec<u8>,
    /// The origin labels carried (a labelset body).
    pub origins: Vec<u8>,
    /// The approval request this call uses, when one was needed and found.
    pub approval: Option<i64>,
    /// The crossings that let the escaping labels through (ascending), when something escaped
    /// and active crossings covered all of it.
    pub crossings: Vec<i64>,
}

/// The catalog entry of the tool being called, as far as the rules need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolFacts {
    pub effect: Effect,
}

/// Judge a proposed tool call.
///
/// * `run_scope`: the run's sealed scope (a path);
/// * `carried`: the run's labels united with the step's own;
/// * `tool`: the tool's name, and `facts` its catalog entry (`None`: not in the catalog);
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
    run_scope: &[u8],
    carried: LabelSet<'_>,
    tool: Option<&str>,
    facts: Option<ToolFacts>,
    cover: impl FnOnce(LabelSet<'_>) -> Result<Result<Vec<i64>, Vec<u8>>, E>,
    approval: impl FnOnce() -> Result<Option<i64>, E>,
) -> Result<Verdict, E> {
    let escaping = carried.escaping(run_scope);
    let origins = carried.origins();
    let mut v = Verdict {
        decision: Decision::Allow,
        rule: None,
        reason: None,
        escaping,
        origins,
        approval: None,
        crossings: Vec::new(),
    };
    let tool_name = tool.unwrap_or("(none)");
    if !v.escaping.is_empty() {
        match cover(LabelSet::from_canonical(&v.escaping))? {
            Ok(crossings) => {
                v.reason = Some(format!(
                    "carries {} into scope {} under crossing {}",
                    LabelSet::from_canonical(&v.escaping).to_text(),
                    scope::to_text(run_scope),
                    ids_text(&crossings)
                ));
                v.crossings = crossings;
            }
            Err(uncovered) => {
                v.escaping = uncovered;
                v.decision = Decision::Block;
                v.rule = Some(Rule::DataBarrier);
                v.reason = Some(format!(
                    "run scope {} cannot carry {}: the run carries data from outside this company or area",
                    scope::to_text(run_scope),
                    LabelSet::from_canonical(&v.escaping).to_text()
                ));
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
    if v.origins.is_empty() {
        return Ok(v);
    }
    let from = LabelSet::from_canonical(&v.origins).to_text();
    if facts.effect.is_irreversible() {
        v.decision = Decision::Block;
        v.rule = Some(Rule::UntrustedToIrreversible);
        v.reason = Some(format!(
            "{} tool {tool_name} on data from {from}",
            facts.effect.name()
        ));
        return Ok(v);
    }
    if facts.effect == Effect::ReversibleWrite {
        v.rule = Some(Rule::ApprovalRequired);
        match approval()? {
            Some(request) => {
                v.approval = Some(request);
                v.reason = Some(format!(
                    "reversible write {tool_name} on data from {from}, approved (request {request})"
                ));
            }
            None => {
                v.decision = Decision::Ask;
                v.reason = Some(format!(
                    "reversible write {tool_name} on data from {from} needs a person's approval of this call"
                ));
            }
        }
    }
    Ok(v)
}

/// `3` or `3, 7`: crossing ids for a message.
pub fn ids_text(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crossing::{self, Crossing};
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
        let paths: Vec<(i64, Vec<u8>, Vec<u8>)> = crossings
            .iter()
            .map(|&(id, f, t)| {
                (
                    id,
                    scope::parse(f.as_bytes()).unwrap(),
                    scope::parse(t.as_bytes()).unwrap(),
                )
            })
            .collect();
        let cs: Vec<Crossing> = paths
            .iter()
            .map(|(id, f, t)| Crossing {
                id: *id,
                from: f,
                to: t,
            })
            .collect();
        judge::<()>(
            &p,
            LabelSet::from_body(&b).unwrap(),
            name,
            facts,
            |esc| Ok(crossing::cover_each(esc, &p, &cs)),
            || Ok(approved),
        )
        .unwrap()
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
            LabelSet::from_body(&v.escaping).unwrap().to_text(),
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
        // the approval is only looked up when needed
        let p = scope::parse(b"acme").unwrap();
        let b = labelset::parse(b"{origin:slack}").unwrap();
        let r = judge::<&str>(
            &p,
            LabelSet::from_body(&b).unwrap(),
            Some("r"),
            Some(ToolFacts {
                effect: Effect::Read,
            }),
            |_| Err("crossings looked up"),
            || Err("looked up"),
        );
        assert!(r.is_ok());
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
            LabelSet::from_canonical(&v.escaping).to_text(),
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
}
