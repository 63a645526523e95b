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
use pgrx::pg_sys;

pub static DECIDING: Scoped<(i64, String)> = Scoped::new();
pub static AUTHORIZING: Scoped<String> = Scoped::new();
pub static REVOKING: Scoped<(i64, String)> = Scoped::new();
pub static PURGING: Scoped<()> = Scoped::new();

unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    if matches!(
        event,
        pg_sys::XactEvent::XACT_EVENT_COMMIT
            | pg_sys::XactEvent::XACT_EVENT_ABORT
            | pg_sys::XactEvent::XACT_EVENT_PREPARE
    ) {
        let all: [&dyn Lower; 4] = [&DECIDING, &AUTHORIZING, &REVOKING, &PURGING];
        end_of_transaction(&all);
        crate::platform::run_lock::end_of_transaction(
            event == pg_sys::XactEvent::XACT_EVENT_COMMIT,
        );
        crate::platform::grants::end_of_transaction();
    }
}

unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _my: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    // the steps and row locks of the subtransaction are gone
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        crate::platform::run_lock::forget_runs();
    }
}

/// Called from `_PG_init`.
pub fn init() {
    // SAFETY: registers callbacks that live as long as the library.
    unsafe {
        pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
    }
}
