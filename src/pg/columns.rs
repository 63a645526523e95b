//! The columns an extension's function reads of a table: each named and typed ([`Column`],
//! [`col`]), resolved to their numbers in a relation and checked by name and type before any
//! value is read ([`Columns`]), for trigger rows ([`crate::pg::tuple::Tuple`]) and table scans
//! ([`crate::pg::heap`]) alike.

use crate::pg::datum::{self, FromDatum};
use crate::pg::error::{Error, Result, UNDEFINED_COLUMN};
use crate::pg::local::BackendLocal;
use crate::pg::tuple::Tuple;
use pgrx::pg_sys::{self, Oid};
use std::ffi::CStr;

/// A column a trigger reads: its name and the types it may have.
pub struct Column {
    pub name: &'static CStr,
    pub accepts: fn(Oid) -> bool,
    pub type_name: &'static str,
}

/// A column of a type read as `T`.
pub const fn col<T: for<'a> FromDatum<'a>>(name: &'static CStr) -> Column {
    Column {
        name,
        accepts: <T as FromDatum<'static>>::accepts,
        type_name: <T as FromDatum<'static>>::NAME,
    }
}

/// Column numbers of a relation, resolved by name and checked by type once per backend and
/// relation, and checked by name on every use (a column dropped and added again moves; a cache
/// keyed by relation alone would not see it).
pub struct Columns<const N: usize> {
    cols: [Column; N],
    cache: BackendLocal<(Oid, [i32; N])>,
}

impl<const N: usize> Columns<N> {
    pub const fn new(cols: [Column; N]) -> Self {
        Columns {
            cols,
            cache: BackendLocal::new((Oid::INVALID, [0; N])),
        }
    }

    /// The 1-based numbers of the columns, in order, for the relation of `row`.
    pub fn of(&self, row: &Tuple<'_>) -> Result<[i32; N]> {
        self.of_relation(row.relid(), row.desc())
    }

    /// The same for a relation and its descriptor.
    pub(crate) fn of_relation(&self, relid: Oid, desc: pg_sys::TupleDesc) -> Result<[i32; N]> {
        // SAFETY: desc is the open relation's descriptor; natts attributes.
        let natts = unsafe { (*desc).natts };
        let attr = |n: i32| -> &pg_sys::FormData_pg_attribute {
            // SAFETY: 1 <= n <= natts.
            unsafe { crate::pg::compat::attr(desc, n) }
        };
        let named = |n: i32, c: &Column| {
            n >= 1 && n <= natts && {
                let a = attr(n);
                // SAFETY: attname is a NUL-terminated NameData.
                !a.attisdropped && unsafe { CStr::from_ptr(a.attname.data.as_ptr()) } == c.name
            }
        };
        let (cached_rel, cached) = self.cache.get();
        if cached_rel == relid && cached.iter().zip(&self.cols).all(|(&n, c)| named(n, c)) {
            return Ok(cached);
        }
        let mut fresh = [0; N];
        for (slot, c) in fresh.iter_mut().zip(&self.cols) {
            // SAFETY: SPI_fnumber reads the descriptor and a NUL-terminated name.
            let n = unsafe { pg_sys::SPI_fnumber(desc, c.name.as_ptr()) };
            if n <= 0 || n > natts {
                return Err(Error::new(
                    UNDEFINED_COLUMN,
                    format!(
                        "pg_labels: the table has no column {}",
                        c.name.to_string_lossy()
                    ),
                ));
            }
            if !(c.accepts)(attr(n).atttypid) {
                return Err(datum::mismatch(
                    &format!("column {}", c.name.to_string_lossy()),
                    c.type_name,
                    attr(n).atttypid,
                ));
            }
            *slot = n;
        }
        self.cache.set((relid, fresh));
        Ok(fresh)
    }
}
