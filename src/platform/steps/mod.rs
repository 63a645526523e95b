//! Enforcement on the way into the trail: `pg_labels.steps_insert()`, BEFORE INSERT FOR EACH ROW
//! on `pg_labels.steps`. For every step it
//!
//! 1. **gathers** ([`gather`]): the row (kind parsed once), who writes it, the run (locked, see
//!    [`run_lock::lock_run`]), the tool's catalog entry, and for a context read the artifact and
//!    the share that offers it (judged by [`barrier::read`] as it is gathered);
//! 2. **decides** ([`decide`]), by the core: the step's shape ([`step::check`], with the row),
//!    what the step brings, a tool call or gate decision ([`barrier::judge`]);
//! 3. **writes** ([`write`]): grows the run's labels when the step brought new ones, moves its
//!    hash chain on, and returns the row with what the database fills in (id, actor, decision,
//!    rule, reason, the approval, share and crossings used). A refused tool call raises its
//!    rule's error instead.
//!
//! A table of release 0.1.0, until ALTER EXTENSION UPDATE, is served by [`release_0_1_0`].
//!
//! [`run_lock::lock_run`]: crate::platform::run_lock::lock_run
//! [`barrier::read`]: pg_labels_core::barrier::read
//! [`barrier::judge`]: pg_labels_core::barrier::judge
//! [`step::check`]: pg_labels_core::step::check

mod decide;
mod gather;
mod release_0_1_0;
mod write;

use crate::pg::error::Result;
use crate::pg::fmgr::{ret_bool, Call};
use crate::pg::sys::Datum;
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::context;
use crate::platform::run_lock;
use crate::sql_function;
use gather::{Facts, Step};
use pg_labels_core::step;
use std::ops::ControlFlow;

const SPEC: Spec = Spec {
    function: "pg_labels.steps_insert()",
    tables: &["steps"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.steps.
    fn pgl_steps_insert(call) {
        crate::platform::refused::guarded("step", || steps_insert(&call))
    }
}

sql_function! {
    /// `pg_labels.is_step_kind(text)`: the trail's CHECK on `kind` (`steps_kind_check`).
    fn pgl_is_step_kind(call) {
        let kind = std::str::from_utf8(call.bytes(0)).ok();
        ret_bool(kind.and_then(step::Kind::parse).is_some())
    }

    /// `pg_labels.is_step_decision(text)`: the trail's CHECK on `decision`
    /// (`steps_decision_check`).
    fn pgl_is_step_decision(call) {
        let decision = std::str::from_utf8(call.bytes(0)).ok();
        ret_bool(decision.is_some_and(step::is_decision))
    }
}

/// How an attempt at deciding and writing a step on its run ends.
enum Attempt<T> {
    Done(T),
    /// The run was read without its lock (on a Citus shard) and the step lost a race there:
    /// another step of the run was written first, or the step is refused (a writer at the run
    /// may be deciding an approval). Nothing was written; the step is decided again, on the
    /// run locked ([`steps_insert`]).
    Again,
}

impl<T> Attempt<T> {
    /// The next part of the attempt, if this one did not end it.
    #[inline]
    fn then<U>(self, next: impl FnOnce(T) -> Result<Attempt<U>>) -> Result<Attempt<U>> {
        match self {
            Attempt::Done(t) => next(t),
            Attempt::Again => Ok(Attempt::Again),
        }
    }
}

fn steps_insert(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &SPEC)?;
    let row = trigger.row();
    if context::restoring() {
        return Ok(row.unchanged());
    }
    let step = match gather::step(&trigger, row)? {
        ControlFlow::Continue(step) => step,
        ControlFlow::Break(row) => return Ok(row),
    };
    // The run is locked and the step decided on it (run_lock::read_run). On a Citus shard the
    // run is read, and the step's one write of the run's row (its chain's head) is then also
    // its lock: if another step of the run was written first, or the decision is a refusal,
    // the step is decided again on the run locked, where it loses no race.
    for lock in [false, true] {
        if let Attempt::Done(row) = attempt(&step, lock)? {
            return Ok(row);
        }
    }
    // (never: a run locked is written by no one else, see run_lock::LockedRun::advance)
    Err(run_lock::changed_concurrently())
}

/// Gather the run and what the step needs of it, decide, write: the row to return, or
/// [`Attempt::Again`].
fn attempt(step: &Step<'_>, lock: bool) -> Result<Attempt<Datum>> {
    let facts = Facts::gather(step, lock)?;
    decide::decide(step, &facts)?.then(|decided| write::write(step, &facts, &decided))
}
