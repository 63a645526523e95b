//! The pure logic of pg_labels, with no PostgreSQL in sight: the scope and label grammar,
//! the containment rule, the set algebra on labels, crossings, and the publication check's
//! flow analysis. The extension crate maps it to SQL.
//!
//! Internal forms (what the datums hold after their version byte):
//! - a scope is its path, segments joined by [`scope::SEP`] (the installation is empty);
//! - a label is an entry `[kind][value]` (see [`label`]);
//! - a labelset is its entries in ascending order, each followed by a 0 byte (see [`labelset`]).

pub mod crossing;
pub mod error;
pub mod flow;
pub mod label;
pub mod labelset;
pub mod rules;
pub mod scope;

pub use error::{ParseError, Problem};
pub use label::Label;
pub use labelset::LabelSet;
