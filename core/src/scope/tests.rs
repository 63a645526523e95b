//! The scope grammar's tests: the seed's table, the scope functions, an order that keeps
//! subtrees contiguous, errors.

use super::*;

fn p(s: &str) -> Vec<u8> {
    parse(s.as_bytes()).unwrap()
}

#[test]
fn seed_table() {
    // The seed's four rows: a run scope reaching the scope of area:acme/platform.
    let data = p("acme/platform");
    assert!(reaches(&p("acme/platform"), &data));
    assert!(reaches(&p("acme"), &data));
    assert!(!reaches(&p("acme/finance"), &data));
    assert!(!reaches(&p("globex/platform"), &data));
    assert!(reaches(&p("*"), &data));
    assert!(!reaches(&p("acme/platform"), &p("acme")));
    assert!(!reaches(&p("acme/plat"), &p("acme/platform")));
}

#[test]
fn functions() {
    assert_eq!(depth(&p("*")), 0);
    assert_eq!(depth(&p("acme/platform/infra")), 3);
    assert_eq!(parent(&p("acme/platform")), Some(&p("acme")[..]));
    assert_eq!(parent(&p("acme")), Some(&b""[..]));
    assert_eq!(parent(&p("*")), None);
    assert_eq!(lca(&p("acme/x"), &p("acme/y")), &p("acme")[..]);
    assert_eq!(lca(&p("acme/x"), &p("acme/xy")), &p("acme")[..]);
    assert_eq!(lca(&p("acme"), &p("acme2")), &b""[..]);
    assert_eq!(lca(&p("acme"), &p("acme/x/y")), &p("acme")[..]);
    assert_eq!(lca(&p("acme/x/y"), &p("acme")), &p("acme")[..]);
    assert_eq!(to_text(&p("acme/platform")), "acme/platform");
    assert_eq!(to_text(&p("*")), "*");
}

#[test]
fn order_keeps_subtrees_contiguous() {
    let mut v: Vec<Vec<u8>> = ["acme-x", "acme/platform", "acme", "acme/a-b", "acme0", "*"]
        .iter()
        .map(|s| p(s))
        .collect();
    v.sort();
    let t: Vec<String> = v.iter().map(|x| to_text(x)).collect();
    assert_eq!(
        t,
        ["*", "acme", "acme/a-b", "acme/platform", "acme-x", "acme0"]
    );
}

#[test]
fn errors() {
    let e = |s: &str| parse(s.as_bytes()).unwrap_err();
    assert_eq!(e("").problem, Problem::EmptyScope);
    assert_eq!(e("/acme").problem, Problem::LeadingSlash);
    assert_eq!(e("acme/").problem, Problem::TrailingSlash);
    assert_eq!(e("acme/").position, 5);
    assert_eq!(e("acme//x").problem, Problem::EmptySegment);
    assert_eq!(e("acme//x").position, 6);
    assert!(matches!(e("Acme").problem, Problem::BadChar { .. }));
    assert!(matches!(e("acme x").problem, Problem::BadChar { .. }));
    assert_eq!(e("acme x").position, 5);
    assert!(matches!(e("_x").problem, Problem::BadStart { .. }));
    assert!(matches!(
        e(&"a".repeat(64)).problem,
        Problem::SegmentTooLong { len: 64, .. }
    ));
    assert!(parse("a".repeat(63).as_bytes()).is_ok());
    let deep = vec!["a"; 17].join("/");
    assert_eq!(e(&deep).problem, Problem::TooManySegments { max: 16 });
    assert_eq!(e(&deep).position, 33);
    assert!(parse(vec!["a"; 16].join("/").as_bytes()).is_ok());
    assert_eq!(e("é").position, 1);
    assert_eq!(e("aé/").position, 2);
}
