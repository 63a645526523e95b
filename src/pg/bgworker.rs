//! Background workers started without `shared_preload_libraries` (dynamic ones, from
//! `max_worker_processes`, as `pg_background` registers them), and what a worker's own main
//! function needs: its connection, its transactions, its latch.

use crate::pg::error::Result;
use pgrx::pg_sys::{self, Oid};

/// What starts a worker: the library and function it runs, and its name.
#[derive(Clone, Copy)]
pub struct Worker {
    pub library: &'static str,
    pub function: &'static str,
    pub name: &'static str,
}

/// Register a dynamic worker that runs `worker` with `arg` as its argument: its handle
/// (allocated in TopMemoryContext, to outlive the transaction), or `None` when none could be
/// (every slot taken, or out of memory: no worker, not an error).
pub fn register(worker: &Worker, arg: u32) -> Option<*mut pg_sys::BackgroundWorkerHandle> {
    // SAFETY: a BackgroundWorker filled as RegisterDynamicBackgroundWorker wants it.
    crate::pg::error::catch(|| unsafe {
        let mut w: pg_sys::BackgroundWorker = std::mem::zeroed();
        copy(&mut w.bgw_name, worker.name);
        copy(&mut w.bgw_type, worker.name);
        copy(&mut w.bgw_library_name, worker.library);
        copy(&mut w.bgw_function_name, worker.function);
        w.bgw_flags =
            (pg_sys::BGWORKER_SHMEM_ACCESS | pg_sys::BGWORKER_BACKEND_DATABASE_CONNECTION) as i32;
        w.bgw_start_time = pg_sys::BgWorkerStartTime::BgWorkerStart_RecoveryFinished;
        w.bgw_restart_time = pg_sys::BGW_NEVER_RESTART as i32;
        w.bgw_main_arg = pg_sys::Datum::from(arg as usize);
        w.bgw_notify_pid = 0;
        let context = pg_sys::MemoryContextSwitchTo(pg_sys::TopMemoryContext);
        let mut handle: *mut pg_sys::BackgroundWorkerHandle = std::ptr::null_mut();
        let ok = pg_sys::RegisterDynamicBackgroundWorker(&mut w, &mut handle);
        pg_sys::MemoryContextSwitchTo(context);
        Ok(ok.then_some(handle))
    })
    .ok()
    .flatten()
}

fn copy<const N: usize>(to: &mut [std::ffi::c_char; N], from: &str) {
    for (i, b) in from.bytes().take(N - 1).enumerate() {
        to[i] = b as std::ffi::c_char;
    }
}

/// Has the worker a handle of [`register`] names stopped (or never started)?
pub fn stopped(handle: *mut pg_sys::BackgroundWorkerHandle) -> bool {
    let mut pid = 0;
    // SAFETY: a handle RegisterDynamicBackgroundWorker gave, kept in TopMemoryContext.
    let status = unsafe { pg_sys::GetBackgroundWorkerPid(handle, &mut pid) };
    status == pg_sys::BgwHandleStatus::BGWH_STOPPED
}

/// Wait on this process's latch for up to `ms` milliseconds, then answer a pending cancel or
/// termination (an ERROR or FATAL, as anywhere else).
pub fn wait_interruptibly(ms: i64) {
    // SAFETY: waits on this backend's latch with a timeout; interrupts are checked after.
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms as std::ffi::c_long,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
        if pg_sys::InterruptPending != 0 {
            pg_sys::ProcessInterrupts();
        }
    }
}

/// In a worker's main function, once: connect to `database` as the bootstrap superuser (so
/// that an owner that cannot log in, or a database closed to connections, does not stop it).
pub fn connect(database: Oid) {
    // SAFETY: a background worker's connection, once, before any transaction.
    unsafe {
        pg_sys::BackgroundWorkerInitializeConnectionByOid(
            database,
            Oid::INVALID,
            pg_sys::BGWORKER_BYPASS_ALLOWCONN,
        )
    };
}

/// One transaction of a worker, acting as `role`: `f`'s `Err` (or an ERROR inside, caught
/// whole) rolls it back, which also gives the worker its own user back.
pub fn in_transaction<T>(role: Oid, f: impl FnOnce() -> Result<T>) -> Result<T> {
    // SAFETY: the worker's own transactions, one at a time, begun and ended here.
    let out = crate::pg::error::catch(|| unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        let (mut user, mut context) = (Oid::INVALID, 0);
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        if role != Oid::INVALID {
            pg_sys::SetUserIdAndSecContext(
                role,
                context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32,
            );
        }
        let out = f();
        if out.is_ok() {
            pg_sys::SetUserIdAndSecContext(user, context);
            pg_sys::PopActiveSnapshot();
            pg_sys::CommitTransactionCommand();
        }
        out
    });
    if out.is_err() {
        // SAFETY: as above; nothing of the transaction is used after.
        unsafe { pg_sys::AbortCurrentTransaction() };
    }
    out
}

/// Declares a background worker's main function, `#[no_mangle]` under `$name` (the name a
/// [`Worker`] gives as its function), that sets up the worker's signal handlers (SIGTERM sets
/// a flag, see [`sigterm_received`]) and calls `$main` with the argument the worker was
/// registered with.
#[macro_export]
macro_rules! bgworker_main {
    ($(#[$attr:meta])* fn $name:ident = $main:path) => {
        $(#[$attr])*
        ///
        /// # Safety
        /// Called by PostgreSQL as a background worker's main function, with the argument
        /// the worker was registered with.
        #[::pgrx::pg_guard]
        #[unsafe(no_mangle)]
        pub unsafe extern "C-unwind" fn $name(arg: ::pgrx::pg_sys::Datum) {
            $crate::pg::bgworker::start();
            let main: fn(u32) = $main;
            main(arg.value() as u32)
        }
    };
}

/// A worker's start (see [`bgworker_main!`]): its signal handlers.
pub fn start() {
    use pgrx::bgworkers::{BackgroundWorker, SignalWakeFlags};
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGTERM);
}

/// Has the worker been asked to stop (SIGTERM)?
pub fn sigterm_received() -> bool {
    pgrx::bgworkers::BackgroundWorker::sigterm_received()
}

/// Wait on the worker's latch for at most `timeout`; false when the postmaster died.
pub fn wait_latch(timeout: std::time::Duration) -> bool {
    pgrx::bgworkers::BackgroundWorker::wait_latch(Some(timeout))
}
