//! Calling into PostgreSQL where an ERROR must come back whole.
//!
//! pgrx's FFI guard turns an ERROR raised inside a `pg_sys` call into a Rust panic carrying
//! its message, but with the SQLSTATE squeezed through pgrx's closed enum (our own `23L0x`
//! codes would come back as `XX000`) and without the constraint name. The few calls that can
//! raise a rule's refusal (SPI statements that fire this extension's triggers) or that wait on a
//! lock (opening a table, locking a row: where cancellations, lock timeouts and deadlocks
//! arise) go through [`catch`] instead:
//! it sets its own `sigsetjmp` restore point, calls the raw C function, and on a longjmp copies
//! the `ErrorData` into an [`Error`] that [`crate::pg::error::raise`] re-raises unchanged.

use crate::pg::error::{Error, Result};
use pgrx::pg_sys::{self, Datum};
use std::ffi::{c_char, c_int, c_long, CStr};
use std::mem::MaybeUninit;

// Unguarded declarations: an ERROR inside longjmps to the restore point set by `catch`.
unsafe extern "C-unwind" {
    #[link_name = "SPI_execute_plan"]
    pub fn spi_execute_plan(
        plan: pg_sys::SPIPlanPtr,
        values: *mut Datum,
        nulls: *const c_char,
        read_only: bool,
        tcount: c_long,
    ) -> c_int;
    #[link_name = "try_table_open"]
    pub fn try_table_open(relation_id: pg_sys::Oid, lockmode: pg_sys::LOCKMODE)
        -> pg_sys::Relation;
    #[link_name = "SPI_execute_with_args"]
    pub fn spi_execute_with_args(
        src: *const c_char,
        nargs: c_int,
        argtypes: *mut pg_sys::Oid,
        values: *mut Datum,
        nulls: *const c_char,
        read_only: bool,
        tcount: c_long,
    ) -> c_int;
    #[link_name = "SPI_execute"]
    pub fn spi_execute(src: *const c_char, read_only: bool, tcount: c_long) -> c_int;
    #[link_name = "SPI_execute_snapshot"]
    pub fn spi_execute_snapshot(
        plan: pg_sys::SPIPlanPtr,
        values: *mut Datum,
        nulls: *const c_char,
        snapshot: pg_sys::Snapshot,
        crosscheck_snapshot: pg_sys::Snapshot,
        read_only: bool,
        fire_triggers: bool,
        tcount: c_long,
    ) -> c_int;
}

/// Run `f`, catching a PostgreSQL ERROR raised inside it as an [`Error`].
///
/// # Safety
/// `f` must only call unguarded C functions and own nothing that needs dropping: a longjmp
/// abandons its frame. The transaction is left in the state PostgreSQL's own `PG_CATCH` leaves
/// it: the caller must let the error propagate (it does: the `Err` is raised again).
pub unsafe fn catch<T: Copy>(f: impl FnOnce() -> T) -> Result<T> {
    // SAFETY: the restore point is set and taken down exactly as PG_TRY/PG_CATCH do; the
    // caller's guarantee covers what the jump skips.
    unsafe {
        let memory_context = pg_sys::CurrentMemoryContext;
        let exception_stack = pg_sys::PG_exception_stack;
        let context_stack = pg_sys::error_context_stack;
        let mut out: MaybeUninit<T> = MaybeUninit::uninit();
        let jumped = cee_scape::call_with_sigsetjmp(false, |jump_buffer| {
            pg_sys::PG_exception_stack = jump_buffer as *const cee_scape::SigJmpBufFields as *mut _;
            out.write(f());
            0
        });
        pg_sys::PG_exception_stack = exception_stack;
        pg_sys::error_context_stack = context_stack;
        if jumped == 0 {
            return Ok(out.assume_init());
        }
        pg_sys::CurrentMemoryContext = memory_context;
        let data = pg_sys::CopyErrorData();
        pg_sys::FlushErrorState();
        let e = Error::from_error_data(&*data);
        pg_sys::FreeErrorData(data);
        Err(e)
    }
}

fn text(p: *const c_char) -> Option<String> {
    // SAFETY: the fields of an ErrorData are NULL or NUL-terminated strings.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

impl Error {
    /// Everything a caught PostgreSQL error carried that a client can see.
    pub fn from_error_data(d: &pg_sys::ErrorData) -> Error {
        let mut code = [0u8; 5];
        for (i, c) in code.iter_mut().enumerate() {
            *c = (((d.sqlerrcode >> (6 * i)) & 0x3F) as u8) + b'0';
        }
        let mut e = Error::new(code, text(d.message).unwrap_or_default()).caught_nested();
        // pg_labels raises its own errors without a source file (crate::pg::error::raise);
        // PostgreSQL (and PL/pgSQL) always names one
        if !d.filename.is_null() {
            e = e.raised_by_postgres();
        }
        if let Some(detail) = text(d.detail) {
            e = e.detail(detail);
        }
        if let Some(hint) = text(d.hint) {
            e = e.hint(hint);
        }
        if let Some(c) = text(d.constraint_name) {
            e = e.constraint(c);
        }
        if let (Some(s), Some(t)) = (text(d.schema_name), text(d.table_name)) {
            e = e.table(&s, &t);
        }
        e
    }
}
