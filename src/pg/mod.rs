//! The PostgreSQL plumbing, knowing nothing of labels or platform tables: the calling
//! convention, the one error type and how it is raised, catching errors whole, SPI, table
//! access, the trigger protocol, backend-local state, datum conversions, and version
//! differences. Every `unsafe` block of the crate that is not a type's datum access lives here.

pub mod bgworker;
pub mod btree;
pub mod catch;
pub mod channel;
pub mod citus;
pub mod columns;
pub mod compat;
pub mod datum;
pub mod error;
pub mod executor;
pub mod fmgr;
pub mod heap;
pub mod inval;
pub mod local;
pub mod lock;
pub mod role;
pub mod spi;
pub mod sql;
pub mod srf;
pub mod trigger;
pub mod tuple;
