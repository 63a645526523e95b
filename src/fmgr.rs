//! The calling convention: SQL-callable functions, their arguments and results.
//!
//! Functions are plain V1 fmgr functions declared with [`sql_function!`], so the SQL script
//! (`sql/*.sql`) is written by hand and an operator's hot path is a pointer read, not a
//! conversion. Arguments are read in place: a varlena is detoasted only when it is compressed
//! or out of line (`pg_detoast_datum_packed` semantics), so short-header values on a heap page
//! are never copied.

use crate::error::{self, Error, Result};
use pg_labels_core::LabelSet;
use pgrx::pg_sys::{self, Datum, FunctionCallInfo};
use pgrx::varlena;

/// Version byte at the head of every `scope` and `labelset` datum and binary message.
pub const FORMAT_VERSION: u8 = 1;

/// Largest datum we will build (PostgreSQL's `MaxAllocSize` less the header).
const MAX_DATUM: usize = 0x3fff_ffff - 8;

/// Declare SQL-callable V1 functions. Each body returns `Result<Datum>`; an `Err` is raised
/// with its own SQLSTATE once the body has returned (see [`crate::error::raise`]).
///
/// The C symbol is the Rust name; the SQL script binds it with `AS 'MODULE_PATHNAME', 'name'`.
#[macro_export]
macro_rules! sql_function {
    ($( $(#[$attr:meta])* fn $name:ident($fc:ident) $body:block )*) => {
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
            #[unsafe(no_mangle)]
            pub unsafe extern "C-unwind" fn $name(
                $fc: ::pgrx::pg_sys::FunctionCallInfo,
            ) -> ::pgrx::pg_sys::Datum {
                #[inline(always)]
                #[allow(unused_unsafe)]
                fn body($fc: ::pgrx::pg_sys::FunctionCallInfo) -> $crate::error::Result<::pgrx::pg_sys::Datum> {
                    unsafe { $body }
                }
                let result = unsafe {
                    ::pgrx::pg_sys::submodules::panic::pgrx_extern_c_guard(|| body($fc))
                };
                match result {
                    Ok(datum) => datum,
                    Err(e) => unsafe { $crate::error::raise(e) },
                }
            }
        )*
    };
}

/// The datum of argument `n` (no NULL check: the functions are STRICT unless stated).
#[inline(always)]
pub unsafe fn arg(fc: FunctionCallInfo, n: usize) -> Datum {
    unsafe { (*(*fc).args.as_ptr().add(n)).value }
}

/// Is argument `n` NULL?
#[inline(always)]
pub unsafe fn arg_is_null(fc: FunctionCallInfo, n: usize) -> bool {
    unsafe { (*(*fc).args.as_ptr().add(n)).isnull }
}

/// The bytes of a varlena argument, read in place unless compressed or stored out of line.
#[inline(always)]
pub unsafe fn arg_varlena<'a>(fc: FunctionCallInfo, n: usize) -> &'a [u8] {
    unsafe { varlena_bytes(arg(fc, n).cast_mut_ptr()) }
}

/// A varlena pointer that can be read in place: the datum itself unless it is compressed or
/// stored out of line (then detoasted, as `pg_detoast_datum_packed` does).
#[inline(always)]
pub unsafe fn packed(p: *mut pg_sys::varlena) -> *mut pg_sys::varlena {
    unsafe {
        if varlena::varatt_is_4b_u(p) || (varlena::varatt_is_1b(p) && !varlena::varatt_is_1b_e(p)) {
            p
        } else {
            pg_sys::pg_detoast_datum_packed(p)
        }
    }
}

/// The bytes of a varlena datum, detoasted only when needed.
#[inline(always)]
pub unsafe fn varlena_bytes<'a>(p: *mut pg_sys::varlena) -> &'a [u8] {
    unsafe {
        let p = packed(p);
        std::slice::from_raw_parts(
            varlena::vardata_any(p) as *const u8,
            varlena::varsize_any_exhdr(p),
        )
    }
}

/// Strip and check the version byte of a stored datum.
#[inline(always)]
fn versioned<'a>(bytes: &'a [u8], type_name: &str) -> Result<&'a [u8]> {
    match bytes.split_first() {
        Some((&FORMAT_VERSION, rest)) => Ok(rest),
        _ => Err(Error::corrupt(type_name)),
    }
}

