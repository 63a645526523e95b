//! The calling convention: SQL-callable functions, their arguments and results.
//!
//! Functions are plain V1 fmgr functions declared with [`sql_function!`], so the SQL script
//! (`sql/*.sql`) is written by hand and an operator's hot path is a pointer read, not a
//! conversion. A body receives a [`Call`]: safe accessors to its arguments, read in place (a
//! varlena is detoasted only when it is compressed or out of line, `pg_detoast_datum_packed`
//! semantics, so short-header values on a heap page are never copied).

use crate::pg::error::{self, Error, Result};
use pgrx::pg_sys::{self, Datum, FunctionCallInfo, Oid};
use pgrx::varlena;
use std::marker::PhantomData;

/// Largest datum we will build (PostgreSQL's `MaxAllocSize` less the header).
const MAX_DATUM: usize = 0x3fff_ffff - 8;

/// Declare SQL-callable V1 functions. Each body is safe code that gets a [`Call`] and returns
/// `Result<Datum>`; an `Err` is raised with its own SQLSTATE once the body has returned and
/// dropped what it owned (see [`crate::pg::error::raise`]).
///
/// The C symbol is the Rust name; the SQL script binds it with `AS 'MODULE_PATHNAME', 'name'`
/// and declares the argument types the body reads (only a superuser could bind the symbol to
/// other types).
#[macro_export]
macro_rules! sql_function {
    ($( $(#[$attr:meta])* fn $name:ident($call:ident) $body:block )*) => {
        $(
            ::paste::paste! {
                #[unsafe(no_mangle)]
                #[doc(hidden)]
                pub extern "C" fn [<pg_finfo_ $name>]() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
                    const V1: ::pgrx::pg_sys::Pg_finfo_record =
                        ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
                    &V1
                }
            }

            $(#[$attr])*
            ///
            /// # Safety
            /// Called by PostgreSQL's function manager only, with the `FunctionCallInfo` of a
            /// call to the SQL function the extension's script binds to this symbol.
            #[unsafe(no_mangle)]
            pub unsafe extern "C-unwind" fn $name(
                fc: ::pgrx::pg_sys::FunctionCallInfo,
            ) -> ::pgrx::pg_sys::Datum {
                #[inline(always)]
                fn body($call: $crate::pg::fmgr::Call<'_>) -> $crate::pg::error::Result<::pgrx::pg_sys::Datum> {
                    $body
                }
                // SAFETY: `fc` is the live FunctionCallInfo of this call (see # Safety).
                let call = unsafe { $crate::pg::fmgr::Call::new(fc) };
                // A PostgreSQL ERROR inside a call pgrx guards arrives as a panic (pgrx's FFI
                // boundary copies and flushes it), as does a Rust panic: both become an Error
                // (crate::pg::error::from_panic), raised like the body's own once everything
                // the body owned is dropped.
                let result = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| body(call)))
                    .unwrap_or_else(|payload| Err($crate::pg::error::from_panic(payload)));
                match result {
                    Ok(datum) => datum,
                    // SAFETY: the outermost frame of the function, nothing left to drop.
                    Err(e) => unsafe { $crate::pg::error::raise(e) },
                }
            }
        )*
    };
}

/// One call of a SQL function: its arguments, and where its result goes.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    fc: FunctionCallInfo,
    _call: PhantomData<&'a ()>,
}

impl<'a> Call<'a> {
    /// # Safety
    /// `fc` must be the `FunctionCallInfo` of a call in progress, declared in SQL with the
    /// argument types the function reads.
    pub unsafe fn new(fc: FunctionCallInfo) -> Self {
        Call {
            fc,
            _call: PhantomData,
        }
    }

    /// The raw call information, for the modules of `pg` that read what it points to.
    pub(crate) fn raw(&self) -> FunctionCallInfo {
        self.fc
    }

    /// The number of arguments passed.
    pub fn nargs(&self) -> usize {
        // SAFETY: fc is live for the call.
        unsafe { (*self.fc).nargs as usize }
    }

