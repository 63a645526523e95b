//! A key's last row read from a btree's pages directly ([`crate::pg::btree`]), from the leaf
//! page the key was found on last time ([`PageHint`]), with [`Table::probe_last`] when the
//! pages do not prove the answer.

use super::{self_snapshot, Found, Table};
use crate::pg::error::Result;
use pgrx::pg_sys::{self, Datum, Oid};

impl Table {
    /// Can [`probe_last_paged`](Self::probe_last_paged) read `index` (see
    /// [`crate::pg::btree::fits`])? Looked up in the catalogs: for the caller to keep.
    pub fn index_fits(&self, index: Oid) -> bool {
        if cfg!(feature = "bench_api_probe") {
            return false; // the benchmark's build that measures PostgreSQL's index scan instead
        }
        // SAFETY: the index is opened, read and closed (its lock kept).
        unsafe {
            let idx = pg_sys::index_open(index, pg_sys::AccessShareLock as i32);
            let fits = (*idx).rd_index.as_ref().map(|i| i.indrelid) == Some(self.oid())
                && crate::pg::btree::fits(idx);
            pg_sys::index_close(idx, pg_sys::NoLock as i32);
            fits
        }
    }

    /// [`probe_last`](Self::probe_last) for a btree `index` on `(uuid, bigint, ...)` (one
    /// [`index_fits`](Self::index_fits) said yes to) and a uuid `key`: the index's pages are
    /// read directly ([`crate::pg::btree`]) from the leaf page the key was found on last time
    /// (`hint`, which keeps the page found now), and only the row of the key's greatest entry
    /// is fetched. When the pages do not prove the answer, or that row is not visible (its
    /// writer aborted, or it was deleted), it is [`probe_last`](Self::probe_last) with `from`.
    /// When the greatest entry's second column is `known` (a row the caller knows to be
    /// committed, and knows), no row is fetched: [`Paged::Known`]. The row fetched is checked
    /// by `is_it` (given the entry's second column) to be the entry's: the leaf page is no
    /// longer pinned then, so VACUUM may have removed a dead entry and given its place to
    /// another row meanwhile.
    #[allow(clippy::too_many_arguments)]
    pub fn probe_last_paged<T>(
        &self,
        index: Oid,
        key: &[u8; 16],
        from: Option<i64>,
        known: Option<i64>,
        hint: &mut Option<PageHint>,
        is_it: impl Fn(&Found<'_>, i64) -> Result<bool>,
        found: impl Fn(&Found<'_>) -> Result<T>,
    ) -> Result<Paged<T>> {
        use crate::pg::btree::{last_entry, Last, Place};
        // SAFETY: the index is opened (locked to the end of the transaction) around the read
        // of its pages; the hint is used only for the file it was found in (a btree's file
        // never shrinks: it is replaced whole when rewritten, except by a TRUNCATE in the
        // transaction that made the file, which empties it in place: then no hint is used).
        let last = unsafe {
            let idx = pg_sys::index_open(index, crate::pg::compat::read_lock(index) as i32);
            let file = (*(*idx).rd_rel).relfilenode;
            let start = hint
                .filter(|h| h.index == index && h.file == file)
                .filter(|_| !crate::pg::compat::file_made_in_transaction(idx))
                .map(|h| h.place);
            let last = last_entry(idx, key, start);
            pg_sys::index_close(idx, pg_sys::NoLock as i32);
            if let Last::Entry { block, offset, .. } = last {
                let place = Place { block, offset };
                *hint = Some(PageHint { index, file, place });
            }
            last
        };
        let by_scan = |found| {
            self.probe_last(
                index,
                Datum::from(key.as_ptr()),
                pg_sys::F_UUID_EQ,
                from,
                found,
            )
            .map(Paged::Found)
        };
        let (mut tid, id) = match last {
            Last::None => return Ok(Paged::Found(None)),
            Last::Entry { id, .. } if Some(id) == known => return Ok(Paged::Known),
            Last::Entry { tid, id, .. } => (tid, id),
            Last::Unknown => return by_scan(found),
        };
        let (release, snapshot) = (self.own_slot(), self_snapshot());
        // SAFETY: a slot made for the open relation; the place comes from an index entry of
        // this relation (its row not vacuumed away while the entry stands).
        let visible = unsafe {
            pg_sys::table_tuple_fetch_row_version(self.rel, &mut tid, snapshot, release.0)
        };
        let row = Found {
            table: self,
            slot: release.0,
            snapshot,
        };
        if !visible || !is_it(&row, id)? {
            drop(release);
            return by_scan(found);
        }
        found(&row).map(|t| Paged::Found(Some(t)))
    }
}

/// What [`Table::probe_last_paged`] found: the row (or none), or that the greatest entry is the
/// one the caller knows.
pub enum Paged<T> {
    Found(Option<T>),
    Known,
}

/// Where a key's last entry was found in an index (see [`Table::probe_last_paged`]): the leaf
/// page and the offset on it, in the index's file of then.
#[derive(Clone, Copy, Debug)]
pub struct PageHint {
    index: Oid,
    file: Oid,
    place: crate::pg::btree::Place,
}
