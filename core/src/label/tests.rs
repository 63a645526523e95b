//! The label grammar's tests: the grammar round-trips, and the scope of labels.

use super::*;
use crate::scope;

fn round(s: &str) -> String {
    Label(&parse(s.as_bytes()).unwrap()).to_text()
}

#[test]
fn grammar() {
    for s in [
        "installation",
        "company:acme",
        "area:acme/platform",
        "area:acme/platform/infra",
        "origin:slack",
        "origin:webhook",
        "origin:event",
        "origin:tool",
        "origin:slack/T01/C02",
        "origin:webhook/api.github.com",
        "tag:pii",
    ] {
        assert_eq!(round(s), s);
    }
    let err = |s: &str| parse(s.as_bytes()).unwrap_err().problem;
    assert!(matches!(
        err("company:acme/x"),
        Problem::CompanySegments { found: 2 }
    ));
    assert!(matches!(
        err("area:acme"),
        Problem::AreaSegments { found: 1 }
    ));
    assert!(matches!(err("origin:email"), Problem::UnknownOrigin { .. }));
    assert!(matches!(err("origin:Slack"), Problem::BadChar { .. }));
    assert!(matches!(err("secret:x"), Problem::UnknownNamespace { .. }));
    assert!(matches!(err("acme"), Problem::UnknownNamespace { .. }));
    assert!(matches!(err("installation:x"), Problem::InstallationValue));
    assert!(matches!(err("installationx"), Problem::InstallationValue));
    assert!(matches!(err("company:"), Problem::EmptySegment));
    assert!(matches!(err("tag:a/b"), Problem::TagSegments { found: 2 }));
    assert!(matches!(err(""), Problem::EmptyLabel));
}

#[test]
fn scope_of_labels() {
    let e = parse(b"area:acme/platform").unwrap();
    assert_eq!(Label(&e).scope(), Some(&b"acme\x01platform"[..]));
    let e = parse(b"installation").unwrap();
    assert_eq!(Label(&e).scope(), Some(&b""[..]));
    let e = parse(b"origin:slack").unwrap();
    assert_eq!(Label(&e).scope(), None);
    assert_eq!(
        of_scope(&scope::parse(b"acme").unwrap()),
        parse(b"company:acme").unwrap()
    );
}
