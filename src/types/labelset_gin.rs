//! GIN opclass `labelset_ops`: one key per label.
//!
//! Keys are the labels' entries (`[kind][value]`) stored as `bytea` and ordered by `byteacmp`,
//! which is exactly the order of labels inside a `labelset`. Keys are exact, so `@>`, `&&` and
//! `?` need no recheck; `=` and `<@` are rechecked on the heap.

use crate::pg::fmgr::*;
use crate::sql_function;
use crate::types::datum::*;
use pg_labels_core::label;
use pgrx::pg_sys::{self, Datum};

/// Strategy numbers (those of the built-in `array_ops`, and jsonb's for `?`).
const OVERLAP: i16 = 1;
const CONTAINS: i16 = 2;
const CONTAINED: i16 = 3;
const EQUAL: i16 = 4;
const HAS: i16 = 9;

const GIN_FALSE: i8 = 0;
const GIN_TRUE: i8 = 1;
const GIN_MAYBE: i8 = 2;

/// A palloc'd array of bytea keys, one per entry.
fn keys<'a>(entries: impl Iterator<Item = &'a [u8]>, n: usize) -> crate::pg::error::Result<Datum> {
    if n == 0 {
        return Ok(Datum::null());
    }
    // SAFETY: palloc returns room for n datums (or raises); at most n are written.
    unsafe {
        let keys = pg_sys::palloc(n * std::mem::size_of::<Datum>()) as *mut Datum;
        for (i, e) in entries.enumerate().take(n) {
            *keys.add(i) = ret_bytes(e)?;
        }
        Ok(Datum::from(keys))
    }
}

/// # Safety
/// `p` must be NULL or point to `n` valid values that outlive `'a`.
unsafe fn slice_or_empty<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

/// Write through an `internal` output argument of a GIN support function.
///
/// # Safety
/// Argument `n` must be the `internal` pointer GIN passes for a `T` output.
unsafe fn out<T>(call: &crate::pg::fmgr::Call<'_>, n: usize, v: T) {
    // SAFETY: the caller's guarantee.
    unsafe { *call.datum(n).cast_mut_ptr::<T>() = v }
}

sql_function! {
    /// `extractValue(labelset, internal nkeys, internal nullFlags)`
    fn pgl_labelset_gin_extract_value(call) {
        let set = call.labelset(0)?;
        let n = set.len();
        // SAFETY: extractValue's second argument is the int32 *nkeys.
        unsafe { out(&call, 1, n as i32) };
        keys(set.iter().map(|l| l.0), n)
    }

    /// `extractQuery(query, internal nkeys, int2 strategy, internal pmatch, internal extra,
    /// internal nullFlags, internal searchMode)`
    fn pgl_labelset_gin_extract_query(call) {
        let strategy = call.datum(2).value() as i16;
        // SAFETY: extractQuery's second argument is the int32 *nkeys.
        let set_nkeys = |n: i32| unsafe { out(&call, 1, n) };
        if strategy == HAS {
            // a string that is not a label matches nothing
            return match label::parse(call.bytes(0)) {
                Ok(entry) => {
                    set_nkeys(1);
                    keys(std::iter::once(&entry[..]), 1)
                }
                Err(_) => {
                    set_nkeys(0);
                    Ok(Datum::null())
                }
            };
        }
        let set = call.labelset(0)?;
        let n = set.len();
        set_nkeys(n as i32);
        let mode = match strategy {
            CONTAINS if n == 0 => pg_sys::GIN_SEARCH_MODE_ALL,
            CONTAINED => pg_sys::GIN_SEARCH_MODE_INCLUDE_EMPTY,
            EQUAL if n == 0 => pg_sys::GIN_SEARCH_MODE_INCLUDE_EMPTY,
            _ => pg_sys::GIN_SEARCH_MODE_DEFAULT,
        } as i32;
        // SAFETY: extractQuery's seventh argument is the int32 *searchMode.
        unsafe { out(&call, 6, mode) };
        keys(set.iter().map(|l| l.0), n)
    }

    /// `consistent(internal check, int2 strategy, query, int4 nkeys, internal extra,
    /// internal recheck, internal queryKeys, internal nullFlags) → bool`
    fn pgl_labelset_gin_consistent(call) {
        let strategy = call.datum(1).value() as i16;
        let nkeys = call.datum(3).value() as i32 as usize;
        // SAFETY: consistent's first argument is the bool check[nkeys].
        let check = unsafe { slice_or_empty(call.datum(0).cast_mut_ptr::<bool>(), nkeys) };
        let (result, re) = match strategy {
            OVERLAP => (check.iter().any(|&c| c), false),
            CONTAINS | HAS => (check.iter().all(|&c| c), false),
            EQUAL => (check.iter().all(|&c| c), true),
            _ => (true, true), // CONTAINED: the heap decides
        };
        // SAFETY: consistent's sixth argument is the bool *recheck.
        unsafe { out(&call, 5, re) };
        ret_bool(result)
    }

    /// `triConsistent(internal check, int2 strategy, query, int4 nkeys, internal extra,
    /// internal queryKeys, internal nullFlags) → "char"`
    fn pgl_labelset_gin_triconsistent(call) {
        let strategy = call.datum(1).value() as i16;
        let nkeys = call.datum(3).value() as i32 as usize;
        // SAFETY: triConsistent's first argument is the GinTernaryValue check[nkeys].
        let check = unsafe { slice_or_empty(call.datum(0).cast_mut_ptr::<i8>(), nkeys) };
        let all = || {
            if check.contains(&GIN_FALSE) {
                GIN_FALSE
            } else if check.contains(&GIN_MAYBE) {
                GIN_MAYBE
            } else {
                GIN_TRUE
            }
        };
        let v = match strategy {
            OVERLAP => {
                if check.contains(&GIN_TRUE) {
                    GIN_TRUE
                } else if check.contains(&GIN_MAYBE) {
                    GIN_MAYBE
                } else {
                    GIN_FALSE
                }
            }
            CONTAINS | HAS => all(),
            EQUAL => match all() {
                GIN_FALSE => GIN_FALSE,
                _ => GIN_MAYBE,
            },
            _ => GIN_MAYBE,
        };
        Ok(Datum::from(v))
    }
}
