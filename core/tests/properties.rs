//! Property tests of the core, checked against a plain model (sets of label strings, paths as
//! vectors of segments).
//!
//! `FUZZ_CASES` (default 200000) sets how many inputs each parser fuzz property runs.

use pg_labels_core::crossing::{self, Crossing};
use pg_labels_core::label::{self, Label};
use pg_labels_core::labelset::{self, LabelSet};
use pg_labels_core::scope;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn segment() -> impl Strategy<Value = String> {
    // A small alphabet makes shared prefixes, siblings and '-' vs '/' neighbours common.
    prop_oneof![
        3 => "[ab][ab0_-]{0,2}",
        1 => "[a-z0-9][a-z0-9_-]{0,12}",
    ]
}

fn scope_text() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..5).prop_map(|v| {
        if v.is_empty() {
            "*".to_string()
        } else {
            v.join("/")
        }
    })
}

fn label_text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("installation".to_string()),
        3 => segment().prop_map(|s| format!("company:{s}")),
        4 => prop::collection::vec(segment(), 2..5).prop_map(|v| format!("area:{}", v.join("/"))),
        3 => (
            prop::sample::select(label::ORIGIN_SOURCES.to_vec()),
            prop::collection::vec("[A-Za-z0-9][A-Za-z0-9._-]{0,4}", 0..3)
        )
            .prop_map(|(k, sub)| {
                let mut s = format!("origin:{k}");
                for p in sub {
                    s.push('/');
                    s.push_str(&p);
                }
                s
            }),
        2 => segment().prop_map(|s| format!("tag:{s}")),
    ]
}

fn label_list() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(label_text(), 0..7)
}

/// A literal for the list, in a random order, with duplicates and random whitespace.
fn messy_literal() -> impl Strategy<Value = (Vec<String>, String)> {
    (label_list(), any::<u64>()).prop_map(|(labels, seed)| {
        let mut v = labels.clone();
        let mut r = seed;
        let mut next = || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r
        };
        if !v.is_empty() && next() % 2 == 0 {
            let i = (next() % v.len() as u64) as usize;
            v.push(v[i].clone());
        }
        for i in (1..v.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        let ws = |n: u64| [" ", "", "\t", "\n ", ""][(n % 5) as usize];
        let mut s = String::from(ws(next()));
        s.push('{');
        for (i, l) in v.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(ws(next()));
            if next() % 7 == 0 {
                s.push('"');
                s.push_str(l);
                s.push('"');
            } else {
                s.push_str(l);
            }
            s.push_str(ws(next()));
        }
        s.push('}');
        s.push_str(ws(next()));
        (labels, s)
    })
}

fn body(labels: &[String]) -> Vec<u8> {
    labelset::from_entries(
        labels
            .iter()
            .map(|l| label::parse(l.as_bytes()).unwrap())
            .collect(),
    )
}

fn model(labels: &[String]) -> BTreeSet<String> {
    labels.iter().cloned().collect()
}

fn set_of(b: &[u8]) -> BTreeSet<String> {
    LabelSet::from_body(b)
        .unwrap()
        .iter()
        .map(|l| l.to_text())
        .collect()
}

fn path(s: &str) -> Vec<u8> {
    scope::parse(s.as_bytes()).unwrap()
}

