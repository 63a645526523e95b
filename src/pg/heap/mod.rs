//! Table access without SPI, for the hot path of the triggers: open a relation, find a row by
//! the first column of an index (equality), read its columns (type-checked), and lock it as
//! `SELECT ... FOR NO KEY UPDATE` / `FOR SHARE` do, following concurrent updates to the latest
//! version. No executor, plan cache or SPI connection is set up.
//!
//! This file holds opening a table and what its catalog says of it (its columns, its indexes),
//! a row's place ([`Tid`]) and the slot a table's rows are read into. The rest, by concern:
//! `probe` finds a row through an index (or where it was found last time), `paged` reads a
//! btree's pages directly for a key's last row, `row` reads, locks and updates the row found,
//! and `view` holds what the active snapshot sees.

mod paged;
mod probe;
mod row;
mod view;

pub use paged::{PageHint, Paged};
pub use row::{Found, Held, RowLock};
pub use view::{active_head, active_view, is_active_view, View};

use crate::pg::columns::Columns;
use crate::pg::error::Result;
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

/// An open relation, closed (its lock kept to the end of the transaction) when dropped.
pub struct Table {
    rel: pg_sys::Relation,
}

impl Table {
    /// Open `oid` with `lock` if it still exists. Waiting for the lock can end in a lock
    /// timeout, a cancel or a deadlock: that error comes back whole (see [`crate::pg::catch`]).
    pub fn open(oid: Oid, lock: u32) -> Result<Option<Table>> {
        if oid == Oid::INVALID {
            return Ok(None);
        }
        // SAFETY: try_table_open returns NULL when the relation is gone; the closure owns
        // nothing (see catch).
        let rel = unsafe {
            crate::pg::catch::catch(|| crate::pg::catch::try_table_open(oid, lock as i32))
        }?;
        Ok((!rel.is_null()).then_some(Table { rel }))
    }

    /// The relation's name and schema.
    pub fn is(&self, name: &CStr, namespace: Oid) -> bool {
        // SAFETY: rd_rel is valid while the relation is open.
        let form = unsafe { &*(*self.rel).rd_rel };
        // SAFETY: relname is a NUL-terminated NameData.
        form.relnamespace == namespace
            && unsafe { CStr::from_ptr(form.relname.data.as_ptr()) } == name
    }

    pub fn oid(&self) -> Oid {
        // SAFETY: an open relation.
        unsafe { (*self.rel).rd_id }
    }

    /// The relation's primary key index.
    pub fn primary_key(&self) -> Oid {
        // SAFETY: an open relation.
        unsafe { crate::pg::compat::primary_key_index(self.rel) }
    }

    /// The numbers of `cols` in this relation, checked by name and type.
    pub fn columns<const N: usize>(&self, cols: &Columns<N>) -> Result<[i32; N]> {
        // SAFETY: an open relation and its descriptor.
        unsafe { cols.of_relation((*self.rel).rd_id, (*self.rel).rd_att) }
    }

    /// A btree index of this relation whose leading key columns are `columns` (attribute
    /// numbers, in order), if it has one.
    pub fn btree_on(&self, columns: &[i16]) -> Option<Oid> {
        // SAFETY: the relation is open; its index list is a fresh copy (freed here) and each
        // index's pg_index row is read from the syscache and released.
        unsafe {
            let list = pg_sys::RelationGetIndexList(self.rel);
            if list.is_null() {
                return None;
            }
            let mut found = None;
            for i in 0..(*list).length as usize {
                let oid = (*(*list).elements.add(i)).oid_value;
                let tuple = pg_sys::SearchSysCache1(
                    pg_sys::SysCacheIdentifier::INDEXRELID as i32,
                    Datum::from(oid),
                );
                if tuple.is_null() {
                    continue;
                }
                let form = pg_sys::GETSTRUCT(tuple) as *const pg_sys::FormData_pg_index;
                let keys = (*form).indnkeyatts as usize;
                let matches = keys >= columns.len()
                    && (*form).indisvalid
                    && pg_sys::heap_attisnull(
                        tuple,
                        pg_sys::Anum_pg_index_indpred as i32,
                        std::ptr::null_mut(),
                    )
                    && columns.iter().enumerate().all(|(k, c)| {
                        *(*form).indkey.values.as_slice(keys).get(k).unwrap_or(&0) == *c
                    });
                pg_sys::ReleaseSysCache(tuple);
                if matches {
                    let idx = pg_sys::index_open(oid, pg_sys::AccessShareLock as i32);
                    let btree = (*(*idx).rd_rel).relam == Oid::from(pg_sys::BTREE_AM_OID);
                    pg_sys::index_close(idx, pg_sys::NoLock as i32);
                    if btree {
                        found = Some(oid);
                        break;
                    }
                }
            }
            pg_sys::list_free(list);
            found
        }
    }

    /// The attribute number of a column by name (`None`: no such column, or dropped).
    pub fn attnum(&self, name: &CStr) -> Option<i16> {
        // SAFETY: the relation is open; a syscache lookup of its column by name.
        let n = unsafe { pg_sys::get_attnum((*self.rel).rd_id, name.as_ptr()) };
        (n > 0).then_some(n)
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: opened by Table::open; the lock is kept to the end of the transaction.
        unsafe { pg_sys::table_close(self.rel, pg_sys::NoLock as i32) }
    }
}

/// Does relation `rel` have a column `name` (not dropped)? A syscache lookup, no lock.
pub fn has_column(rel: pg_sys::Oid, name: &CStr) -> bool {
    // SAFETY: a syscache lookup by relation oid and column name; an unknown oid finds nothing.
    unsafe { pg_sys::get_attnum(rel, name.as_ptr()) > 0 }
}

/// Where a row was found: the start of its chain of versions, as an index entry holds it.
#[derive(Clone, Copy)]
pub struct Tid(pg_sys::ItemPointerData);

/// A slot made for one table, dropped with this.
struct OwnSlot(*mut pg_sys::TupleTableSlot);

impl Drop for OwnSlot {
    fn drop(&mut self) {
        // SAFETY: made by Table::own_slot, released once.
        unsafe { pg_sys::ExecDropSingleTupleTableSlot(self.0) }
    }
}

impl Table {
    /// A slot for this table's rows.
    fn own_slot(&self) -> OwnSlot {
        // SAFETY: the relation is open.
        OwnSlot(unsafe { pg_sys::table_slot_create(self.rel, std::ptr::null_mut()) })
    }
}

/// PostgreSQL's `SnapshotSelf` (static: it needs no registration).
fn self_snapshot() -> pg_sys::Snapshot {
    &raw mut pg_sys::SnapshotSelfData
}
