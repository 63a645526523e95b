//! Table access without SPI, for the hot path of the triggers: open a relation, find a row by
//! the first column of an index (equality), read its columns (type-checked), and lock it as
//! `SELECT ... FOR NO KEY UPDATE` / `FOR SHARE` do, following concurrent updates to the latest
//! version. No executor, plan cache or SPI connection is set up.

use crate::pg::datum::{self, FromDatum};
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE, SERIALIZATION_FAILURE};
use crate::pg::trigger::Columns;
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

/// A page of a row updated in place is pruned when less room than this is left (more than a
/// row version not stored out of line can take).
const PRUNE_BELOW: usize = 2048 + 256;

/// A copy of a row's latest version, taken after locking it, to update it later in the same
/// call ([`Table::update`]).
pub struct Held {
    tuple: pg_sys::HeapTuple,
}

impl Table {
    /// Replace the held row's version by one with `changes` (1-based columns; `None`: NULL),
    /// as an UPDATE would, without the executor: the row's triggers do not fire and no
    /// constraint is checked (the caller owns the row's meaning). The table must be open with
    /// `RowExclusiveLock`. Index entries are made when the new version needs them; the command
    /// counter moves on, so later statements and later rows of this statement see the new
    /// version, whose place comes back.
    ///
    /// The held version need not be locked: a concurrent writer of it is waited for, as an
    /// UPDATE waits, and if it committed a newer version first, nothing is written and `None`
    /// comes back (the caller decides again on the newer version). Once the update is made,
    /// the row is held as [`RowLock::NoKeyUpdate`] holds it, to the end of the transaction. A
    /// cancel, lock timeout or deadlock while waiting comes back whole.
    pub fn update(
        &self,
        held: &Held,
        changes: &[(i32, Option<Datum>)],
        what: &str,
    ) -> Result<Option<Tid>> {
        // SAFETY: held is a copy of a version of a row of this relation (its t_self is that
        // version's place); the columns were resolved against the relation's descriptor and
        // the values are datums of their types (the caller's). heap_update may wait, so it runs
        // under catch; the executor state, result relation and slot for the index entries are
        // made and freed here.
        unsafe {
            let desc = (*self.rel).rd_att;
            let new = crate::pg::trigger::modify_tuple(held.tuple, desc, changes);
            let mut otid = (*held.tuple).t_self;
            let mut tmfd = pg_sys::TM_FailureData::default();
            let (rel, otid_ptr, tmfd_ptr) = (
                self.rel,
                &mut otid as *mut pg_sys::ItemPointerData,
                &mut tmfd as *mut pg_sys::TM_FailureData,
            );
            let cid = pg_sys::GetCurrentCommandId(true);
            let (result, indexed) = crate::pg::catch::catch(|| {
                crate::pg::compat::heap_update_waiting(rel, otid_ptr, new, cid, tmfd_ptr)
            })?;
            match result {
                pg_sys::TM_Result::TM_Ok => {}
                pg_sys::TM_Result::TM_Updated => return Ok(None),
                other => return Err(not_latest(other, what)),
            }
            if indexed {
                let estate = pg_sys::CreateExecutorState();
                let rri = pg_sys::palloc0(std::mem::size_of::<pg_sys::ResultRelInfo>())
                    as *mut pg_sys::ResultRelInfo;
                pg_sys::InitResultRelInfo(rri, self.rel, 1, std::ptr::null_mut(), 0);
                pg_sys::ExecOpenIndices(rri, false);
                let slot = pg_sys::MakeSingleTupleTableSlot(desc, &pg_sys::TTSOpsHeapTuple);
                pg_sys::ExecStoreHeapTuple(new, slot, false);
                crate::pg::compat::insert_index_entries(rri, slot, estate);
                pg_sys::ExecDropSingleTupleTableSlot(slot);
                pg_sys::ExecCloseIndices(rri);
                pg_sys::FreeExecutorState(estate);
            }
            pg_sys::CommandCounterIncrement();
            Ok(Some(Tid((*new).t_self)))
        }
    }
}

