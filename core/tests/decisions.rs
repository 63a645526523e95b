//! Every barrier decision of `barrier`, checked against a plain model of the seed's rules:
//! scopes as lists of segments, labels as strings, crossings as (id, from, to) triples.
//!
//! The model says, for the seed's table and its extensions: a scope reaches its descendants and
//! itself; a run (share, read) may carry a scope label only if its scope reaches the label's
//! scope or an active crossing into it covers the label; untrusted data never reaches an
//! irreversible tool; a reversible write on untrusted data needs an approval; unknown tools
//! fail closed; rules apply in that order; a tool call the rules do not allow is refused by the
//! rule that decided (a gate records the same verdict); the output of a tool that is not
//! trusted carries `origin:tool`.

use pg_labels_core::barrier::{self, ArtifactFacts, Opening, Proposal, Summary, ToolFacts};
use pg_labels_core::crossing::Owned;
use pg_labels_core::rules::{Decision, Effect, Rule};
use pg_labels_core::step::Kind;
use pg_labels_core::{labelset, scope, LabelSet};
use proptest::prelude::*;
use std::borrow::Cow;

fn segment() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["acme", "globex", "a", "b", "platform", "finance"])
        .prop_map(String::from)
}

fn path() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(segment(), 0..4)
}

fn scope_text(p: &[String]) -> String {
    if p.is_empty() {
        "*".into()
    } else {
        p.join("/")
    }
}

/// A label and, for scope labels, the scope it names.
#[derive(Clone, Debug)]
struct L {
    text: String,
    scope: Option<Vec<String>>,
    origin: bool,
}

fn label() -> impl Strategy<Value = L> {
    prop_oneof![
        1 => Just(L { text: "installation".into(), scope: Some(vec![]), origin: false }),
        3 => segment().prop_map(|s| L { text: format!("company:{s}"), scope: Some(vec![s]), origin: false }),
        4 => prop::collection::vec(segment(), 2..4).prop_map(|v| L {
            text: format!("area:{}", v.join("/")), scope: Some(v), origin: false }),
        2 => prop::sample::select(vec!["slack", "webhook", "tool"]).prop_map(|s| L {
            text: format!("origin:{s}"), scope: None, origin: true }),
        1 => segment().prop_map(|s| L { text: format!("tag:{s}"), scope: None, origin: false }),
    ]
}

fn reaches(a: &[String], b: &[String]) -> bool {
    b.len() >= a.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

fn body(labels: &[L]) -> Vec<u8> {
    let text = format!(
        "{{{}}}",
        labels
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    labelset::parse(text.as_bytes()).unwrap()
}

fn texts(b: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = LabelSet::from_canonical(b)
        .iter()
        .map(|l| l.to_text())
        .collect();
    v.sort();
    v
}

fn crossings() -> impl Strategy<Value = Vec<(i64, Vec<String>, Vec<String>)>> {
    prop::collection::vec((path(), path()), 0..4).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (f, t))| (i as i64 + 1, f, t))
            .collect()
    })
}

fn owned(cs: &[(i64, Vec<String>, Vec<String>)]) -> Vec<Owned> {
    cs.iter()
        .map(|(id, f, t)| Owned {
            id: *id,
            from: scope::parse(scope_text(f).as_bytes()).unwrap(),
            to: scope::parse(scope_text(t).as_bytes()).unwrap(),
        })
        .collect()
}

/// The model's answer for one escaping label: the first crossing covering it into `target`.
fn model_cover(l: &L, target: &[String], cs: &[(i64, Vec<String>, Vec<String>)]) -> Option<i64> {
    let s = l.scope.as_ref()?;
    cs.iter()
        .find(|(_, f, t)| reaches(t, target) && reaches(f, s))
        .map(|c| c.0)
}