/// A `scope` argument: its path.
#[inline(always)]
pub unsafe fn arg_scope<'a>(fc: FunctionCallInfo, n: usize) -> Result<&'a [u8]> {
    unsafe { datum_scope(arg(fc, n)) }
}

/// A `scope` datum: its path.
#[inline(always)]
pub unsafe fn datum_scope<'a>(d: Datum) -> Result<&'a [u8]> {
    versioned(unsafe { varlena_bytes(d.cast_mut_ptr()) }, "scope")
}

/// A `labelset` argument.
#[inline(always)]
pub unsafe fn arg_labelset<'a>(fc: FunctionCallInfo, n: usize) -> Result<LabelSet<'a>> {
    unsafe { datum_labelset(arg(fc, n)) }
}

/// A `labelset` datum.
#[inline(always)]
pub unsafe fn datum_labelset<'a>(d: Datum) -> Result<LabelSet<'a>> {
    let body = versioned(unsafe { varlena_bytes(d.cast_mut_ptr()) }, "labelset")?;
    LabelSet::from_body(body).map_err(|_| Error::corrupt("labelset"))
}

/// A `cstring` argument.
#[inline]
pub unsafe fn arg_cstring<'a>(fc: FunctionCallInfo, n: usize) -> &'a [u8] {
    unsafe { std::ffi::CStr::from_ptr(arg(fc, n).cast_mut_ptr::<std::ffi::c_char>()).to_bytes() }
}

/// Build a varlena from parts (4-byte header), in the current memory context.
pub fn varlena_from(parts: &[&[u8]]) -> Result<Datum> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len > MAX_DATUM {
        return Err(Error::new(
            error::PROGRAM_LIMIT_EXCEEDED,
            format!("value of {len} bytes exceeds the maximum of {MAX_DATUM}"),
        ));
    }
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

/// A `scope` result from its path.
#[inline]
pub fn ret_scope(path: &[u8]) -> Result<Datum> {
    varlena_from(&[&[FORMAT_VERSION], path])
}

/// A `labelset` result from its body.
#[inline]
pub fn ret_labelset(body: &[u8]) -> Result<Datum> {
    varlena_from(&[&[FORMAT_VERSION], body])
}

/// A `text` or `bytea` result.
#[inline]
pub fn ret_bytes(bytes: &[u8]) -> Result<Datum> {
    varlena_from(&[bytes])
}

/// A `cstring` result.
pub fn ret_cstring(bytes: &[u8]) -> Result<Datum> {
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

/// Return SQL NULL.
#[inline]
pub unsafe fn ret_null(fc: FunctionCallInfo) -> Result<Datum> {
    unsafe {
        (*fc).isnull = true;
    }
    Ok(Datum::from(0usize))
}

// hash_bytes* are plain computations that cannot raise: called without pgrx's FFI guard.
unsafe extern "C" {
    fn hash_bytes(k: *const u8, keylen: std::ffi::c_int) -> u32;
    fn hash_bytes_extended(k: *const u8, keylen: std::ffi::c_int, seed: u64) -> u64;
}

/// PostgreSQL's own hash of a byte string (what `hash_any` computes).
#[inline]
pub fn hash(bytes: &[u8]) -> Datum {
    Datum::from(unsafe { hash_bytes(bytes.as_ptr(), bytes.len() as std::ffi::c_int) })
}

/// PostgreSQL's own 64-bit seeded hash of a byte string (what `hash_any_extended` computes).
#[inline]
pub fn hash_extended(bytes: &[u8], seed: u64) -> Datum {
    Datum::from(unsafe {
        hash_bytes_extended(bytes.as_ptr(), bytes.len() as std::ffi::c_int, seed)
    })
}