/// Why a row could not be locked or written other than a newer version committed first: it
/// was changed by this very statement, or deleted while we waited.
fn not_latest(result: pg_sys::TM_Result::Type, what: &str) -> Error {
    if result == pg_sys::TM_Result::TM_SelfModified {
        // A data-modifying WITH that updates the row and writes what depends on it: the
        // version at hand may be stale.
        return Error::new(
            pg_labels_core::sqlstate::TRIGGERED_DATA_CHANGE_VIOLATION,
            format!("a step cannot be written by the statement that changes its {what}"),
        )
        .detail(format!(
            "The {what}'s row was updated by the same command; its labels could be read stale."
        ))
        .hint("Write the step in a statement of its own.");
    }
    Error::new(
        SERIALIZATION_FAILURE,
        format!("could not serialize access to a {what} being changed concurrently"),
    )
    .detail(format!(
        "The {what} was deleted or moved while this statement waited for it."
    ))
    .hint("Retry the transaction.")
}

/// Where a row was found: the start of its chain of versions, as an index entry holds it.
#[derive(Clone, Copy)]
pub struct Tid(pg_sys::ItemPointerData);

// These read a backend variable and cannot raise: called without pgrx's FFI guard (the
// row-level security predicates call them for every row).
unsafe extern "C" {
    #[link_name = "ActiveSnapshotSet"]
    fn active_snapshot_set() -> bool;
    #[link_name = "GetActiveSnapshot"]
    fn get_active_snapshot() -> pg_sys::Snapshot;
}

/// What the active snapshot sees, held by value: two MVCC snapshots with the same `xmin`,
/// `xmax`, lists of running transactions (`xip`, `subxip`, `suboverflowed`) and command id
/// see the same rows of every table ([`Table::probe`] reads with the active snapshot), as far
/// as other transactions go; the command id covers this transaction's own writes, and a
/// subtransaction's rollback (which changes what they show without a new command) is the
/// caller's to watch. The count of invalidation messages this backend has read is part of it:
/// a privilege granted or revoked since changes it. Lists of more than [`VIEW_XIDS`] ids are not
/// held (`None`), nor a snapshot taken on a standby (whose lists are kept otherwise).
#[derive(Clone, PartialEq, Eq)]
pub struct View {
    head: [u64; 3],
    xids: Vec<u32>,
}

/// The longest lists of running transactions a [`View`] holds.
const VIEW_XIDS: usize = 1024;

/// The active MVCC snapshot, with its head and lists of running transactions.
fn active_mvcc() -> Option<(
    [u64; 3],
    &'static [pg_sys::TransactionId],
    &'static [pg_sys::TransactionId],
)> {
    // SAFETY: reads the active snapshot, which lives while it is active (the slices are used
    // before the caller returns to PostgreSQL); xip and subxip hold xcnt and subxcnt ids.
    unsafe {
        if !active_snapshot_set() {
            return None;
        }
        let s = &*get_active_snapshot();
        if s.snapshot_type != pg_sys::SnapshotType::SNAPSHOT_MVCC
            || s.takenDuringRecovery
            || s.subxcnt < 0
            || s.xcnt as usize + s.subxcnt as usize > VIEW_XIDS
        {
            return None;
        }
        let list = |p: *mut pg_sys::TransactionId, n: usize| {
            if n == 0 || p.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(p as *const pg_sys::TransactionId, n)
            }
        };
        Some((
            head_of(s),
            list(s.xip, s.xcnt as usize),
            list(s.subxip, s.subxcnt as usize),
        ))
    }
}

/// The head of the active MVCC snapshot alone: its bounds, its command id and how many
/// invalidations this backend has read until now. It changes after any change to the catalogs
/// that this backend can see (its own, after the next command; another's, once read). Also on
/// a standby, and whatever the number of running transactions (which [`View`] does not hold).
/// Does relation `rel` have a column `name` (not dropped)? A syscache lookup, no lock.
pub fn has_column(rel: pg_sys::Oid, name: &CStr) -> bool {
    // SAFETY: a syscache lookup by relation oid and column name; an unknown oid finds nothing.
    unsafe { pg_sys::get_attnum(rel, name.as_ptr()) > 0 }
}

