//! The SQL types `scope` and `labelset`: their datums, I/O, operators, functions, and the
//! support code of their operator classes (GIN, and the planner support of subtree queries).

pub mod datum;
pub mod labelset;
pub mod labelset_gin;
pub mod scope;
pub mod scope_support;
