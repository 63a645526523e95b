//! The platform: the tables of schema `pg_labels` and what enforces them. Each module gathers
//! facts from the database, asks the core's decision for its case, and writes the result:
//!
//! - what the triggers reach without SPI: [`relations`] (the platform relations, their owner),
//!   [`run_lock`] (finding and locking a run, and what the backend keeps of runs),
//!   [`chain_head`] (a run's chain head, read from the trail's index pages), [`tools`] (the tool
//!   catalog), [`ids`] (ids from the platform's sequences, Citus ranges), [`context`] (a
//!   restoring session, a Citus shard, the trail's time);
//! - [`grants`]: where a role may act (its grants' scopes, kept per invalidation);
//!   [`listeners`]: binding a listener where the writer's grants reach;
//! - [`runs`]: opening a run; [`steps`]: every step of the trail; [`seal`]: the append-only
//!   rules; [`artifacts`]: artifacts; [`sharing`]: shares and context reads; [`crossings`]: recording and
//!   revoking crossings; [`approvals`]: a person's decision; [`publication`]: the publication
//!   check; [`retention`]: purging; [`refused`]: the record of every refusal; [`state`]: what
//!   the platform's functions tell its triggers.

pub mod approvals;
pub mod artifacts;
pub mod chain_head;
pub mod context;
pub mod crossings;
pub mod grants;
pub mod ids;
pub mod ledger;
pub mod listeners;
pub mod publication;
pub mod refused;
pub mod relations;
pub mod removal;
pub mod retention;
pub mod run_lock;
pub mod runs;
pub mod seal;
pub mod sharing;
pub mod state;
pub mod steps;
pub mod tools;