pub fn active_head() -> Option<[u64; 3]> {
    // SAFETY: reads the active snapshot, which lives while it is active.
    unsafe {
        if !active_snapshot_set() {
            return None;
        }
        let s = &*get_active_snapshot();
        (s.snapshot_type == pg_sys::SnapshotType::SNAPSHOT_MVCC).then(|| head_of(s))
    }
}

/// The head of a snapshot: see [`active_head`].
fn head_of(s: &pg_sys::SnapshotData) -> [u64; 3] {
    [
        u64::from(s.xmin.into_inner()) << 32 | u64::from(s.xmax.into_inner()),
        u64::from(s.curcid) << 1 | u64::from(s.suboverflowed),
        // SAFETY: a plain read of this backend's count of invalidations read.
        unsafe { pg_sys::SharedInvalidMessageCounter },
    ]
}

/// The active snapshot's [`View`].
pub fn active_view() -> Option<View> {
    let (head, xip, subxip) = active_mvcc()?;
    let mut xids = Vec::with_capacity(xip.len() + subxip.len() + 1);
    xids.extend(xip.iter().map(|x| x.into_inner()));
    xids.push(u32::MAX); // where xip ends
    xids.extend(subxip.iter().map(|x| x.into_inner()));
    Some(View { head, xids })
}

/// Is `view` what the active snapshot sees (without copying its lists)?
pub fn is_active_view(view: &View) -> bool {
    let Some((head, xip, subxip)) = active_mvcc() else {
        return false;
    };
    head == view.head
        && view.xids.len() == xip.len() + subxip.len() + 1
        && xip
            .iter()
            .map(|x| x.into_inner())
            .eq(view.xids[..xip.len()].iter().copied())
        && view.xids[xip.len()] == u32::MAX
        && subxip
            .iter()
            .map(|x| x.into_inner())
            .eq(view.xids[xip.len() + 1..].iter().copied())
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: opened by Table::open; the lock is kept to the end of the transaction.
        unsafe { pg_sys::table_close(self.rel, pg_sys::NoLock as i32) }
    }
}

/// A row found by [`Table::probe`].
pub struct Found<'t> {
    table: &'t Table,
    slot: *mut pg_sys::TupleTableSlot,
    snapshot: pg_sys::Snapshot,
}

/// How strongly to lock a row.
#[derive(Clone, Copy)]
pub enum RowLock {
    /// `FOR NO KEY UPDATE`: serializes writers of the row.
    NoKeyUpdate,
    /// `FOR SHARE`: keeps others from changing it until we commit.
    Share,
}

