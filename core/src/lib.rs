//! The pure logic of pg_labels, with no PostgreSQL in sight: the scope and label grammar,
//! the containment rule, the set algebra on labels, crossings, every barrier decision, the
//! shapes of steps, the publication check's flow analysis, and what every refusal says. The
//! extension crate gathers facts from the database, calls these, and writes what they return.
//!
//! Internal forms (what the datums hold after their version byte):
//! - a scope is its path, segments joined by [`path::SEP`] (the installation is empty);
//! - a label is an entry `[kind][value]` (see [`label`]);
//! - a labelset is its entries in ascending order, each followed by a 0 byte (see [`labelset`]).
//!
//! Modules, lowest first (each uses only those above it): `sqlstate`, `error`, `path`,
//! `label`, `scope`, `carry` (a scope carried to Citus' workers, bound to its role), `labelset`, `crossing`, `rules`, `step`, `refusal`, `retention` (which
//! cutoffs a purge accepts), `barrier`, `flow`,
//! `chain` (the trail's hash chains and
//! ledger, checkable with no database).
#![forbid(unsafe_code)]

pub mod barrier;
pub mod carry;
pub mod chain;
pub mod crossing;
pub mod error;
pub mod flow;
pub mod label;
pub mod labelset;
pub mod path;
pub mod refusal;
pub mod retention;
pub mod rules;
pub mod scope;
pub mod sqlstate;
pub mod step;

pub use error::{ParseError, Problem};
pub use label::Label;
pub use labelset::LabelSet;
