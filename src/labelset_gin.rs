//! GIN opclass `labelset_ops`: one key per label.
//!
//! Keys are the labels' entries (`[kind][value]`) stored as `bytea` and ordered by `byteacmp`,
//! which is exactly the order of labels inside a `labelset`. Keys are exact, so `@>`, `&&` and
//! `?` need no recheck; `=` and `<@` are rechecked on the heap.

use crate::fmgr::*;
use crate::sql_function;
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
unsafe fn keys<'a>(
    entries: impl Iterator<Item = &'a [u8]>,
    n: usize,
) -> crate::error::Result<Datum> {
    if n == 0 {
        return Ok(Datum::null());
    }
    unsafe {
        let keys = pg_sys::palloc(n * std::mem::size_of::<Datum>()) as *mut Datum;
        for (i, e) in entries.enumerate().take(n) {
            *keys.add(i) = ret_bytes(e)?;
        }
        Ok(Datum::from(keys))
    }
}

unsafe fn slice_or_empty<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

sql_function! {
    /// `extractValue(labelset, internal nkeys, internal nullFlags)`
    fn pgl_labelset_gin_extract_value(fc) {
        let set = arg_labelset(fc, 0)?;
        let n = set.len();
        *arg(fc, 1).cast_mut_ptr::<i32>() = n as i32;
        keys(set.iter().map(|l| l.0), n)
    }

    /// `extractQuery(query, internal nkeys, int2 strategy, internal pmatch, internal extra,
    /// internal nullFlags, internal searchMode)`
    fn pgl_labelset_gin_extract_query(fc) {
        let nkeys = arg(fc, 1).cast_mut_ptr::<i32>();
        let strategy = arg(fc, 2).value() as i16;
        let search_mode = arg(fc, 6).cast_mut_ptr::<i32>();
        if strategy == HAS {
            // a string that is not a label matches nothing
            return match label::parse(arg_varlena(fc, 0)) {
                Ok(entry) => {
                    *nkeys = 1;
                    keys(std::iter::once(&entry[..]), 1)
                }
                Err(_) => {
                    *nkeys = 0;
                    Ok(Datum::null())
                }
            };
        }
        let set = arg_labelset(fc, 0)?;
        let n = set.len();
        *nkeys = n as i32;
        *search_mode = match strategy {
            CONTAINS if n == 0 => pg_sys::GIN_SEARCH_MODE_ALL,
            CONTAINED => pg_sys::GIN_SEARCH_MODE_INCLUDE_EMPTY,
            EQUAL if n == 0 => pg_sys::GIN_SEARCH_MODE_INCLUDE_EMPTY,
            _ => pg_sys::GIN_SEARCH_MODE_DEFAULT,
        } as i32;
        keys(set.iter().map(|l| l.0), n)
    }

    /// `consistent(internal check, int2 strategy, query, int4 nkeys, internal extra,
    /// internal recheck, internal queryKeys, internal nullFlags) → bool`
    fn pgl_labelset_gin_consistent(fc) {
        let strategy = arg(fc, 1).value() as i16;
        let nkeys = arg(fc, 3).value() as i32 as usize;
        let check = slice_or_empty(arg(fc, 0).cast_mut_ptr::<bool>(), nkeys);
        let recheck = arg(fc, 5).cast_mut_ptr::<bool>();
        let (result, re) = match strategy {
            OVERLAP => (check.iter().any(|&c| c), false),
            CONTAINS | HAS => (check.iter().all(|&c| c), false),
            EQUAL => (check.iter().all(|&c| c), true),
            _ => (true, true), // CONTAINED: the heap decides
        };
        *recheck = re;
        ret_bool(result)
    }

    /// `triConsistent(internal check, int2 strategy, query, int4 nkeys, internal extra,
    /// internal queryKeys, internal nullFlags) → "char"`
    fn pgl_labelset_gin_triconsistent(fc) {
        let strategy = arg(fc, 1).value() as i16;
        let nkeys = arg(fc, 3).value() as i32 as usize;
        let check = slice_or_empty(arg(fc, 0).cast_mut_ptr::<i8>(), nkeys);
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