impl Found<'_> {
    /// Column `col` (1-based, resolved with [`Table::columns`]) as `T`.
    pub fn get<'a, T: FromDatum<'a>>(&'a self, col: i32) -> Result<Option<T>> {
        // SAFETY: the slot holds a row of the relation; col was resolved against its
        // descriptor, so it is in range; the value lives as long as the slot ('a).
        unsafe {
            let n = col as usize;
            if ((*self.slot).tts_nvalid as usize) < n {
                pg_sys::slot_getsomeattrs_int(self.slot, col);
            }
            let value =
                (!*(*self.slot).tts_isnull.add(n - 1)).then(|| *(*self.slot).tts_values.add(n - 1));
            let desc = (*self.slot).tts_tupleDescriptor;
            let attr = crate::pg::compat::attr(desc, col);
            datum::read(value, attr.atttypid, || "column".to_string())
        }
    }

    /// The raw datum of column `col` (for a value checked to be of a varlena type by the
    /// caller's [`Columns`]), read without detoasting.
    pub fn raw(&self, col: i32) -> Option<Datum> {
        // SAFETY: as in get.
        unsafe {
            let n = col as usize;
            if ((*self.slot).tts_nvalid as usize) < n {
                pg_sys::slot_getsomeattrs_int(self.slot, col);
            }
            (!*(*self.slot).tts_isnull.add(n - 1)).then(|| *(*self.slot).tts_values.add(n - 1))
        }
    }

    /// Is the version found possibly being written or locked by another transaction (it has
    /// an xmax not known to be invalid)? A hint: [`Table::update`] waits for such a writer.
    pub fn may_be_held(&self) -> bool {
        // SAFETY: the slot holds a row of the relation, as a heap tuple for a heap slot; any
        // other slot counts as held.
        unsafe {
            if (*self.slot).tts_ops != &raw const pg_sys::TTSOpsBufferHeapTuple {
                return true;
            }
            let tuple = (*(self.slot as *mut pg_sys::BufferHeapTupleTableSlot))
                .base
                .tuple;
            if tuple.is_null() || (*tuple).t_data.is_null() {
                return true;
            }
            (*(*tuple).t_data).t_infomask & pg_sys::HEAP_XMAX_INVALID as u16 == 0
        }
    }

    /// Is the version found being written or locked by another transaction in progress, or
    /// replaced by a newer version (PostgreSQL's `HeapTupleSatisfiesUpdate` is not `TM_Ok`)?
    /// Exact where [`may_be_held`](Self::may_be_held) is a hint: a lock of a transaction that
    /// ended does not count.
    pub fn held_by_other(&self) -> bool {
        if !self.may_be_held() {
            return false;
        }
        // SAFETY: may_be_held checked a buffered heap tuple; the slot keeps its buffer pinned,
        // and the page is share-locked around the check (which may set hint bits), as
        // heap_lock_tuple's callers do.
        unsafe {
            let bslot = self.slot as *mut pg_sys::BufferHeapTupleTableSlot;
            let buf = (*bslot).buffer;
            if buf == pg_sys::InvalidBuffer as pg_sys::Buffer {
                return true;
            }
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_SHARE as i32);
            let result = pg_sys::HeapTupleSatisfiesUpdate(
                (*bslot).base.tuple,
                pg_sys::GetCurrentCommandId(false),
                buf,
            );
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_UNLOCK as i32);
            result != pg_sys::TM_Result::TM_Ok
        }
    }

    /// A copy of the row as the slot holds it (after [`lock`](Self::lock): its latest
    /// version), to update it later.
    pub fn hold(&self) -> Held {
        // SAFETY: the slot holds a row; the copy is palloc'd in the current memory context.
        Held {
            tuple: unsafe { pg_sys::ExecCopySlotHeapTuple(self.slot) },
        }
    }

    /// Lock the row until the end of the transaction, waiting for concurrent writers and
    /// following their updates to the latest version (which the slot then holds). A cancel,
    /// lock timeout or deadlock while waiting comes back whole (see [`crate::pg::catch`]).
    pub fn lock(&self, mode: RowLock, what: &str) -> Result<()> {
        // SAFETY: the slot holds a row of the open relation found with `snapshot`; the table
        // AM's tuple_lock is called as heap_lock_tuple's callers do.
        unsafe {
            let rel = self.table.rel;
            let mut tid = (*self.slot).tts_tid;
            let mut tmfd = pg_sys::TM_FailureData::default();
            let lock = (*(*rel).rd_tableam).tuple_lock.ok_or_else(|| {
                Error::new(
                    NOT_IN_PREREQUISITE_STATE,
                    "pg_labels: table access method without tuple_lock",
                )
            })?;
            let cid = pg_sys::GetCurrentCommandId(false);
            let (tid_ptr, tmfd_ptr) = (
                &mut tid as *mut pg_sys::ItemPointerData,
                &mut tmfd as *mut pg_sys::TM_FailureData,
            );
            let (slot, snapshot) = (self.slot, self.snapshot);
            let mode = match mode {
                RowLock::NoKeyUpdate => pg_sys::LockTupleMode::LockTupleNoKeyExclusive,
                RowLock::Share => pg_sys::LockTupleMode::LockTupleShare,
            };
            let result = crate::pg::catch::catch(|| {
                lock(
                    rel,
                    tid_ptr,
                    snapshot,
                    slot,
                    cid,
                    mode,
                    pg_sys::LockWaitPolicy::LockWaitBlock,
                    pg_sys::TUPLE_LOCK_FLAG_FIND_LAST_VERSION as u8,
                    tmfd_ptr,
                )
            })?;
            match result {
                pg_sys::TM_Result::TM_Ok => Ok(()),
                other => Err(not_latest(other, what)),
            }
        }
    }
}