fn segs(s: &str) -> Vec<String> {
    if s == "*" {
        vec![]
    } else {
        s.split('/').map(str::to_string).collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scope_print_parse_identity(t in scope_text()) {
        let p = path(&t);
        prop_assert_eq!(scope::to_text(&p), t);
        prop_assert_eq!(scope::depth(&p), segs(&scope::to_text(&p)).len());
    }

    #[test]
    fn reaches_matches_model(a in scope_text(), b in scope_text()) {
        let (sa, sb) = (segs(&a), segs(&b));
        let model = sb.len() >= sa.len() && sb[..sa.len()] == sa[..];
        prop_assert_eq!(scope::reaches(&path(&a), &path(&b)), model);
    }

    #[test]
    fn reaches_is_a_partial_order(a in scope_text(), b in scope_text(), c in scope_text()) {
        let (a, b, c) = (path(&a), path(&b), path(&c));
        prop_assert!(scope::reaches(&a, &a));
        if scope::reaches(&a, &b) && scope::reaches(&b, &a) {
            prop_assert_eq!(&a, &b);
        }
        if scope::reaches(&a, &b) && scope::reaches(&b, &c) {
            prop_assert!(scope::reaches(&a, &c));
        }
    }

    #[test]
    fn order_is_segment_order_and_subtrees_are_ranges(a in scope_text(), b in scope_text()) {
        let (pa, pb) = (path(&a), path(&b));
        prop_assert_eq!(scope::cmp(&pa, &pb), segs(&a).cmp(&segs(&b)));
        // b is in a's subtree iff a <= b < upper(a)
        let in_range = match scope::subtree_upper(&pa) {
            None => true,
            Some(u) => pa <= pb && pb < u,
        };
        prop_assert_eq!(scope::reaches(&pa, &pb), in_range);
    }

    #[test]
    fn lca_is_the_deepest_common_ancestor(a in scope_text(), b in scope_text()) {
        let (pa, pb) = (path(&a), path(&b));
        let l = scope::lca(&pa, &pb);
        prop_assert!(scope::reaches(l, &pa) && scope::reaches(l, &pb));
        let (sa, sb) = (segs(&a), segs(&b));
        let common = sa.iter().zip(&sb).take_while(|(x, y)| x == y).count();
        prop_assert_eq!(scope::depth(l), common);
        prop_assert_eq!(scope::lca(&pb, &pa), l);
        if let Some(p) = scope::parent(&pa) {
            prop_assert!(scope::reaches(p, &pa) && p != &pa[..]);
            prop_assert_eq!(scope::depth(p) + 1, scope::depth(&pa));
        }
    }

    #[test]
    fn labelset_parse_print_is_canonical((labels, lit) in messy_literal()) {
        let b = labelset::parse(lit.as_bytes()).unwrap();
        prop_assert_eq!(&b, &body(&labels));
        let text = LabelSet::from_body(&b).unwrap().to_text();
        // printing gives a literal that parses back to the same value, and printing that
        // again gives the same text
        let again = labelset::parse(text.as_bytes()).unwrap();
        prop_assert_eq!(&again, &b);
        prop_assert_eq!(LabelSet::from_body(&again).unwrap().to_text(), text.clone());
        prop_assert_eq!(set_of(&b), model(&labels));
        prop_assert!(!text.contains(' '));
    }

    #[test]
    fn label_print_parse_identity(l in label_text()) {
        let e = label::parse(l.as_bytes()).unwrap();
        prop_assert_eq!(Label(&e).to_text(), l);
    }

    #[test]
    fn union_is_a_semilattice(a in label_list(), b in label_list(), c in label_list()) {
        let (ba, bb, bc) = (body(&a), body(&b), body(&c));
        let (sa, sb, sc) = (
            LabelSet::from_body(&ba).unwrap(),
            LabelSet::from_body(&bb).unwrap(),
            LabelSet::from_body(&bc).unwrap(),
        );
        let ab = sa.union(sb);
        prop_assert_eq!(&ab, &sb.union(sa));
        prop_assert_eq!(&sa.union(sa), &ba);
        let ab_c = LabelSet::from_body(&ab).unwrap().union(sc);
        let bc_ = sb.union(sc);
        let a_bc = sa.union(LabelSet::from_body(&bc_).unwrap());
        prop_assert_eq!(&ab_c, &a_bc);
        let m: BTreeSet<String> = model(&a).union(&model(&b)).cloned().collect();
        prop_assert_eq!(set_of(&ab), m);
    }

    #[test]
    fn set_predicates_match_model(a in label_list(), b in label_list()) {
        let (ba, bb) = (body(&a), body(&b));
        let (sa, sb) = (LabelSet::from_body(&ba).unwrap(), LabelSet::from_body(&bb).unwrap());
        let (ma, mb) = (model(&a), model(&b));
        prop_assert_eq!(sa.is_superset(sb), ma.is_superset(&mb));
        prop_assert_eq!(sa.overlaps(sb), !ma.is_disjoint(&mb));
        prop_assert_eq!(ba == bb, ma == mb);
        for l in &b {
            prop_assert_eq!(sa.contains(&label::parse(l.as_bytes()).unwrap()), ma.contains(l));
        }
        // byte order of bodies is element-wise order of the sorted entry lists
        let ea: Vec<Vec<u8>> = sa.iter().map(|l| l.0.to_vec()).collect();
        let eb: Vec<Vec<u8>> = sb.iter().map(|l| l.0.to_vec()).collect();
        prop_assert_eq!(ba.cmp(&bb), ea.cmp(&eb));
        prop_assert_eq!(sa.is_trusted(), !a.iter().any(|l| l.starts_with("origin:")));
        prop_assert_eq!(set_of(&sa.origins()),
            ma.iter().filter(|l| l.starts_with("origin:")).cloned().collect::<BTreeSet<_>>());
    }

    /// `text_len` is what the output function will write, so the buffer is reserved once.
    #[test]
    fn text_len_is_the_text_forms_length(a in label_list()) {
        let ba = body(&a);
        let set = LabelSet::from_body(&ba).unwrap();
        let mut out = Vec::new();
        set.write_text(&mut out);
        prop_assert_eq!(set.text_len(), out.len());
        for l in set.iter() {
            prop_assert_eq!(l.text_len(), l.to_text().len());
        }
    }

    #[test]
    fn barrier_agrees_with_labelset_scope(s in scope_text(), a in label_list()) {
        let (p, ba) = (path(&s), body(&a));
        let set = LabelSet::from_body(&ba).unwrap();
        let carried = set.carried_by(&p);
        // the rule, straight from the seed: the scope reaches every scope label's scope
        let model = set.iter().all(|l| l.scope().is_none_or(|ls| scope::reaches(&p, ls)));
        prop_assert_eq!(carried, model);
        match set.scope() {
            Some(lcs) => prop_assert_eq!(carried, scope::reaches(&p, lcs)),
            None => prop_assert!(carried),
        }
        prop_assert_eq!(set.escaping(&p).is_empty(), carried);
        for l in LabelSet::from_body(&set.escaping(&p)).unwrap().iter() {
            prop_assert!(!scope::reaches(&p, l.scope().unwrap()));
        }
        // a run's own scope label is always carried by its scope, and by nothing narrower
        let own = labelset::from_entries(vec![label::of_scope(&p)]);
        prop_assert!(LabelSet::from_body(&own).unwrap().carried_by(&p));
        prop_assert_eq!(LabelSet::from_body(&own).unwrap().scope(), Some(&p[..]));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Crossings against the model: a label is covered for a target when some crossing's
    /// from_scope reaches the label's scope and its to_scope reaches the target. Covering is
    /// monotone in the crossings, never rewrites a label, and one crossing covering all implies
    /// each is covered.
    #[test]
    fn crossings_cover_exactly_what_the_model_says(
        target in scope_text(),
        labels in label_list(),
        crossings in prop::collection::vec((scope_text(), scope_text()), 0..4),
        extra in (scope_text(), scope_text()),
    ) {
        let t = path(&target);
        let b = body(&labels);
        let escaping = LabelSet::from_body(&b).unwrap().escaping(&t);
        let esc = LabelSet::from_body(&escaping).unwrap();
        let paths: Vec<(Vec<u8>, Vec<u8>)> =
            crossings.iter().map(|(f, to)| (path(f), path(to))).collect();
        let cs: Vec<Crossing> = paths.iter().enumerate()
            .map(|(i, (f, to))| Crossing { id: 10 + i as i64, from: f, to })
            .collect();
        let model_covers = |c: &Crossing, l: Label| {
            let ls = l.scope().unwrap();
            scope::reaches(c.to, &t) && scope::reaches(c.from, ls)
        };
        let each = crossing::cover_each(esc, &t, &cs);
        let all_covered = esc.iter().all(|l| cs.iter().any(|c| model_covers(c, l)));
        prop_assert_eq!(each.is_ok(), all_covered);
        match &each {
            Ok(ids) => {
                // ascending, distinct, each one of the given crossings and needed by a label
                prop_assert!(ids.windows(2).all(|w| w[0] < w[1]));
                for id in ids {
                    let c = cs.iter().find(|c| c.id == *id).unwrap();
                    prop_assert!(esc.iter().any(|l| model_covers(c, l)));
                }
                prop_assert_eq!(ids.is_empty(), esc.is_empty());
            }
            Err(uncovered) => {
                // exactly the labels no crossing covers, a subset of what escaped
                let u = set_of(uncovered);
                let m: BTreeSet<String> = esc.iter()
                    .filter(|l| !cs.iter().any(|c| model_covers(c, *l)))
                    .map(|l| l.to_text()).collect();
                prop_assert_eq!(u, m);
            }
        }
        if !esc.is_empty() {
            let one = crossing::cover_all(esc, &t, &cs);
            let model_one = cs.iter().find(|c| esc.iter().all(|l| model_covers(c, l))).map(|c| c.id);
            prop_assert_eq!(one, model_one);
            if one.is_some() {
                prop_assert!(each.is_ok());
            }
        }
        // one more crossing never uncovers anything
        let (xf, xt) = (path(&extra.0), path(&extra.1));
        let mut more = cs.clone();
        more.push(Crossing { id: 99, from: &xf, to: &xt });
        if each.is_ok() {
            prop_assert!(crossing::cover_each(esc, &t, &more).is_ok());
        }
    }
}

fn fuzz_cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

/// Strings over the characters that matter to the grammars, with keywords mixed in, so that
/// the fuzzer gets past the first check.
fn near_miss() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => prop::sample::select(vec![
            "{", "}", ",", "\"", ":", "/", " ", "*", "a", "b", "A", "_", "-", ".", "0",
            "é", "\u{0}", "\u{1}", "\t",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        2 => prop::sample::select(vec![
            "company:", "area:", "origin:", "tag:", "installation", "slack", "webhook",
            "acme", "acme/platform", "origin:slack/T01", "area:acme/x",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

fn check_parsers(input: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(p) = scope::parse(input) {
        let t = scope::to_text(&p);
        prop_assert_eq!(t.as_bytes(), input);
    }
    if let Ok(e) = label::parse(input) {
        let t = Label(&e).to_text();
        prop_assert_eq!(t.as_bytes(), input);
    }
    match labelset::parse(input) {
        Ok(b) => {
            let t = LabelSet::from_body(&b).unwrap().to_text();
            prop_assert_eq!(labelset::parse(t.as_bytes()).unwrap(), b);
        }
        Err(e) => {
            // positions point inside the input, or just past its end
            let chars = input.iter().filter(|&&c| (c & 0xC0) != 0x80).count();
            prop_assert!(e.position >= 1 && e.position <= chars + 1, "{:?}", e);
            let _ = e.to_string();
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fuzz_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..64)) {
        check_parsers(&input)?;
    }

    #[test]
    fn fuzz_near_misses(input in near_miss()) {
        check_parsers(&input)?;
    }
}
