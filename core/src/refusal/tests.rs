//! The refusal tables' tests: one SQLSTATE per rule and one spec per check; messages start
//! with their rule and stay short however many labels they are about.

use super::*;
use crate::rules::Effect;

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
