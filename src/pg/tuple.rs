//! A row handed to a row trigger ([`Tuple`]): its columns read by number (the numbers resolved
//! by [`crate::pg::columns::Columns`]) with their types checked, compared, and the row given
//! back with some columns replaced; and the same replacement on any heap tuple
//! ([`modify_tuple`], which [`crate::pg::heap`] updates rows with).

use crate::pg::datum::{self, FromDatum};
use crate::pg::error::{Error, Result};
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

/// A row handed to a row trigger.
#[derive(Clone)]
pub struct Tuple<'a> {
    pub(super) tuple: pg_sys::HeapTuple,
    pub(super) desc: pg_sys::TupleDesc,
    pub(super) relid: Oid,
    /// Every column's datum and null flag, taken apart once on first use (reading columns one
    /// by one walks the row from its start for each column after a variable-length one).
    pub(super) deformed: std::cell::OnceCell<(Vec<Datum>, Vec<bool>)>,
    pub(super) _call: std::marker::PhantomData<&'a ()>,
}

impl<'a> Tuple<'a> {
    pub fn is_null(&self) -> bool {
        self.tuple.is_null()
    }

    fn attr(&self, col: i32) -> &'a pg_sys::FormData_pg_attribute {
        // SAFETY: col is a 1-based attribute number resolved by Columns (in range).
        unsafe { crate::pg::compat::attr(self.desc, col) }
    }

    /// The type of column `col`.
    pub fn type_of(&self, col: i32) -> Oid {
        self.attr(col).atttypid
    }

    /// Is column `col` an identity column (a table of release 0.1.0 takes ids that way)?
    pub fn is_identity(&self, col: i32) -> bool {
        self.attr(col).attidentity != 0
    }

    /// The raw datum of column `col` (`None` when NULL).
    pub fn datum(&self, col: i32) -> Option<Datum> {
        if self.tuple.is_null() {
            return None;
        }
        let (values, nulls) = self.deformed.get_or_init(|| {
            // SAFETY: a live tuple of this descriptor; the arrays have natts entries.
            unsafe {
                let natts = (*self.desc).natts.max(0) as usize;
                let mut values = vec![Datum::from(0usize); natts];
                let mut nulls = vec![true; natts];
                pg_sys::heap_deform_tuple(
                    self.tuple,
                    self.desc,
                    values.as_mut_ptr(),
                    nulls.as_mut_ptr(),
                );
                (values, nulls)
            }
        });
        let i = usize::try_from(col).ok()?.checked_sub(1)?;
        (!*nulls.get(i)?).then(|| values[i])
    }

    /// Column `col` as `T` (`None` when NULL), its type checked.
    pub fn get<T: FromDatum<'a>>(&self, col: i32) -> Result<Option<T>> {
        let attr = self.attr(col);
        // SAFETY: the datum is of the attribute's type and lives as long as the tuple ('a).
        unsafe {
            datum::read(self.datum(col), attr.atttypid, || {
                format!("column {}", column_name(attr))
            })
        }
        // text that is not UTF-8 (a SQL_ASCII database): refused, naming the column
        .map_err(|e| {
            if e.is_sqlstate(crate::pg::error::CHARACTER_NOT_IN_REPERTOIRE) {
                pg_labels_core::refusal::not_utf8(&column_name(attr)).into()
            } else {
                e
            }
        })
    }

    /// Column `col` of a row in which it is never NULL by the table's definition.
    pub fn must<T: FromDatum<'a>>(&self, col: i32, table: &str) -> Result<T> {
        self.get(col)?
            .ok_or_else(|| not_null(table, &column_name(self.attr(col))))
    }

    /// Do two rows hold the same value in column `col`?
    pub fn same(&self, other: &Tuple<'_>, col: i32) -> bool {
        let attr = self.attr(col);
        match (self.datum(col), other.datum(col)) {
            (None, None) => true,
            // SAFETY: both datums are of this column's type.
            (Some(a), Some(b)) => unsafe { datum::same_image(a, b, attr) },
            _ => false,
        }
    }

    /// The number of columns, and their names (dropped ones excluded), for whole-row checks.
    pub fn columns(&self) -> Vec<(i32, String)> {
        // SAFETY: natts attributes are in the descriptor.
        let natts = unsafe { (*self.desc).natts };
        (1..=natts)
            .filter(|&c| !self.attr(c).attisdropped)
            .map(|c| (c, column_name(self.attr(c))))
            .collect()
    }

    /// The row with some columns replaced (`None`: NULL), as a row trigger's return value.
    pub fn modified(&self, changes: &[(i32, Option<Datum>)]) -> Datum {
        let in_range = |col: i32| {
            // SAFETY: reads the descriptor's attribute count.
            col >= 1 && col <= unsafe { (*self.desc).natts }
        };
        let cached = self.deformed.get().filter(|_| !self.tuple.is_null());
        // (a column out of range goes to heap_modify_tuple_by_cols, which raises an error for
        // it rather than dropping the change)
        let Some((values, nulls)) = cached.filter(|_| changes.iter().all(|c| in_range(c.0))) else {
            // SAFETY: the columns were resolved against this descriptor and the values are
            // datums of their types (built by the callers for these columns).
            return Datum::from(unsafe { modify_tuple(self.tuple, self.desc, changes) });
        };
        // The row's columns are taken apart already: formed again from them with the changes
        // (what heap_modify_tuple_by_cols does, without taking the row apart a second time).
        let mut values = values.clone();
        let mut nulls = nulls.clone();
        for (col, value) in changes {
            // (in range: checked above)
            let i = (*col - 1) as usize;
            values[i] = value.unwrap_or(Datum::from(0usize));
            nulls[i] = value.is_none();
        }
        // SAFETY: values and nulls have natts entries of this descriptor's types (the row's
        // own, or the callers' datums for their columns); the new tuple keeps the original's
        // identity fields, as heap_modify_tuple_by_cols does.
        unsafe {
            let formed =
                pg_sys::heap_form_tuple(self.desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            (*(*formed).t_data).t_ctid = (*(*self.tuple).t_data).t_ctid;
            (*formed).t_self = (*self.tuple).t_self;
            (*formed).t_tableOid = (*self.tuple).t_tableOid;
            Datum::from(formed)
        }
    }

    /// The tuple itself, as a row trigger's return value.
    pub fn unchanged(&self) -> Datum {
        Datum::from(self.tuple)
    }

    /// The relation the row belongs to.
    pub fn relid(&self) -> Oid {
        self.relid
    }

    pub(crate) fn desc(&self) -> pg_sys::TupleDesc {
        self.desc
    }
}

