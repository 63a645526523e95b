//! The PostgreSQL plumbing, knowing nothing of labels or platform tables: the calling
//! convention, the one error type and how it is raised, catching errors whole, SPI, table
//! access, the trigger protocol, backend-local state, datum conversions, and version
//! differences.
//!
//! One wall: every call into PostgreSQL's C API, every callback and hook registered with it,
//! every transaction started or committed and every background worker's set-up lives here,
//! behind safe functions (`xact` and `inval` take plain functions to call back, `bgworker`
//! runs a closure in a transaction of its own). The other layers name PostgreSQL's types and
//! constants through [`sys`] only, and use `unsafe` only where a comment names why (a type's
//! datum access, a protocol's view made once per function). `tests/structure/check.py`
//! enforces it.

pub mod backend;
pub mod bgworker;
pub mod btree;
pub mod catalog;
pub mod catch;
pub mod channel;
pub mod citus;
pub mod columns;
pub mod compat;
pub mod datum;
pub mod error;
pub mod executor;
pub mod fmgr;
pub mod gin;
pub mod heap;
pub mod inval;
pub mod local;
pub mod lock;
pub mod notify;
pub mod planner;
pub mod role;
pub mod spi;
pub mod sql;
pub mod srf;
pub mod sys;
pub mod trigger;
pub mod tuple;
pub mod utility;
pub mod xact;
