//! Property tests of the publication check against a naive model: taint computed by fixpoint
//! iteration over the declared graph, cycles by repeated reachability. Every reported path and
//! cycle must be real.

use pg_labels_core::flow::{self, DeclError, Origin, StepDecl, ToolInfo, SOURCES};
use pg_labels_core::rules::Effect;
use proptest::prelude::*;

/// A random declaration: tools (effect, trusted output) and inputs. With `dag`, steps read only
/// earlier steps (no cycles); otherwise any step.
fn declaration() -> impl Strategy<Value = (Vec<StepDecl>, Vec<ToolInfo>)> {
    (1usize..14, any::<bool>()).prop_flat_map(|(n, dag)| {
        let step = (
            0..4usize,
            any::<bool>(),
            prop::collection::vec((0..n + 4, 0u8..10), 0..4),
        );
        prop::collection::vec(step, n).prop_map(move |raw| {
            let mut steps = Vec::new();
            let mut tools = Vec::new();
            for (i, (e, trusted, ins)) in raw.into_iter().enumerate() {
                tools.push(ToolInfo {
                    effect: Effect::ALL[e],
                    trusted_output: trusted,
                });
                let inputs = ins
                    .into_iter()
                    .filter_map(|(x, coin)| {
                        if x >= n || coin < 3 {
                            Some(SOURCES[x % 4].0.to_string())
                        } else if dag && x >= i {
                            None
                        } else {
                            Some(format!("s{x}"))
                        }
                    })
                    .collect();
                steps.push(StepDecl {
                    id: format!("s{i}"),
                    tool: format!("t{i}"),
                    inputs,
                });
            }
            (steps, tools)
        })
    })
}

fn index(steps: &[StepDecl], id: &str) -> Option<usize> {
    steps.iter().position(|s| s.id == id)
}

fn reads(steps: &[StepDecl], reader: usize, input: usize) -> bool {
    steps[reader].inputs.iter().any(|x| *x == steps[input].id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn analysis_matches_the_model((steps, tools) in declaration()) {
        let n = steps.len();
        let result = flow::analyze(&steps, |name| {
            name.strip_prefix('t').and_then(|i| i.parse::<usize>().ok()).map(|i| tools[i])
        });
        // the model: is there a cycle? (a step reaching itself through step inputs)
        let mut reach = vec![vec![false; n]; n]; // reach[a][b]: b reads a, transitively
        for (b, s) in steps.iter().enumerate() {
            for x in &s.inputs {
                if let Some(a) = index(&steps, x) { reach[a][b] = true; }
            }
        }
        for k in 0..n { for a in 0..n { for b in 0..n {
            if reach[a][k] && reach[k][b] { reach[a][b] = true; }
        }}}
        let cyclic = (0..n).any(|i| reach[i][i]);
        match result {
            Err(DeclError::Cycle { steps: cycle }) => {
                prop_assert!(cyclic);
                prop_assert_eq!(cycle.first(), cycle.last());
                for w in cycle.windows(2) {
                    let (a, b) = (index(&steps, &w[0]).unwrap(), index(&steps, &w[1]).unwrap());
                    prop_assert!(reads(&steps, b, a), "{} does not read {}", w[1], w[0]);
                }
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
            Ok(a) => {
                prop_assert!(!cyclic);
                // the model's taint, by fixpoint
                let mut tainted = vec![false; n];
                let mut out = vec![false; n];
                for _ in 0..=n {
                    for (i, s) in steps.iter().enumerate() {
                        tainted[i] = s.inputs.iter().any(|x| match index(&steps, x) {
                            Some(j) => out[j],
                            None => !SOURCES.iter().find(|(name, _)| name == x).unwrap().1,
                        });
                        out[i] = tainted[i] || !tools[i].trusted_output;
                    }
                }
                let expect = |pred: &dyn Fn(Effect) -> bool| -> Vec<usize> {
                    (0..n).filter(|&i| tainted[i] && pred(tools[i].effect)).collect()
                };
                let got = |paths: &[flow::Path]| -> Vec<usize> { paths.iter().map(|p| p.step()).collect() };
                prop_assert_eq!(got(&a.irreversible), expect(&|e| e.is_irreversible()));
                prop_assert_eq!(got(&a.needs_approval), expect(&|e| e == Effect::ReversibleWrite));
                // every path is real: an untrusted origin, edges between hops, untrusted data along it
                for p in a.irreversible.iter().chain(&a.needs_approval) {
                    prop_assert!(!p.elided); // graphs here are shorter than MAX_HOPS
                    match p.origin {
                        Origin::Source(name) => {
                            prop_assert!(!SOURCES.iter().find(|(s, _)| *s == name).unwrap().1);
                            prop_assert!(steps[p.hops[0]].inputs.iter().any(|x| x == name));
                        }
                        Origin::ToolOutput(j) => {
                            prop_assert_eq!(p.hops[0], j);
                            prop_assert!(!tools[j].trusted_output);
                            prop_assert!(p.hops.len() > 1);
                        }
                    }
                    for w in p.hops.windows(2) {
                        prop_assert!(reads(&steps, w[1], w[0]));
                        prop_assert!(out[w[0]]);
                    }
                    let text = p.render(&steps);
                    prop_assert!(text.ends_with(&steps[p.step()].id));
                }
            }
        }
    }
}

/// JSON-ish text: braces, brackets, keys of the format, sources, ids, junk.
fn jsonish() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"steps\"",
        "\"id\"",
        "\"tool\"",
        "\"inputs\"",
        "\"a\"",
        "\"b\"",
        "\"source:slack\"",
        "\"source:agent\"",
        "\"source:x\"",
        "\"t0\"",
        "\"t1\"",
        "1",
        "null",
        "true",
        "\"\"",
        " ",
        "\"\\u0000\"",
        "\"é\"",
    ]);
    prop::collection::vec(token, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20000))]

    /// Whatever the text, the parser and the analysis answer (a declaration or an error), and
    /// never panic; an accepted declaration's tools are asked for once per step.
    #[test]
    fn any_text_is_answered(text in jsonish()) {
        if let Ok(steps) = flow::parse(&text) {
            let mut asked = 0;
            let r = flow::analyze(&steps, |name| {
                asked += 1;
                (name == "t0").then_some(ToolInfo { effect: Effect::Financial, trusted_output: true })
            });
            if r.is_ok() {
                prop_assert_eq!(asked, steps.len());
            }
        }
    }

    /// Arbitrary JSON values of the right overall shape.
    #[test]
    fn any_value_is_answered(v in json_value()) {
        let doc = serde_json::json!({ "steps": v });
        if let Ok(steps) = flow::from_value(&doc) {
            let _ = flow::analyze(&steps, |_| Some(ToolInfo { effect: Effect::ReversibleWrite, trusted_output: false }));
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        prop::sample::select(vec!["a", "b", "source:slack", "source:nope", "", "t"])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec!["id", "tool", "inputs", "x"]),
                    inner
                ),
                0..4
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}
