//! Finding a row of a table through an index: by its key with the statement's or the latest
//! snapshot, where it was found last time (a hint) or where this transaction wrote it, or the
//! last of a key's rows as this transaction sees rows now.

use super::{self_snapshot, Found, Table, Tid};
use crate::pg::error::Result;
use pgrx::pg_sys::{self, Datum, Oid};

impl Table {
    /// Find the row whose index key (first column of `index`) equals `key` (compared with
    /// `eq_proc`), visible to the latest snapshot (`latest`) or the statement's, and hand it to
    /// `found`.
    pub fn probe<T>(
        &self,
        index: Oid,
        key: Datum,
        eq_proc: u32,
        latest: bool,
        found: impl FnOnce(&Found<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        self.with_slot(
            latest,
            |slot, snapshot| {
                // SAFETY: as in with_slot; a scan of the relation's own index.
                let hit = unsafe { self.index_fetch(index, key, eq_proc, slot, snapshot) };
                Ok(hit.map(|_| (slot, snapshot)))
            },
            found,
        )
    }

    /// [`probe`](Self::probe) with the latest snapshot, trying first the place where the row
    /// was found last time (`hint`), which `is_it` confirms (the place may hold another row
    /// by now, or none); the index is searched only when it does not, and `hint` then keeps the
    /// place the index gave. A place is the start of the row's chain of versions, as in an
    /// index entry: the latest visible version is found from it as an index scan finds it.
    ///
    /// `written`, when given, is the version this transaction wrote last (see
    /// [`update`](Self::update)): it is tried first, as the row's latest version if it is
    /// still visible (a row this transaction updated is written by no one else until it ends).
    #[allow(clippy::too_many_arguments)]
    pub fn probe_hinted<T>(
        &self,
        index: Oid,
        key: Datum,
        eq_proc: u32,
        written: Option<Tid>,
        hint: &mut Option<Tid>,
        is_it: impl Fn(&Found<'_>) -> Result<bool>,
        found: impl FnOnce(&Found<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        self.with_slot(
            true,
            |slot, snapshot| {
                if let Some(Tid(mut tid)) = written {
                    // SAFETY: an open relation, a slot made for it and a registered snapshot;
                    // the table AM checks the place (a version gone or invisible is none).
                    let hit = unsafe {
                        pg_sys::table_tuple_fetch_row_version(self.rel, &mut tid, snapshot, slot)
                    };
                    if hit
                        && is_it(&Found {
                            table: self,
                            slot,
                            snapshot,
                        })?
                    {
                        return Ok(Some((slot, snapshot)));
                    }
                }
                if let Some(Tid(tid)) = *hint {
                    // SAFETY: an open relation, a slot made for it and a registered snapshot; the
                    // block is checked to exist (VACUUM may have cut the table short since).
                    let hit = unsafe { self.fetch_at(tid, slot, snapshot) };
                    if hit
                        && is_it(&Found {
                            table: self,
                            slot,
                            snapshot,
                        })?
                    {
                        return Ok(Some((slot, snapshot)));
                    }
                }
                // SAFETY: as in probe.
                let hit = unsafe { self.index_fetch(index, key, eq_proc, slot, snapshot) };
                *hint = hit.map(Tid);
                Ok(hit.map(|_| (slot, snapshot)))
            },
            found,
        )
    }

    /// The row with the greatest index entry among those whose first key column equals `key`
    /// (a backward scan of a btree `index` of this relation), as this transaction sees rows
    /// now: every committed row and every row it wrote itself, also earlier in this very
    /// command (PostgreSQL's `SnapshotSelf`). For a row whose writers are serialized by a lock
    /// the caller holds: no other writer's row can be in progress.
    ///
    /// `from`, when given, is a likely lower bound of the index's second key column (a
    /// `bigint`): entries at or above it are read first, so the scan stops there instead of
    /// reading every entry of `key` on the leaf page; when no row at or above it is visible,
    /// every entry is.
    pub fn probe_last<T>(
        &self,
        index: Oid,
        key: Datum,
        eq_proc: u32,
        from: Option<i64>,
        found: impl Fn(&Found<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let (release, snapshot) = (self.own_slot(), self_snapshot());
        // SAFETY: as in probe, scanning backward.
        let hit = unsafe {
            self.index_scan(
                index,
                key,
                eq_proc,
                from,
                release.0,
                snapshot,
                pg_sys::ScanDirection::BackwardScanDirection,
            )
        };
        match hit {
            Some(_) => found(&Found {
                table: self,
                slot: release.0,
                snapshot,
            })
            .map(Some),
            None if from.is_some() => {
                drop(release);
                self.probe_last(index, key, eq_proc, None, found)
            }
            None => Ok(None),
        }
    }

    /// A slot and a snapshot for `search`, which fills the slot with a row or finds none;
    /// `found` gets the row. Both are released afterwards, whatever happened.
    fn with_slot<T>(
        &self,
        latest: bool,
        search: impl FnOnce(
            *mut pg_sys::TupleTableSlot,
            pg_sys::Snapshot,
        ) -> Result<Option<(*mut pg_sys::TupleTableSlot, pg_sys::Snapshot)>>,
        found: impl FnOnce(&Found<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        struct Release(*mut pg_sys::TupleTableSlot, pg_sys::Snapshot);
        impl Drop for Release {
            fn drop(&mut self) {
                // SAFETY: made and registered by with_slot, released once.
                unsafe {
                    pg_sys::ExecDropSingleTupleTableSlot(self.0);
                    pg_sys::UnregisterSnapshot(self.1);
                }
            }
        }
        // SAFETY: a snapshot registered and a slot made for the open relation, released by
        // Release (also when search or found fails).
        let release = unsafe {
            let snapshot = pg_sys::RegisterSnapshot(if latest {
                pg_sys::GetLatestSnapshot()
            } else {
                pg_sys::GetActiveSnapshot()
            });
            Release(
                pg_sys::table_slot_create(self.rel, std::ptr::null_mut()),
                snapshot,
            )
        };
        match search(release.0, release.1)? {
            Some((slot, snapshot)) => found(&Found {
                table: self,
                slot,
                snapshot,
            })
            .map(Some),
            None => Ok(None),
        }
    }

    /// Search `index` for `key`: the first row visible to `snapshot` lands in `slot`, and the
    /// place the index entry points at comes back.
    ///
    /// # Safety
    ///
    /// `index` is an index of this relation, `slot` was made for it, `snapshot` is registered.
    unsafe fn index_fetch(
        &self,
        index: Oid,
        key: Datum,
        eq_proc: u32,
        slot: *mut pg_sys::TupleTableSlot,
        snapshot: pg_sys::Snapshot,
    ) -> Option<pg_sys::ItemPointerData> {
        // SAFETY: the caller's guarantee.
        unsafe {
            self.index_scan(
                index,
                key,
                eq_proc,
                None,
                slot,
                snapshot,
                pg_sys::ScanDirection::ForwardScanDirection,
            )
        }
    }

    /// [`index_fetch`](Self::index_fetch) in either direction, with a lower bound `from` of
    /// the index's second key column (a `bigint`), if given.
    ///
    /// # Safety
    ///
    /// As for `index_fetch`; with `from`, the index's second key column is a `bigint`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn index_scan(
        &self,
        index: Oid,
        key: Datum,
        eq_proc: u32,
        from: Option<i64>,
        slot: *mut pg_sys::TupleTableSlot,
        snapshot: pg_sys::Snapshot,
        direction: pg_sys::ScanDirection::Type,
    ) -> Option<pg_sys::ItemPointerData> {
        // SAFETY: the caller's guarantee; the scan is set up and taken down in order, as
        // index_fetch callers do.
        unsafe {
            let idx = pg_sys::index_open(index, pg_sys::AccessShareLock as i32);
            let mut skeys = [
                pg_sys::ScanKeyData::default(),
                pg_sys::ScanKeyData::default(),
            ];
            pg_sys::ScanKeyEntryInitialize(
                &mut skeys[0],
                0,
                1,
                pg_sys::BTEqualStrategyNumber as u16,
                Oid::INVALID,
                *(*idx).rd_indcollation,
                Oid::from(eq_proc),
                key,
            );
            let mut nkeys = 1;
            if let Some(from) = from {
                pg_sys::ScanKeyEntryInitialize(
                    &mut skeys[1],
                    0,
                    2,
                    pg_sys::BTGreaterEqualStrategyNumber as u16,
                    Oid::INVALID,
                    *(*idx).rd_indcollation.add(1),
                    Oid::from(pg_sys::F_INT8GE),
                    Datum::from(from),
                );
                nkeys = 2;
            }
            let scan = crate::pg::compat::index_beginscan(self.rel, idx, snapshot, nkeys, 0);
            pg_sys::index_rescan(scan, skeys.as_mut_ptr(), nkeys, std::ptr::null_mut(), 0);
            // index_getnext_slot, keeping the place the entry points at (the start of the
            // row's chain of versions: the fetch moves xs_heaptid to the version it found,
            // which a later update of the row leaves behind)
            let place = loop {
                let tid = pg_sys::index_getnext_tid(scan, direction);
                if tid.is_null() {
                    break None;
                }
                let root = *tid;
                if pg_sys::index_fetch_heap(scan, slot) {
                    break Some(root);
                }
            };
            pg_sys::index_endscan(scan);
            pg_sys::index_close(idx, pg_sys::NoLock as i32);
            place
        }
    }

    /// Fetch the version visible to `snapshot` of the row whose chain starts at `tid` into
    /// `slot` (false when there is none, or no such place).
    ///
    /// # Safety
    ///
    /// `slot` was made for this relation, `snapshot` is registered.
    unsafe fn fetch_at(
        &self,
        tid: pg_sys::ItemPointerData,
        slot: *mut pg_sys::TupleTableSlot,
        snapshot: pg_sys::Snapshot,
    ) -> bool {
        // SAFETY: the caller's guarantee; a heap relation (checked) and its slot of buffered
        // heap tuples (checked): the page is read, pinned and share-locked around the search
        // of the chain of versions, as an index fetch does, on a block that exists (a place
        // past the end is no place).
        unsafe {
            let block = (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo);
            if (*self.rel).rd_tableam != pg_sys::GetHeapamTableAmRoutine()
                || (*slot).tts_ops != &raw const pg_sys::TTSOpsBufferHeapTuple
            {
                return false;
            }
            if block
                >= pg_sys::RelationGetNumberOfBlocksInFork(
                    self.rel,
                    pg_sys::ForkNumber::MAIN_FORKNUM,
                )
            {
                return false;
            }
            let buf = pg_sys::ReadBuffer(self.rel, block);
            // PostgreSQL prunes a page on every read once its free space is below what the
            // fillfactor keeps (always, for a page whose rows are updated in place, as runs
            // are on every step); here only when the next versions may not fit: one prune for
            // many updates of its rows
            if pg_sys::PageGetHeapFreeSpace(pg_sys::BufferGetPage(buf) as _) < PRUNE_BELOW {
                pg_sys::heap_page_prune_opt(self.rel, buf);
            }
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_SHARE as i32);
            let bslot = slot as *mut pg_sys::BufferHeapTupleTableSlot;
            let tuple = &mut (*bslot).base.tupdata as *mut pg_sys::HeapTupleData;
            let (mut place, mut all_dead) = (tid, false);
            let hit = pg_sys::heap_hot_search_buffer(
                &mut place,
                self.rel,
                buf,
                snapshot,
                tuple,
                &mut all_dead,
                true,
            );
            if hit {
                // the slot takes its own pin
                pg_sys::ExecStoreBufferHeapTuple(tuple, slot, buf);
            }
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_UNLOCK as i32);
            pg_sys::ReleaseBuffer(buf);
            hit
        }
    }
}

/// A page of a row updated in place is pruned when less room than this is left (more than a
/// row version not stored out of line can take).
const PRUNE_BELOW: usize = 2048 + 256;