/// A copy of `tuple` with some columns replaced (1-based; `None`: NULL), in the current memory
/// context.
///
/// # Safety
///
/// `tuple` is a valid tuple of `desc`; every column is in range and its value a datum of the
/// column's type.
pub(crate) unsafe fn modify_tuple(
    tuple: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
    changes: &[(i32, Option<Datum>)],
) -> pg_sys::HeapTuple {
    let mut cols: Vec<i32> = changes.iter().map(|c| c.0).collect();
    let mut values: Vec<Datum> = changes
        .iter()
        .map(|c| c.1.unwrap_or(Datum::from(0usize)))
        .collect();
    let mut nulls: Vec<bool> = changes.iter().map(|c| c.1.is_none()).collect();
    // SAFETY: the caller's guarantee; the three arrays have one entry per change.
    unsafe {
        pg_sys::heap_modify_tuple_by_cols(
            tuple,
            desc,
            cols.len() as i32,
            cols.as_mut_ptr(),
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        )
    }
}

fn column_name(attr: &pg_sys::FormData_pg_attribute) -> String {
    // SAFETY: attname is a NUL-terminated NameData.
    unsafe { CStr::from_ptr(attr.attname.data.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// `null value in column ... violates not-null constraint` (23502), for a column the trigger
/// needs before PostgreSQL would check it.
pub fn not_null(table: &str, column: &str) -> Error {
    Error::new(
        pg_labels_core::sqlstate::NOT_NULL_VIOLATION,
        format!("null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"),
    )
    .table("pg_labels", table)
}
