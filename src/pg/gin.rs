//! The GIN operator class protocol: the keys an `extractValue` or `extractQuery` function
//! returns, and the `internal` arguments GIN passes to its support functions (outputs it reads
//! back, the check array of `consistent` and `triConsistent`), each behind a view of the call
//! that is made once per function, where its SQL declaration is named.

use crate::pg::error::Result;
use crate::pg::fmgr::{ret_bytes, Call};
use pgrx::pg_sys::{self, Datum};

/// `GinTernaryValue`s of `triConsistent`.
pub const FALSE: i8 = 0;
pub const TRUE: i8 = 1;
pub const MAYBE: i8 = 2;

/// The search modes `extractQuery` may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    Default,
    IncludeEmpty,
    All,
}

/// A palloc'd array of `n` bytea keys, one per entry (NULL for none).
pub fn keys<'a>(entries: impl Iterator<Item = &'a [u8]>, n: usize) -> Result<Datum> {
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

/// The call of an `extractValue(value, internal nkeys, internal nullFlags)` or
/// `extractQuery(query, internal nkeys, int2 strategy, internal pmatch, internal extra,
/// internal nullFlags, internal searchMode)` function.
pub struct Extract<'c, 'a> {
    call: &'c Call<'a>,
    query: bool,
}

impl<'c, 'a> Extract<'c, 'a> {
    /// # Safety
    /// `call` must be a call by GIN of the opclass's `extractValue` (`query` false) or
    /// `extractQuery` (`query` true) support function.
    pub unsafe fn new(call: &'c Call<'a>, query: bool) -> Self {
        Extract { call, query }
    }

    /// Tell GIN how many keys the function returns.
    pub fn set_nkeys(&self, n: i32) {
        // SAFETY: the second argument of both is the int32 *nkeys (see new).
        unsafe { *self.call.datum(1).cast_mut_ptr::<i32>() = n }
    }

    /// The strategy number of the query's operator (extractQuery).
    pub fn strategy(&self) -> i16 {
        self.call.datum(2).value() as i16
    }

    /// Tell GIN how to search (extractQuery; ignored for extractValue).
    pub fn set_search_mode(&self, mode: SearchMode) {
        if !self.query {
            return;
        }
        let mode = match mode {
            SearchMode::Default => pg_sys::GIN_SEARCH_MODE_DEFAULT,
            SearchMode::IncludeEmpty => pg_sys::GIN_SEARCH_MODE_INCLUDE_EMPTY,
            SearchMode::All => pg_sys::GIN_SEARCH_MODE_ALL,
        } as i32;
        // SAFETY: extractQuery's seventh argument is the int32 *searchMode (see new).
        unsafe { *self.call.datum(6).cast_mut_ptr::<i32>() = mode }
    }
}

/// The call of a `consistent(internal check, int2 strategy, query, int4 nkeys, internal
/// extra, internal recheck, internal queryKeys, internal nullFlags) → bool` function
/// (`ternary` false) or of a `triConsistent(internal check, int2 strategy, query, int4 nkeys,
/// internal extra, internal queryKeys, internal nullFlags) → "char"` function (`ternary` true).
pub struct Consistent<'c, 'a> {
    call: &'c Call<'a>,
    ternary: bool,
}

impl<'c, 'a> Consistent<'c, 'a> {
    /// # Safety
    /// `call` must be a call by GIN of the opclass's `consistent` (`ternary` false) or
    /// `triConsistent` (`ternary` true) support function.
    pub unsafe fn new(call: &'c Call<'a>, ternary: bool) -> Self {
        Consistent { call, ternary }
    }

    /// The strategy number of the query's operator.
    pub fn strategy(&self) -> i16 {
        self.call.datum(1).value() as i16
    }

    fn nkeys(&self) -> usize {
        self.call.datum(3).value() as i32 as usize
    }

    /// `consistent`'s check: which of the query's keys the item has.
    pub fn check(&self) -> &'a [bool] {
        if self.ternary {
            return &[];
        }
        // SAFETY: consistent's first argument is the bool check[nkeys] (see new).
        unsafe { slice_or_empty(self.call.datum(0).cast_mut_ptr::<bool>(), self.nkeys()) }
    }

    /// `triConsistent`'s check: [`TRUE`], [`FALSE`] or [`MAYBE`] for each of the query's keys.
    pub fn ternary_check(&self) -> &'a [i8] {
        if !self.ternary {
            return &[];
        }
        // SAFETY: triConsistent's first argument is the GinTernaryValue check[nkeys] (see new).
        unsafe { slice_or_empty(self.call.datum(0).cast_mut_ptr::<i8>(), self.nkeys()) }
    }

    /// Tell GIN whether the heap must check the row again (`consistent` only).
    pub fn set_recheck(&self, recheck: bool) {
        if self.ternary {
            return;
        }
        // SAFETY: consistent's sixth argument is the bool *recheck (see new).
        unsafe { *self.call.datum(5).cast_mut_ptr::<bool>() = recheck }
    }
}
