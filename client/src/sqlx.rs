//! sqlx support (feature `sqlx`): `Type`, `Encode` and `Decode` for Postgres.
//!
//! sqlx resolves a type named by [`PgTypeInfo::with_name`] to its OID when it first binds it,
//! which is what an extension type with no fixed OID needs. Parameters are always sent in
//! binary; results come in binary from prepared queries and in text from `raw_sql`, so
//! decoding handles both.

use crate::wire::{binary_text, FORMAT_VERSION};
use crate::{LabelSet, Scope};
use sqlx::error::BoxDynError;
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueFormat, PgValueRef, Postgres};
use sqlx::{Decode, Encode, Type, TypeInfo, ValueRef};

/// A text-typed value (a `scope::text` column) carries the plain text form in either format.
/// By OID: `==` on `PgTypeInfo` is deliberately loose (an unresolved type equals any name).
fn is_text(ty: &PgTypeInfo) -> bool {
    matches!(ty.oid(), Some(Oid(25 | 1043))) // text, varchar
}

/// sqlx names a resolved type by `oid::regtype::text`, which is schema-qualified when the
/// extension's schema is not on the search path: match the type name in any schema.
fn is_named(ty: &PgTypeInfo, name: &str) -> bool {
    let n = ty.name();
    n == name
        || n.strip_suffix(name)
            .is_some_and(|schema| schema.ends_with('.'))
}

macro_rules! sqlx_impls {
    ($t:ty) => {
        impl Type<Postgres> for $t {
            fn type_info() -> PgTypeInfo {
                PgTypeInfo::with_name(<$t>::TYPE_NAME)
            }

            fn compatible(ty: &PgTypeInfo) -> bool {
                is_named(ty, <$t>::TYPE_NAME) || is_text(ty)
            }
        }

        impl Encode<'_, Postgres> for $t {
            fn encode_by_ref(
                &self,
                buf: &mut PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, BoxDynError> {
                // The parameter is declared with `type_info()`, so it is always the binary form.
                buf.push(FORMAT_VERSION);
                self.write_text(buf);
                Ok(sqlx::encode::IsNull::No)
            }
        }

        impl<'r> Decode<'r, Postgres> for $t {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let text_typed = is_text(&value.type_info());
                let raw = value.as_bytes()?;
                let text = match value.format() {
                    PgValueFormat::Binary if !text_typed => binary_text(raw, <$t>::TYPE_NAME)?,
                    _ => raw,
                };
                Ok(<$t>::from_text(text)?)
            }
        }
    };
}

sqlx_impls!(Scope);
sqlx_impls!(LabelSet);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_encoding() {
        let named = |n| PgTypeInfo::with_name(n);
        assert!(<Scope as Type<Postgres>>::compatible(&named("scope")));
        assert!(<Scope as Type<Postgres>>::compatible(&named("ext.scope")));
        assert!(!<Scope as Type<Postgres>>::compatible(&named("myscope")));
        assert!(!<Scope as Type<Postgres>>::compatible(&named("labelset")));
        assert!(<LabelSet as Type<Postgres>>::compatible(
            &PgTypeInfo::with_oid(Oid(25))
        ));
        assert!(!<LabelSet as Type<Postgres>>::compatible(
            &PgTypeInfo::with_oid(Oid(17))
        ));

        let mut buf = PgArgumentBuffer::default();
        let l: LabelSet = "{tag:b,tag:a}".parse().unwrap();
        assert!(!Encode::<Postgres>::encode_by_ref(&l, &mut buf)
            .unwrap()
            .is_null());
        assert_eq!(&buf[..], b"\x01{tag:a,tag:b}");
    }
}
