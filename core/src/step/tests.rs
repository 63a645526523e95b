//! The step kinds' tests: kinds and decisions round-trip, every kind's shape.

use super::*;

#[test]
fn kinds_round_trip() {
    for k in Kind::ALL {
        assert_eq!(Kind::parse(k.name()), Some(k));
    }
    assert_eq!(Kind::parse("tool_call"), None);
}

#[test]
fn decisions() {
    use crate::rules::Decision;
    for d in [Decision::Allow, Decision::Ask, Decision::Block] {
        assert!(is_decision(d.name()));
    }
    assert!(is_decision("granted") && is_decision("denied"));
    assert!(!is_decision("Allow") && !is_decision("") && !is_decision("allowed"));
}

#[test]
fn shapes() {
    let only = |cols: &'static [Column]| move |c: Column| cols.contains(&c);
    assert!(check(Kind::Input, only(&[])).is_ok());
    assert!(check(Kind::ToolCalled, only(&[Column::Tool, Column::Args])).is_ok());
    // a tool call names no artifact, origin or digest; its decision is the database's
    let e = check(Kind::ToolCalled, only(&[Column::Tool, Column::OriginRun])).unwrap_err();
    assert_eq!((e.column, e.fill), (Column::OriginRun, Fill::Never));
    assert_eq!(
        e.to_string(),
        "a tool_called step does not carry origin_run"
    );
    let e = check(Kind::GateDecided, only(&[Column::Decision])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decision of a gate_decided step is written by the database"
    );
    // a context read names its artifact, and may state origin and digest (checked)
    let e = check(Kind::ContextRead, only(&[])).unwrap_err();
    assert_eq!(e.to_string(), "a context_read step needs artifact_id");
    assert!(check(
        Kind::ContextRead,
        only(&[Column::ArtifactId, Column::Digest, Column::OriginRun])
    )
    .is_ok());
    assert!(check(Kind::Input, only(&[Column::ArtifactId])).is_err());
    assert!(check(Kind::Planned, only(&[Column::RequestId])).is_err());
    // every kind refuses every database column from a writer
    for k in Kind::ALL {
        for c in Column::ALL {
            if fill(k, c) == Fill::Database {
                assert!(check(k, |x| x == c || fill(k, x) == Fill::Required).is_err());
            }
        }
    }
}

#[test]
fn an_expiry_is_finite_and_within_a_century() {
    let t = 850_000_000_000_000;
    assert!(expiry_in_range(t, t));
    assert!(expiry_in_range(t, t - 1));
    assert!(expiry_in_range(t, t + EXPIRY_RANGE));
    assert!(!expiry_in_range(t, t + EXPIRY_RANGE + 1));
    assert!(!expiry_in_range(t, t - EXPIRY_RANGE - 1));
    assert!(!expiry_in_range(t, i64::MAX));
    assert!(!expiry_in_range(t, i64::MIN));
}
