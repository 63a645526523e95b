//! The few things the platform's own functions tell its triggers, as scoped state: raised by a
//! guard for exactly the statement the function runs, lowered when the guard drops, and
//! lowered at the end of every transaction whatever happened (see [`init`]).
//!
//! - [`DECIDING`]: `decide_approval()` is writing the decision on this request, for this role;
//! - [`AUTHORIZING`]: `authorize_crossing()` is recording a crossing, for this role;
//! - [`REVOKING`]: `revoke_crossing()` is ending this crossing, for this role;
//! - [`PURGING`]: `purge()` is deleting expired rows.
//!
//! The end of a transaction, or of a subtransaction that aborts, also ends what the
//! transaction knew of the runs it locked ([`crate::platform::run_lock::forget_runs`]).

use crate::pg::local::{end_of_transaction, Lower, Scoped};
use crate::pg::sys::SubTransactionId;
use crate::pg::xact::{End, SubEnd};

pub static DECIDING: Scoped<(i64, String)> = Scoped::new();
pub static AUTHORIZING: Scoped<String> = Scoped::new();
pub static REVOKING: Scoped<(i64, String)> = Scoped::new();
pub static PURGING: Scoped<()> = Scoped::new();

fn transaction_end(end: End) {
    let all: [&dyn Lower; 4] = [&DECIDING, &AUTHORIZING, &REVOKING, &PURGING];
    end_of_transaction(&all);
    crate::platform::run_lock::end_of_transaction(end == End::Commit);
    crate::platform::grants::end_of_transaction();
}

fn subtransaction_end(end: SubEnd, _my: SubTransactionId, _parent: SubTransactionId) {
    // the steps and row locks of the subtransaction are gone
    if end == SubEnd::Abort {
        crate::platform::run_lock::forget_runs();
    }
}

/// Called from `_PG_init`.
pub fn init() {
    crate::pg::xact::on_end(transaction_end);
    crate::pg::xact::on_subtransaction_end(subtransaction_end);
}
