//! The crossings' tests: a crossing covers only inside both its scopes, and each label may use
//! its own crossing.

use super::*;
use crate::labelset;

fn p(s: &str) -> Vec<u8> {
    scope::parse(s.as_bytes()).unwrap()
}

fn set(s: &str) -> Vec<u8> {
    labelset::parse(s.as_bytes()).unwrap()
}

#[test]
fn covers_only_inside_both_scopes() {
    let (from, to) = (p("acme/finance"), p("acme/platform"));
    let c = Crossing {
        id: 1,
        from: &from,
        to: &to,
    };
    assert!(c.covers(&p("acme/finance"), &p("acme/platform")));
    assert!(c.covers(&p("acme/finance/ledger"), &p("acme/platform/infra")));
    // not for a run outside its to_scope, not even the parent
    assert!(!c.covers(&p("acme/finance"), &p("acme")));
    assert!(!c.covers(&p("acme/finance"), &p("acme/sales")));
    // not for data outside its from_scope
    assert!(!c.covers(&p("acme/hr"), &p("acme/platform")));
    assert!(!c.covers(&p("acme"), &p("acme/platform")));
    assert!(!c.covers(&[], &p("acme/platform")));
}

#[test]
fn each_label_may_use_its_own_crossing() {
    let (fin, hr, plat) = (p("acme/finance"), p("acme/hr"), p("acme/platform"));
    let cs = [
        Crossing {
            id: 7,
            from: &hr,
            to: &plat,
        },
        Crossing {
            id: 3,
            from: &fin,
            to: &plat,
        },
    ];
    let esc = set("{area:acme/finance,area:acme/hr,origin:slack,tag:x}");
    let esc = LabelSet::from_canonical(&esc);
    assert_eq!(cover_each(esc, &plat, &cs), Ok(vec![3, 7]));
    // no single crossing covers both
    assert_eq!(cover_all(esc, &plat, &cs), None);
    assert_eq!(
        cover_each(esc, &plat, &cs[..1]),
        Err(set("{area:acme/finance}"))
    );
    let one = set("{area:acme/finance/ledger}");
    assert_eq!(
        cover_all(LabelSet::from_canonical(&one), &plat, &cs),
        Some(3)
    );
    // nothing escaping needs nothing
    assert_eq!(cover_each(LabelSet::EMPTY, &plat, &[]), Ok(vec![]));
}
