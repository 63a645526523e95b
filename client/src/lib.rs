//! Typed Rust values for the SQL types of the pg_labels extension, `scope` and `labelset`.
//!
//! [`Scope`] and [`LabelSet`] are always valid and canonical: every way of making one (parsing
//! text, decoding what the server sent) goes through the grammar of `pg_labels_core`, the same
//! code the extension runs, so a value the server would refuse never exists on this side and
//! the text a value prints is the text the server prints.
//!
//! With tokio-postgres (through `postgres-types`) both types bind as parameters and read as
//! results of columns of type `scope` / `labelset` (binary: a version byte `0x01`, then the
//! text form) and of type `text` / `varchar` (the plain text form). Rows of
//! `simple_query` come as text: parse them with [`str::parse`]. With the cargo feature `sqlx`
//! they are also sqlx `Type`/`Encode`/`Decode` for Postgres.
//!
//! ```
//! use pg_labels_types::{LabelSet, Scope};
//!
//! let run: Scope = "acme/platform".parse().unwrap();
//! let data: LabelSet = "{tag:pii, area:acme/platform/infra}".parse().unwrap();
//! assert_eq!(data.to_string(), "{area:acme/platform/infra,tag:pii}");
//! assert!(run.carries(&data));
//! assert!(!"acme/finance".parse::<Scope>().unwrap().carries(&data));
//! ```
#![forbid(unsafe_code)]

mod error;
mod labelset;
mod scope;
#[cfg(feature = "sqlx")]
mod sqlx;
mod wire;

pub use error::Error;
pub use labelset::{LabelSet, Labels};
/// Every SQLSTATE pg_labels raises (`23L01`..`23L05` for its rules), to match refusals by
/// name: `db_error.code().code() == sqlstate::text(&sqlstate::UNTRUSTED_TO_IRREVERSIBLE)`.
pub use pg_labels_core::sqlstate;
pub use pg_labels_core::ParseError;
pub use scope::Scope;
pub use wire::FORMAT_VERSION;
