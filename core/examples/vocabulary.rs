//! The vocabulary of pg_labels as the core defines it, printed as JSON for the copies outside
//! Rust to be checked against (tests/structure/vocabulary.py: the Python package's refusal
//! classes, the console's colours, the step kinds and effects named in SQL and the docs):
//!
//! ```sh
//! cargo run -q -p pg_labels_core --example vocabulary
//! ```
//!
//! - `rules`: each rule in the order it is checked, with its SQLSTATE, when it refuses, and
//!   its explanation: the HINT of a tool call it refuses (for `sealed`, of a change to the
//!   trail), which the Python package's class of the rule and the console show;
//! - `checks`: the checks that are not rules (constraint, SQLSTATE, table);
//! - `step_kinds`, `decisions`, `effects`: the values of `steps.kind`, `steps.decision` and
//!   `tools.effect`.

use pg_labels_core::refusal::{self, CHECKS, RULES};
use pg_labels_core::rules::{Effect, Rule};
use pg_labels_core::sqlstate;
use pg_labels_core::step::{Kind, DECISIONS};
use serde_json::{json, Value};

/// The HINT that explains `rule`: a refused tool call's (a change to the trail's for `sealed`,
/// which refuses no call).
fn explanation(rule: Rule) -> String {
    let refused = match rule {
        Rule::Sealed => refusal::sealed("steps", String::new(), String::new()),
        _ => refusal::tool_call("", b"", Some("t"), Some(Effect::Financial), rule, b"", b""),
    };
    refused.hint.expect("every rule's refusal has a hint")
}

fn main() {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "name": r.rule.name(),
                "sqlstate": sqlstate::text(&r.sqlstate),
                "when": r.when,
                "explanation": explanation(r.rule),
            })
        })
        .collect();
    let checks: Vec<Value> = CHECKS
        .iter()
        .map(|c| {
            json!({
                "constraint": c.constraint,
                "sqlstate": sqlstate::text(&c.sqlstate),
                "table": c.table,
            })
        })
        .collect();
    let vocabulary = json!({
        "rules": rules,
        "checks": checks,
        "step_kinds": Kind::ALL.map(Kind::name),
        "decisions": DECISIONS,
        "effects": Effect::ALL.map(Effect::name),
    });
    println!("{vocabulary:#}");
}
