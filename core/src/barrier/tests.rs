//! The barrier's tests: the seed's scenarios, the rules' order and approvals, what refused calls
//! say, crossings, opening runs, shares and reads.

use super::*;
use crate::crossing::{self, Crossing, Owned};
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
