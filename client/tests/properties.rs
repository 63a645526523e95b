//! Every valid value survives every wire form unchanged, and nothing decoded from arbitrary
//! bytes is anything but a valid, canonical value.

use bytes::BytesMut;
use pg_labels_types::{LabelSet, Scope};
use postgres_types::{FromSql, Kind, ToSql, Type};
use proptest::prelude::*;

fn segment() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9_-]{0,8}"
}

fn scope_text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("*".to_string()),
        6 => prop::collection::vec(segment(), 1..5).prop_map(|v| v.join("/")),
    ]
}

fn label_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("installation".to_string()),
        segment().prop_map(|s| format!("company:{s}")),
        prop::collection::vec(segment(), 2..4).prop_map(|v| format!("area:{}", v.join("/"))),
        (
            prop::sample::select(vec!["slack", "webhook", "event", "tool"]),
            prop::collection::vec("[A-Za-z0-9][A-Za-z0-9._-]{0,8}", 0..3),
        )
            .prop_map(|(src, rest)| {
                std::iter::once(src.to_string())
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .prop_map(|p| format!("origin:{p}")),
        segment().prop_map(|s| format!("tag:{s}")),
    ]
}

/// Labels in any order, with duplicates, as a literal with random spacing.
fn labelset_literal() -> impl Strategy<Value = (Vec<String>, String)> {
    prop::collection::vec((label_text(), " {0,2}"), 0..8).prop_map(|v| {
        let literal = format!(
            "{{{}}}",
            v.iter()
                .map(|(l, sp)| format!("{sp}{l}{sp}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        (v.into_iter().map(|(l, _)| l).collect(), literal)
    })
}

fn ty(name: &str) -> Type {
    Type::new(name.into(), 90_001, Kind::Simple, "public".into())
}

fn round_trip<T>(v: &T, ty: &Type) -> T
where
    T: ToSql + for<'a> FromSql<'a>,
{
    let mut out = BytesMut::new();
    v.to_sql_checked(ty, &mut out).unwrap();
    T::from_sql(ty, &out).unwrap()
}

proptest! {
    #[test]
    fn scope_round_trips(text in scope_text()) {
        let s: Scope = text.parse().unwrap();
        prop_assert_eq!(s.to_string(), text);
        prop_assert_eq!(s.to_string().parse::<Scope>().unwrap(), s.clone());
        prop_assert_eq!(round_trip(&s, &ty("scope")), s.clone());
        prop_assert_eq!(round_trip(&s, &Type::TEXT), s.clone());
        if let Some(p) = s.parent() {
            prop_assert!(p.reaches(&s) && !s.reaches(&p));
        }
    }

    #[test]
    fn labelset_round_trips((labels, literal) in labelset_literal()) {
        let l: LabelSet = literal.parse().unwrap();
        prop_assert_eq!(&LabelSet::from_labels(&labels).unwrap(), &l);
        // The canonical text is sorted, without duplicates, and parses back to the same set.
        let canonical = l.to_string();
        prop_assert_eq!(canonical.parse::<LabelSet>().unwrap(), l.clone());
        let listed: Vec<String> = l.labels().collect();
        let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
        prop_assert_eq!(listed.len(), distinct.len());
        prop_assert_eq!(l.len(), distinct.len());
        prop_assert_eq!(&LabelSet::from_labels(&listed).unwrap(), &l);
        prop_assert!(labels.iter().all(|x| l.has(x)));
        prop_assert_eq!(round_trip(&l, &ty("labelset")), l.clone());
        prop_assert_eq!(round_trip(&l, &Type::VARCHAR), l.clone());
        prop_assert_eq!(l.union(&l), l.clone());
        prop_assert!(l.contains(&l) && l.contains(&LabelSet::new()));
    }

    #[test]
    fn decoded_bytes_are_valid(raw in prop::collection::vec(any::<u8>(), 0..40), text in "[{}a-z:/, *\"]{0,30}") {
        // Whatever comes off the wire, a value that decodes is canonical: it prints the text
        // that parses back to it, and encodes to exactly version byte + that text.
        for raw in [raw, [&[1u8][..], text.as_bytes()].concat()] {
            if let Ok(s) = Scope::from_sql(&ty("scope"), &raw) {
                prop_assert_eq!(s.to_string().parse::<Scope>().unwrap(), s);
            }
            if let Ok(l) = LabelSet::from_sql(&ty("labelset"), &raw) {
                let mut out = BytesMut::new();
                l.to_sql_checked(&ty("labelset"), &mut out).unwrap();
                let text = l.to_string();
                prop_assert_eq!(&out[1..], text.as_bytes());
                prop_assert_eq!(l.to_string().parse::<LabelSet>().unwrap(), l);
            }
        }
    }
}
