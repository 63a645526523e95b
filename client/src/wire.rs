//! The wire forms and the `postgres-types` (tokio-postgres) implementations.
//!
//! Binary form of both types (`scope_send`/`scope_recv`, `labelset_send`/`labelset_recv`):
//! one version byte, then the text form. Text form: what `scope_out`/`labelset_out` print.

use crate::{Error, LabelSet, Scope};
use bytes::BytesMut;
use postgres_types::{to_sql_checked, FromSql, IsNull, ToSql, Type};

/// The version byte that starts the binary form. The extension's receive functions refuse any
/// other (22P03), and so does this crate: a new version means a new layout, not a new label.
pub const FORMAT_VERSION: u8 = 1;

/// Split a binary message into its text form, refusing other versions.
pub(crate) fn binary_text<'a>(raw: &'a [u8], type_name: &'static str) -> Result<&'a [u8], Error> {
    match raw.split_first() {
        Some((&FORMAT_VERSION, text)) => Ok(text),
        Some((&version, _)) => Err(Error::UnsupportedVersion { type_name, version }),
        None => Err(Error::Empty { type_name }),
    }
}

/// A `text` or `varchar` column or parameter carries the plain text form (no version byte), so
/// a value can be bound to `$1::text` or read from `scope::text` and is validated all the same.
fn is_text(ty: &Type) -> bool {
    matches!(*ty, Type::TEXT | Type::VARCHAR)
}

/// Both types share every line of the implementations but their names, and a blanket impl over
/// a private trait is not allowed for foreign traits on local types: hence a macro.
macro_rules! postgres_impls {
    ($t:ty) => {
        impl<'a> FromSql<'a> for $t {
            fn from_sql(
                ty: &Type,
                raw: &'a [u8],
            ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
                let text = if is_text(ty) {
                    raw
                } else {
                    binary_text(raw, <$t>::TYPE_NAME)?
                };
                Ok(<$t>::from_text(text)?)
            }

            /// Extension types have no fixed OID: recognise them by name (in any schema).
            fn accepts(ty: &Type) -> bool {
                ty.name() == <$t>::TYPE_NAME || is_text(ty)
            }
        }

        impl ToSql for $t {
            fn to_sql(
                &self,
                ty: &Type,
                out: &mut BytesMut,
            ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
                let mut buf = Vec::with_capacity(64);
                if !is_text(ty) {
                    buf.push(FORMAT_VERSION);
                }
                self.write_text(&mut buf);
                out.extend_from_slice(&buf);
                Ok(IsNull::No)
            }

            fn accepts(ty: &Type) -> bool {
                <$t as FromSql>::accepts(ty)
            }

            to_sql_checked!();
        }
    };
}

postgres_impls!(Scope);
postgres_impls!(LabelSet);

#[cfg(test)]
mod tests {
    use super::*;
    use postgres_types::Kind;

    fn ty(name: &str) -> Type {
        // An OID no built-in type has, as the extension's types get at CREATE EXTENSION.
        Type::new(name.into(), 90_001, Kind::Simple, "public".into())
    }

    fn encode<T: ToSql>(v: &T, ty: &Type) -> Vec<u8> {
        let mut out = BytesMut::new();
        v.to_sql_checked(ty, &mut out).unwrap();
        out.to_vec()
    }

    #[test]
    fn binary_form() {
        let s: Scope = "acme/platform".parse().unwrap();
        assert_eq!(encode(&s, &ty("scope")), b"\x01acme/platform");
        assert_eq!(encode(&Scope::installation(), &ty("scope")), b"\x01*");
        assert_eq!(encode(&s, &Type::TEXT), b"acme/platform");
        let l: LabelSet = "{tag:a}".parse().unwrap();
        // What `SELECT labelset_send('{tag:a}')` returns.
        assert_eq!(encode(&l, &ty("labelset")), b"\x01{tag:a}");
        assert_eq!(
            Scope::from_sql(&ty("scope"), b"\x01acme")
                .unwrap()
                .to_string(),
            "acme"
        );
        assert_eq!(
            LabelSet::from_sql(&ty("labelset"), b"\x01{ tag:b,tag:a }")
                .unwrap()
                .to_string(),
            "{tag:a,tag:b}"
        );
        assert_eq!(
            LabelSet::from_sql(&Type::VARCHAR, b"{}").unwrap(),
            LabelSet::new()
        );
    }

    #[test]
    fn refusals() {
        let err =
            |r: Result<Scope, Box<dyn std::error::Error + Sync + Send>>| r.unwrap_err().to_string();
        assert_eq!(
            err(Scope::from_sql(&ty("scope"), b"\x02acme")),
            "unsupported binary format version 2 for type scope (this client reads version 1)"
        );
        assert_eq!(
            err(Scope::from_sql(&ty("scope"), b"")),
            "empty binary message for type scope"
        );
        assert!(err(Scope::from_sql(&ty("scope"), b"\x01acme/")).contains("Trailing \"/\""));
        // Text columns carry no version byte: one there is a bad character, not a version.
        assert!(Scope::from_sql(&Type::TEXT, b"\x01acme").is_err());
        assert!(LabelSet::from_sql(&ty("labelset"), b"\x01{secret:x}").is_err());
        assert!(LabelSet::from_sql(&ty("labelset"), b"\x01{tag:\xff}").is_err());
    }

    #[test]
    fn accepts_by_name() {
        assert!(<Scope as FromSql>::accepts(&ty("scope")));
        assert!(<Scope as ToSql>::accepts(&Type::TEXT));
        assert!(!<Scope as FromSql>::accepts(&ty("labelset")));
        assert!(!<LabelSet as ToSql>::accepts(&ty("scope")));
        assert!(!<LabelSet as FromSql>::accepts(&Type::BYTEA));
        let mut out = BytesMut::new();
        assert!(Scope::installation()
            .to_sql_checked(&Type::INT4, &mut out)
            .is_err());
    }
}
