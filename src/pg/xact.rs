//! Transactions: the end of each transaction and subtransaction told to the modules that asked
//! (a registry of plain functions behind one pair of PostgreSQL callbacks), and what the
//! current transaction is (its ids, when it started, whether it is a block).

use crate::pg::error::Error;
use crate::pg::local::BackendLocal;
use pgrx::pg_sys::{self, SubTransactionId, TransactionId};

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Commit,
    Abort,
    Prepare,
}

/// How a subtransaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubEnd {
    Commit,
    Abort,
}

/// Told at the end of a subtransaction: how it ended, its id and its parent's.
pub type OnSubEnd = fn(SubEnd, SubTransactionId, SubTransactionId);

// (backend-local statics, not thread_local!: a thread-local's destructor may have run when a
// callback comes at the process's exit)
static ON_END: BackendLocal<Vec<fn(End)>> = BackendLocal::new(Vec::new());
static ON_SUB_END: BackendLocal<Vec<OnSubEnd>> = BackendLocal::new(Vec::new());
static BEFORE_COMMIT: BackendLocal<Vec<BeforeCommit>> = BackendLocal::new(Vec::new());
static REGISTERED: BackendLocal<bool> = BackendLocal::new(false);

/// Asked just before a transaction commits (or is prepared): an error refuses the commit, and
/// the transaction rolls back with it. It must not fail otherwise (no panic, no ERROR of
/// PostgreSQL's: it reads what it kept, it runs no statement).
pub type BeforeCommit = fn() -> Result<(), Error>;

fn register() {
    if !REGISTERED.get() {
        // SAFETY: registers a plain function that lives as long as the library, once.
        unsafe { pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut()) };
        REGISTERED.set(true);
    }
}

/// Call `f` at the end of every transaction of this backend (commit, abort or prepare), for as
/// long as the library is loaded. Functions registered later are called first (as PostgreSQL
/// calls its own callbacks). `f` must not raise an error: the transaction is over.
pub fn on_end(f: fn(End)) {
    register();
    ON_END.with(|l| l.push(f));
}

/// Ask `f` before every commit (and prepare) of this backend's transactions, for as long as the
/// library is loaded ([`BeforeCommit`]).
pub fn before_commit(f: BeforeCommit) {
    register();
    BEFORE_COMMIT.with(|l| l.push(f));
}

/// Call `f` at the end of every subtransaction (released or rolled back), as [`on_end`].
pub fn on_subtransaction_end(f: OnSubEnd) {
    ON_SUB_END.with(|l| {
        if l.is_empty() {
            // SAFETY: as in on_end.
            unsafe {
                pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut())
            };
        }
        l.push(f);
    });
}

/// # Safety
///
/// Called by PostgreSQL with a transaction event; calls the registered functions.
unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _: *mut std::ffi::c_void,
) {
    if event == pg_sys::XactEvent::XACT_EVENT_PRE_COMMIT
        || event == pg_sys::XactEvent::XACT_EVENT_PRE_PREPARE
    {
        let n = BEFORE_COMMIT.with(|l| l.len());
        let mut refused = None;
        for i in 0..n {
            let f = BEFORE_COMMIT.with(|l| l[i]);
            if let Err(e) = f() {
                refused = Some(e);
                break;
            }
        }
        if let Some(e) = refused {
            // SAFETY: the outermost frame of this callback, nothing live to drop: the ERROR
            // aborts the transaction, as PostgreSQL allows before it commits.
            unsafe { crate::pg::error::raise(e) }
        }
        return;
    }
    let end = match event {
        pg_sys::XactEvent::XACT_EVENT_COMMIT => End::Commit,
        pg_sys::XactEvent::XACT_EVENT_ABORT => End::Abort,
        pg_sys::XactEvent::XACT_EVENT_PREPARE => End::Prepare,
        _ => return,
    };
    // (one at a time: the list is not borrowed while a function runs)
    let n = ON_END.with(|l| l.len());
    for i in (0..n).rev() {
        let f = ON_END.with(|l| l[i]);
        f(end);
    }
}

/// # Safety
///
/// Called by PostgreSQL with a subtransaction event; calls the registered functions.
unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    my: SubTransactionId,
    parent: SubTransactionId,
    _: *mut std::ffi::c_void,
) {
    let end = match event {
        pg_sys::SubXactEvent::SUBXACT_EVENT_COMMIT_SUB => SubEnd::Commit,
        pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB => SubEnd::Abort,
        _ => return,
    };
    let n = ON_SUB_END.with(|l| l.len());
    for i in (0..n).rev() {
        let f = ON_SUB_END.with(|l| l[i]);
        f(end, my, parent);
    }
}

/// The top transaction's id, if it has one yet (`InvalidTransactionId` otherwise).
pub fn top_xid() -> TransactionId {
    // SAFETY: reads the transaction state.
    unsafe { pg_sys::GetTopTransactionIdIfAny() }
}

/// The top transaction's full id (epoch and id), 0 if it has none yet.
pub fn top_full_xid() -> u64 {
    // SAFETY: reads the transaction state.
    unsafe { pg_sys::GetTopFullTransactionIdIfAny().value }
}

/// The id of the current subtransaction.
pub fn subtransaction() -> SubTransactionId {
    // SAFETY: reads the transaction state.
    unsafe { pg_sys::GetCurrentSubTransactionId() }
}

/// Is the session inside a transaction block (`BEGIN` ... `COMMIT`)?
pub fn in_block() -> bool {
    // SAFETY: reads the transaction state.
    unsafe { pg_sys::IsTransactionBlock() }
}

/// When the current transaction started (`now()`), in PostgreSQL's microseconds.
pub fn start_timestamp() -> i64 {
    // SAFETY: reads the transaction state.
    unsafe { pg_sys::GetCurrentTransactionStartTimestamp() }
}