    fn slot(&self, n: usize) -> Option<&'a pg_sys::NullableDatum> {
        // SAFETY: args holds nargs entries.
        (n < self.nargs()).then(|| unsafe { &*(*self.fc).args.as_ptr().add(n) })
    }

    /// Is argument `n` NULL (or absent)?
    pub fn is_null(&self, n: usize) -> bool {
        self.slot(n).is_none_or(|a| a.isnull)
    }

    /// The datum of argument `n` as passed (0 when absent; callers check NULLs first unless the
    /// function is STRICT).
    pub fn datum(&self, n: usize) -> Datum {
        self.slot(n).map(|a| a.value).unwrap_or(Datum::from(0usize))
    }

    /// A `bigint` argument.
    pub fn i64(&self, n: usize) -> i64 {
        self.datum(n).value() as i64
    }

    /// An `int` or `smallint` argument.
    pub fn i32(&self, n: usize) -> i32 {
        self.datum(n).value() as i32
    }

    /// A `boolean` argument.
    pub fn bool(&self, n: usize) -> bool {
        self.datum(n).value() != 0
    }

    /// An `interval` argument in milliseconds (months as 30 days), `None` when NULL.
    pub fn interval_ms(&self, n: usize) -> Option<i64> {
        if self.is_null(n) {
            return None;
        }
        // SAFETY: the argument is an interval (the function is declared so), passed by
        // reference: a pointer to it, alive for the call.
        let i = unsafe { &*(self.datum(n).cast_mut_ptr::<pg_sys::Interval>()) };
        Some(i.time / 1000 + (i.day as i64 + i.month as i64 * 30) * 86_400_000)
    }

    /// The TOAST identity of a varlena argument stored out of line on disk ([`external_id`]),
    /// `None` when NULL or held in the row.
    pub fn external_id(&self, n: usize) -> Option<(Oid, Oid)> {
        if self.is_null(n) {
            return None;
        }
        // SAFETY: the argument is a varlena type (the function is declared so), as for bytes().
        unsafe { external_id(self.datum(n).cast_mut_ptr()) }
    }

    /// Argument `n`, or `None` when NULL.
    pub fn opt(&self, n: usize) -> Option<Datum> {
        (!self.is_null(n)).then(|| self.datum(n))
    }

    /// The bytes of a varlena argument (`text`, `bytea`, `scope`, `labelset`, ...), read in
    /// place unless compressed or stored out of line. Empty when NULL.
    pub fn bytes(&self, n: usize) -> &'a [u8] {
        if self.is_null(n) {
            return &[];
        }
        // SAFETY: the SQL declaration makes argument n a varlena type.
        unsafe { varlena_bytes(self.datum(n).cast_mut_ptr()) }
    }

    /// A `cstring` argument.
    pub fn cstring(&self, n: usize) -> &'a [u8] {
        if self.is_null(n) {
            return &[];
        }
        // SAFETY: the SQL declaration makes argument n a cstring.
        unsafe {
            std::ffi::CStr::from_ptr(self.datum(n).cast_mut_ptr::<std::ffi::c_char>()).to_bytes()
        }
    }

    /// The message of a binary receive function (`internal`, a `StringInfo`): the bytes from
    /// its cursor to its end, which it then marks as consumed.
    pub fn recv_message(&self, n: usize) -> &'a [u8] {
        if self.is_null(n) {
            return &[];
        }
        // SAFETY: the SQL declaration makes argument n the StringInfo of a receive function.
        unsafe {
            let buf = self.datum(n).cast_mut_ptr::<pg_sys::StringInfoData>();
            let (data, len, cursor) = ((*buf).data as *const u8, (*buf).len, (*buf).cursor);
            if data.is_null() || cursor >= len {
                return &[];
            }
            let msg =
                std::slice::from_raw_parts(data.add(cursor as usize), (len - cursor) as usize);
            (*buf).cursor = len;
            msg
        }
    }

    /// The type of argument `n` as the calling expression has it (`None` when the function is
    /// not called from an expression, e.g. by `DirectFunctionCall`).
    pub fn arg_type(&self, n: usize) -> Option<Oid> {
        // SAFETY: flinfo is set for every fmgr call; get_fn_expr_argtype copes without an expr.
        let t = unsafe { pg_sys::get_fn_expr_argtype((*self.fc).flinfo, n as i32) };
        (t != Oid::INVALID).then_some(t)
    }

    /// Return SQL NULL.
    pub fn null(&self) -> Result<Datum> {
        // SAFETY: fc is live for the call.
        unsafe {
            (*self.fc).isnull = true;
        }
        Ok(Datum::from(0usize))
    }
}

/// A varlena pointer that can be read in place: the datum itself unless it is compressed or
/// stored out of line (then detoasted, as `pg_detoast_datum_packed` does).
///
/// # Safety
/// `p` must point to a valid varlena datum.
#[inline(always)]
pub unsafe fn packed(p: *mut pg_sys::varlena) -> *mut pg_sys::varlena {
    // SAFETY: p is a valid varlena (caller); these read its header only.
    unsafe {
        if varlena::varatt_is_4b_u(p) || (varlena::varatt_is_1b(p) && !varlena::varatt_is_1b_e(p)) {
            p
        } else {
            pg_sys::pg_detoast_datum_packed(p)
        }
    }
}

/// The bytes of a varlena datum, detoasted only when needed. The slice lives as long as the
/// datum (or its detoasted copy, in the current memory context).
///
/// # Safety
/// `p` must point to a valid varlena datum that outlives `'a`.
#[inline(always)]
pub unsafe fn varlena_bytes<'a>(p: *mut pg_sys::varlena) -> &'a [u8] {
    // SAFETY: packed returns an in-place readable varlena (caller's guarantee for p).
    unsafe {
        let p = packed(p);
        std::slice::from_raw_parts(
            varlena::vardata_any(p) as *const u8,
            varlena::varsize_any_exhdr(p),
        )
    }
}