fn effect() -> impl Strategy<Value = Option<Effect>> {
    prop_oneof![
        1 => Just(None),
        4 => prop::sample::select(Effect::ALL.to_vec()).prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// A tool call (and a gate decision): barrier, unknown tool, untrusted to irreversible,
    /// approval — against the model.
    #[test]
    fn judge_matches_the_model(
        run in path(), labels in prop::collection::vec(label(), 0..6),
        eff in effect(), cs in crossings(), approved in prop::option::of(1i64..9),
    ) {
        let run_path = scope::parse(scope_text(&run).as_bytes()).unwrap();
        let b = body(&labels);
        let summary = Summary::of(LabelSet::from_canonical(&b), &run_path);
        let active = owned(&cs);
        let views: Vec<_> = active.iter().map(Owned::view).collect();
        let judged = |kind| barrier::judge::<()>(
            &Proposal {
                kind, run: &"r", run_scope: &run_path, summary: &summary, tool: Some("t"),
                facts: eff.map(|effect| ToolFacts { effect }),
            },
            |esc| Ok(pg_labels_core::crossing::cover_each(esc, &run_path, &views)),
            || Ok(approved),
        ).unwrap();
        // a gate records the verdict, whatever it is
        let v = judged(Kind::GateDecided).unwrap();
        // a call is refused unless allowed, by the rule that decided, its record keeping the
        // labels no crossing covers or else the run's origins
        match judged(Kind::ToolCalled) {
            Ok(called) => {
                prop_assert_eq!(v.decision, Decision::Allow);
                prop_assert_eq!(&called, &v);
            }
            Err(r) => {
                prop_assert_ne!(v.decision, Decision::Allow);
                let rule = v.rule.unwrap_or(Rule::DataBarrier);
                prop_assert_eq!(r.constraint, Some(rule.name()));
                let kept = if v.uncovered.is_empty() { summary.origins.clone() } else { v.uncovered.clone() };
                prop_assert_eq!(r.labels.as_deref(), Some(&kept));
            }
        }

        // the model
        let escaping: Vec<&L> = labels.iter()
            .filter(|l| l.scope.as_ref().is_some_and(|s| !reaches(&run, s))).collect();
        let uncovered: Vec<String> = escaping.iter()
            .filter(|l| model_cover(l, &run, &cs).is_none()).map(|l| l.text.clone()).collect();
        let untrusted = labels.iter().any(|l| l.origin);
        if !uncovered.is_empty() {
            let mut u = uncovered.clone(); u.sort(); u.dedup();
            prop_assert_eq!((v.decision, v.rule), (Decision::Block, Some(Rule::DataBarrier)));
            prop_assert_eq!(texts(&v.uncovered), u);
            return Ok(());
        }
        let mut used: Vec<i64> = escaping.iter().filter_map(|l| model_cover(l, &run, &cs)).collect();
        used.sort(); used.dedup();
        prop_assert_eq!(&v.crossings, &used);
        match eff {
            None => prop_assert_eq!((v.decision, v.rule), (Decision::Block, Some(Rule::UnknownTool))),
            Some(_) if !untrusted => prop_assert_eq!((v.decision, v.rule), (Decision::Allow, None)),
            Some(e) if e.is_irreversible() =>
                prop_assert_eq!((v.decision, v.rule, v.approval), (Decision::Block, Some(Rule::UntrustedToIrreversible), None)),
            Some(Effect::ReversibleWrite) => match approved {
                Some(r) => prop_assert_eq!((v.decision, v.approval), (Decision::Allow, Some(r))),
                None => prop_assert_eq!((v.decision, v.rule), (Decision::Ask, Some(Rule::ApprovalRequired))),
            },
            Some(_) => prop_assert_eq!((v.decision, v.rule), (Decision::Allow, None)),
        }
    }

    /// The seed's table in the judge: a run may carry a scope label only if its scope reaches
    /// the label's scope (no crossings): allowed exactly when the model says so.
    #[test]
    fn seed_table(run in path(), data in prop::collection::vec(segment(), 2..4)) {
        let run_path = scope::parse(scope_text(&run).as_bytes()).unwrap();
        let b = labelset::parse(format!("{{area:{}}}", data.join("/")).as_bytes()).unwrap();
        let s = Summary::of(LabelSet::from_canonical(&b), &run_path);
        let proposal = Proposal {
            kind: Kind::ToolCalled, run: &"r", run_scope: &run_path, summary: &s, tool: Some("t"),
            facts: Some(ToolFacts { effect: Effect::Read }),
        };
        let v = barrier::judge::<()>(&proposal, |_| Ok(Err(b.clone())), || Ok(None)).unwrap();
        prop_assert_eq!(v.is_ok(), reaches(&run, &data));
        if let Err(r) = v {
            prop_assert_eq!(r.constraint, Some("data_barrier"));
        }
    }

    /// The scope a run's labels are readable in (kept with each step for row-level security):
    /// an entered scope reaches it exactly when the model says the entered scope can carry every
    /// label the run carries (its own scope label among them), and the steps before more labels
    /// came stay readable where they were.
    #[test]
    fn carried_scope_matches_the_model(
        run in path(), labels in prop::collection::vec(label(), 0..5),
        more in prop::collection::vec(label(), 0..3), entered in path(),
    ) {
        let run_path = scope::parse(scope_text(&run).as_bytes()).unwrap();
        let mut all = labels.clone();
        all.push(L {
            text: match run.len() {
                0 => "installation".into(),
                1 => format!("company:{}", run[0]),
                _ => format!("area:{}", run.join("/")),
            },
            scope: Some(run.clone()),
            origin: false,
        });
        let entered_path = scope::parse(scope_text(&entered).as_bytes()).unwrap();
        let s = Summary::of(LabelSet::from_canonical(&body(&all)), &run_path);
        let carried = s.carried_scope(&run_path);
        let model = all.iter().all(|l| l.scope.as_ref().is_none_or(|sc| reaches(&entered, sc)));
        prop_assert_eq!(scope::reaches(&entered_path, &carried), model);
        // labels only accumulate: the scope only rises, so a reader of the later steps reads
        // the earlier ones too
        let after = s.with(LabelSet::from_canonical(&body(&more)), &run_path).carried_scope(&run_path);
        prop_assert!(scope::reaches(&after, &carried));
    }

    /// Opening a run: its labels are the given ones with its own scope label; refused when they
    /// escape its scope, and in the installation.
    #[test]
    fn open_run_matches_the_model(run in path(), labels in prop::collection::vec(label(), 0..5)) {
        let run_path = scope::parse(scope_text(&run).as_bytes()).unwrap();
        let b = body(&labels);
        let r = barrier::open_run(&Opening {
            run: "r", scope: Some(&run_path), labels: LabelSet::from_canonical(&b),
            agent: None, listener: None, version: None,
        });
        if run.is_empty() {
            prop_assert_eq!(r.unwrap_err().constraint, Some("runs_scope_check"));
            return Ok(());
        }
        let fits = labels.iter().all(|l| l.scope.as_ref().is_none_or(|s| reaches(&run, s)));
        match r {
            Ok(o) => {
                prop_assert!(fits);
                let mut want: Vec<String> = labels.iter().map(|l| l.text.clone()).collect();
                want.push(if run.len() == 1 { format!("company:{}", run[0]) } else { format!("area:{}", run.join("/")) });
                want.sort(); want.dedup();
                prop_assert_eq!(texts(&o.labels), want);
            }
            Err(e) => {
                prop_assert!(!fits);
                prop_assert_eq!(e.constraint, Some("data_barrier"));
            }
        }
    }

    /// A share: no crossing when the target carries everything; else the first crossing that
    /// covers every escaping label, or a refusal.
    #[test]
    fn share_matches_the_model(target in path(), labels in prop::collection::vec(label(), 0..5), cs in crossings()) {
        let t = scope::parse(scope_text(&target).as_bytes()).unwrap();
        let b = body(&labels);
        let art = ArtifactFacts { id: "a", origin_run: "o", labels: LabelSet::from_canonical(&b) };
        let got = barrier::share::<()>(&art, &t, None, None, || Ok(owned(&cs))).unwrap();
        let escaping: Vec<&L> = labels.iter()
            .filter(|l| l.scope.as_ref().is_some_and(|s| !reaches(&target, s))).collect();
        let want = if escaping.is_empty() {
            Some(None)
        } else {
            cs.iter().find(|(_, f, to)| reaches(to, &target)
                && escaping.iter().all(|l| reaches(f, l.scope.as_ref().unwrap())))
              .map(|c| Some(c.0))
        };
        match (got, want) {
            (Ok(g), Some(w)) => prop_assert_eq!(g, w),
            (Err(e), None) => prop_assert_eq!(e.constraint, Some("data_barrier")),
            (g, w) => prop_assert!(false, "got {:?}, model {:?}", g.map_err(|e| e.message), w),
        }
    }

    /// A context read: needs a share; then each escaping label needs a crossing of its own.
    #[test]
    fn read_matches_the_model(
        run in path(), labels in prop::collection::vec(label(), 0..5), cs in crossings(), shared in any::<bool>(),
    ) {
        let r = scope::parse(scope_text(&run).as_bytes()).unwrap();
        let b = body(&labels);
        let art = ArtifactFacts { id: "a", origin_run: "o", labels: LabelSet::from_canonical(&b) };
        let got = barrier::read::<()>("r", &r, &art, shared.then_some(7), LabelSet::EMPTY, || Ok(owned(&cs))).unwrap();
        if !shared {
            prop_assert!(got.unwrap_err().message.contains("is not shared"));
            return Ok(());
        }
        let escaping: Vec<&L> = labels.iter()
            .filter(|l| l.scope.as_ref().is_some_and(|s| !reaches(&run, s))).collect();
        let covered = escaping.iter().all(|l| model_cover(l, &run, &cs).is_some());
        match got {
            Ok(o) => {
                prop_assert!(covered);
                let mut used: Vec<i64> = escaping.iter().filter_map(|l| model_cover(l, &run, &cs)).collect();
                used.sort(); used.dedup();
                prop_assert_eq!(o.crossings, used);
                prop_assert_eq!(o.share, 7);
            }
            Err(e) => {
                prop_assert!(!covered);
                prop_assert_eq!(e.constraint, Some("data_barrier"));
            }
        }
    }

    /// What a step brings: a tool's result carries `origin:tool` exactly when the tool's
    /// output is not trusted (or the tool is not in the catalog); nothing else changes, and
    /// labels only accumulate.
    #[test]
    fn origin_tool_matches_the_model(
        kind in prop::sample::select(Kind::ALL.to_vec()),
        labels in prop::collection::vec(label(), 0..6),
        trusted in prop::option::of(any::<bool>()),
    ) {
        let b = body(&labels);
        let got = barrier::brought(kind, LabelSet::from_canonical(&b), trusted);
        let mut want: Vec<String> = labels.iter().map(|l| l.text.clone()).collect();
        let untrusted_output = kind == Kind::ToolResult && trusted != Some(true);
        if untrusted_output {
            want.push("origin:tool".into());
        }
        want.sort(); want.dedup();
        prop_assert_eq!(texts(&got), want);
        // labels only accumulate: all the step's own are there
        prop_assert!(LabelSet::from_canonical(&got).is_superset(LabelSet::from_canonical(&b)));
        // the output of a trusted tool, and every other kind, gains nothing from the rule
        if !untrusted_output {
            prop_assert_eq!(&got[..], &b[..]);
        }
        // owned exactly when something was added
        prop_assert_eq!(matches!(got, Cow::Owned(_)), got[..] != b[..]);
    }

    /// An untrusted tool's output reaches no irreversible tool: once a run has its result, a
    /// destructive or financial call is refused (by the barrier, or as untrusted), whatever
    /// the run carried before and whatever approval there is.
    #[test]
    fn untrusted_output_never_reaches_an_irreversible_tool(
        run in path(), before in prop::collection::vec(label(), 0..5),
        result in prop::collection::vec(label(), 0..3), trusted in prop::option::of(Just(false)),
        eff in prop::sample::select(vec![Effect::Destructive, Effect::Financial]),
        cs in crossings(), approved in prop::option::of(1i64..9),
    ) {
        let run_path = scope::parse(scope_text(&run).as_bytes()).unwrap();
        let b = body(&result);
        let brought = barrier::brought(Kind::ToolResult, LabelSet::from_canonical(&b), trusted);
        let carried = LabelSet::from_canonical(&body(&before)).union(LabelSet::from_canonical(&brought));
        let summary = Summary::of(LabelSet::from_canonical(&carried), &run_path);
        prop_assert!(texts(&summary.origins).contains(&"origin:tool".to_string()));
        let active = owned(&cs);
        let views: Vec<_> = active.iter().map(Owned::view).collect();
        let r = barrier::judge::<()>(
            &Proposal {
                kind: Kind::ToolCalled, run: &"r", run_scope: &run_path, summary: &summary,
                tool: Some("t"), facts: Some(ToolFacts { effect: eff }),
            },
            |esc| Ok(pg_labels_core::crossing::cover_each(esc, &run_path, &views)),
            || Ok(approved),
        ).unwrap();
        let refused = r.unwrap_err();
        prop_assert!(
            matches!(refused.constraint, Some("untrusted_to_irreversible") | Some("data_barrier")),
            "{:?}", refused.constraint
        );
    }
}
