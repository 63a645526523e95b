//! The labelset's tests: canonical text, parse errors, the set algebra, the barrier's and the
//! scopes' questions.

use super::*;

fn ls(s: &str) -> Vec<u8> {
    parse(s.as_bytes()).unwrap()
}
fn text(b: &[u8]) -> String {
    LabelSet::from_body(b).unwrap().to_text()
}

#[test]
fn canonical_text() {
    assert_eq!(text(&ls("{}")), "{}");
    assert_eq!(text(&ls(" { } ")), "{}");
    assert_eq!(
        text(&ls(
            "{ tag:pii , origin:slack,area:acme/platform, tag:pii }"
        )),
        "{area:acme/platform,origin:slack,tag:pii}"
    );
    assert_eq!(text(&ls("{\"origin:slack\"}")), "{origin:slack}");
}

#[test]
fn parse_errors() {
    let e = |s: &str| parse(s.as_bytes()).unwrap_err();
    assert_eq!(e("").problem, Problem::MissingOpenBrace);
    assert_eq!(e("origin:slack").problem, Problem::MissingOpenBrace);
    assert_eq!(e("{origin:slack").problem, Problem::MissingCloseBrace);
    assert_eq!(e("{origin:slack").position, 14);
    assert_eq!(e("{tag:a,,tag:b}").problem, Problem::EmptyElement);
    assert_eq!(e("{tag:a,}").problem, Problem::EmptyElement);
    assert_eq!(e("{tag:a,}").position, 8);
    assert_eq!(e("{,tag:a}").problem, Problem::EmptyElement);
    assert_eq!(e("{tag:a}}").problem, Problem::TrailingGarbage);
    assert_eq!(e("{{tag:a}}").problem, Problem::UnexpectedBrace { ch: '{' });
    assert_eq!(e("{tag:a tag:b}").problem, Problem::MissingComma);
    assert_eq!(e("{\"tag:a}").problem, Problem::BadQuote);
    assert!(matches!(
        e("{secret:x}").problem,
        Problem::UnknownNamespace { .. }
    ));
    assert_eq!(e("{tag:a, area:acme}").position, 14);
    assert!(matches!(
        e("{origin: slack}").problem,
        Problem::EmptySegment
    ));
}

#[test]
fn algebra() {
    let a = ls("{area:acme/platform,origin:slack}");
    let b = ls("{origin:slack}");
    let (sa, sb) = (
        LabelSet::from_body(&a).unwrap(),
        LabelSet::from_body(&b).unwrap(),
    );
    assert!(sa.is_superset(sb));
    assert!(!sb.is_superset(sa));
    assert!(sa.overlaps(sb));
    assert!(sa.contains(&label::parse(b"origin:slack").unwrap()));
    assert!(!sa.contains(&label::parse(b"origin:tool").unwrap()));
    assert_eq!(
        text(&sa.union(LabelSet::from_body(&ls("{tag:x,origin:slack}")).unwrap())),
        "{area:acme/platform,origin:slack,tag:x}"
    );
    assert_eq!(text(&sa.origins()), "{origin:slack}");
    assert!(!sa.is_trusted());
    assert!(sb.carried_by(&scope::parse(b"globex").unwrap()));
}

#[test]
fn barrier_and_scope() {
    let set = ls("{area:acme/platform,company:acme,origin:slack}");
    let s = LabelSet::from_body(&set).unwrap();
    let sc = |t: &str| scope::parse(t.as_bytes()).unwrap();
    assert!(s.carried_by(&sc("acme")));
    assert!(s.carried_by(&sc("*")));
    assert!(!s.carried_by(&sc("acme/platform")));
    assert_eq!(s.scope(), Some(&sc("acme")[..]));
    assert_eq!(text(&s.escaping(&sc("acme/platform"))), "{company:acme}");
    let inst = ls("{installation,company:acme}");
    let i = LabelSet::from_body(&inst).unwrap();
    assert!(!i.carried_by(&sc("acme")));
    assert!(i.carried_by(&sc("*")));
    assert_eq!(i.scope(), Some(&b""[..]));
    assert_eq!(LabelSet::from_body(&ls("{tag:x}")).unwrap().scope(), None);
}