/// The identity of a varlena datum stored out of line on disk (TOAST): its TOAST relation and
/// value id. A stored TOAST value never changes and its id is unique in its TOAST relation
/// while it lives, so the pair names the content without reading it. `None` for a datum held
/// in the row (or in memory).
///
/// # Safety
/// `p` must point to a valid varlena datum.
pub unsafe fn external_id(p: *mut pg_sys::varlena) -> Option<(Oid, Oid)> {
    // SAFETY: reads the header, then (for an on-disk pointer) the varatt_external that follows
    // the two header bytes, unaligned as PostgreSQL's VARATT_EXTERNAL_GET_POINTER does.
    unsafe {
        if !varlena::varatt_is_1b_e(p)
            || varlena::vartag_external(p) != pg_sys::vartag_external::VARTAG_ONDISK as u8
        {
            return None;
        }
        let ext: pg_sys::varatt_external =
            std::ptr::read_unaligned((p as *const u8).add(2) as *const pg_sys::varatt_external);
        Some((ext.va_toastrelid, ext.va_valueid))
    }
}

/// A value of `len` bytes is one PostgreSQL can hold (54000 otherwise).
fn within_limit(len: usize) -> Result<()> {
    if len > MAX_DATUM {
        return Err(Error::new(
            error::PROGRAM_LIMIT_EXCEEDED,
            format!("value of {len} bytes exceeds the maximum of {MAX_DATUM}"),
        ));
    }
    Ok(())
}

/// An empty buffer with room for a result of `len` bytes, reserved up front: a value too large
/// for PostgreSQL is refused (54000) and an allocation the system refuses is an out-of-memory
/// error (53200), where a Rust allocation failing later, while the value grows, would abort
/// the backend and with it every session of the cluster.
pub fn result_buffer(len: usize) -> Result<Vec<u8>> {
    within_limit(len)?;
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| {
        Error::new(error::OUT_OF_MEMORY, "out of memory")
            .detail(format!("Failed on a request of {len} bytes."))
    })?;
    Ok(out)
}

/// Build a varlena from parts (4-byte header), in the current memory context.
pub fn varlena_from(parts: &[&[u8]]) -> Result<Datum> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    within_limit(len)?;
    // SAFETY: palloc returns `total` writable bytes (or raises); we fill exactly those.
    unsafe {
        let total = len + pg_sys::VARHDRSZ;
        let p = pg_sys::palloc(total) as *mut u8;
        varlena::set_varsize_4b(p as *mut pg_sys::varlena, total as i32);
        let mut at = p.add(pg_sys::VARHDRSZ);
        for part in parts {
            std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
            at = at.add(part.len());
        }
        Ok(Datum::from(p))
    }
}

/// A `text` or `bytea` result.
#[inline]
pub fn ret_bytes(bytes: &[u8]) -> Result<Datum> {
    varlena_from(&[bytes])
}

/// A `cstring` result.
pub fn ret_cstring(bytes: &[u8]) -> Result<Datum> {
    within_limit(bytes.len())?;
    // SAFETY: palloc returns len + 1 writable bytes (or raises).
    unsafe {
        let p = pg_sys::palloc(bytes.len() + 1) as *mut u8;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        *p.add(bytes.len()) = 0;
        Ok(Datum::from(p))
    }
}

#[inline(always)]
pub fn ret_bool(b: bool) -> Result<Datum> {
    Ok(Datum::from(b))
}

#[inline(always)]
pub fn ret_i32(v: i32) -> Result<Datum> {
    Ok(Datum::from(v))
}

#[inline(always)]
pub fn ret_i64(v: i64) -> Result<Datum> {
    Ok(Datum::from(v))
}

// hash_bytes* are plain computations that cannot raise: called without pgrx's FFI guard.
unsafe extern "C" {
    fn hash_bytes(k: *const u8, keylen: std::ffi::c_int) -> u32;
    fn hash_bytes_extended(k: *const u8, keylen: std::ffi::c_int, seed: u64) -> u64;
}

/// PostgreSQL's own hash of a byte string (what `hash_any` computes).
#[inline]
pub fn hash(bytes: &[u8]) -> Datum {
    // SAFETY: reads exactly bytes.len() bytes.
    Datum::from(unsafe { hash_bytes(bytes.as_ptr(), bytes.len() as std::ffi::c_int) })
}

/// PostgreSQL's own 64-bit seeded hash of a byte string (what `hash_any_extended` computes).
#[inline]
pub fn hash_extended(bytes: &[u8], seed: u64) -> Datum {
    // SAFETY: reads exactly bytes.len() bytes.
    Datum::from(unsafe {
        hash_bytes_extended(bytes.as_ptr(), bytes.len() as std::ffi::c_int, seed)
    })
}
