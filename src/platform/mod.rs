//! The platform: the tables of schema `pg_labels` and what enforces them. Each module gathers
//! facts from the database, asks the core's decision for its case, and writes the result:
//!
//! - [`catalog`]: the platform relations, locking a run, reading the tool catalog, ids;
//! - [`runs`]: opening a run; [`steps`]: every step of the trail; [`seal`]: the append-only
//!   rules; [`sharing`]: artifacts, shares and context reads; [`crossings`]: recording and
//!   revoking crossings; [`approvals`]: a person's decision; [`publication`]: the publication
//!   check; [`retention`]: purging; [`refused`]: the record of every refusal; [`state`]: what
//!   the platform's functions tell its triggers.

pub mod approvals;
pub mod catalog;
pub mod crossings;
pub mod ledger;
pub mod publication;
pub mod refused;
pub mod removal;
pub mod retention;
pub mod runs;
pub mod seal;
pub mod sharing;
pub mod state;
pub mod steps;
