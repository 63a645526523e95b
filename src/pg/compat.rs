//! What differs between the PostgreSQL major versions pg_labels supports, in one place. The
//! rest of the crate calls these and never tests a version itself.

use pgrx::pg_sys::{self, Oid};

/// Attribute `n` (1-based) of a tuple descriptor.
///
/// # Safety
/// `desc` must be a valid tuple descriptor with at least `n` attributes.
#[inline]
pub unsafe fn attr<'a>(desc: pg_sys::TupleDesc, n: i32) -> &'a pg_sys::FormData_pg_attribute {
    // SAFETY: the caller's guarantee; the attribute array holds natts entries.
    #[cfg(not(feature = "pg18"))]
    unsafe {
        &*(*desc).attrs.as_ptr().add(n as usize - 1)
    }
    // SAFETY: as above; from 18 on the array is reached through TupleDescAttr.
    #[cfg(feature = "pg18")]
    unsafe {
        &*pg_sys::TupleDescAttr(desc, n - 1)
    }
}

/// The primary key index of an open relation (InvalidOid if none).
///
/// # Safety
/// `rel` must be an open relation.
#[inline]
pub unsafe fn primary_key_index(rel: pg_sys::Relation) -> Oid {
    // SAFETY: the caller's guarantee.
    #[cfg(not(feature = "pg18"))]
    unsafe {
        pg_sys::RelationGetPrimaryKeyIndex(rel)
    }
    // SAFETY: as above; 18 added "deferrable_ok".
    #[cfg(feature = "pg18")]
    unsafe {
        pg_sys::RelationGetPrimaryKeyIndex(rel, false)
    }
}

/// Start an index scan.
///
/// # Safety
/// `rel` and `idx` must be open, `idx` an index of `rel`, `snapshot` registered.
#[inline]
pub unsafe fn index_beginscan(
    rel: pg_sys::Relation,
    idx: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
    norderbys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: the caller's guarantee.
    #[cfg(not(feature = "pg18"))]
    unsafe {
        pg_sys::index_beginscan(rel, idx, snapshot, nkeys, norderbys)
    }
    // SAFETY: as above; 18 added the instrumentation argument (none here).
    #[cfg(feature = "pg18")]
    unsafe {
        pg_sys::index_beginscan(rel, idx, snapshot, std::ptr::null_mut(), nkeys, norderbys)
    }
}

/// Update a row in place of its version at `otid`, with no executor, waiting for a concurrent
/// writer of that version to end (as an UPDATE does): the result (`TM_Ok`, or `TM_Updated` when
/// that writer committed a newer version first, ...) and, when it is `TM_Ok`, whether the new
/// version needs index entries (it is not a heap-only tuple).
///
/// # Safety
/// `rel` must be open with `RowExclusiveLock`, `otid` a version of one of its rows, `tup` a
/// tuple of the relation's descriptor, `tmfd` writable. Waiting can raise (cancel, lock timeout,
/// deadlock): call it under [`crate::pg::catch::catch`].
pub unsafe fn heap_update_waiting(
    rel: pg_sys::Relation,
    otid: *mut pg_sys::ItemPointerData,
    tup: pg_sys::HeapTuple,
    cid: pg_sys::CommandId,
    tmfd: *mut pg_sys::TM_FailureData,
) -> (pg_sys::TM_Result::Type, bool) {
    let mut mode: pg_sys::LockTupleMode::Type = pg_sys::LockTupleMode::LockTupleNoKeyExclusive;
    // SAFETY: the caller's guarantee; the arguments simple_heap_update passes, but the result
    // comes back rather than raising "tuple concurrently updated".
    #[cfg(feature = "pg15")]
    unsafe {
        let result = raw_heap_update(
            rel,
            otid,
            tup,
            cid,
            std::ptr::null_mut(),
            true,
            tmfd,
            &mut mode,
        );
        let indexed = (*(*tup).t_data).t_infomask2 & pg_sys::HEAP_ONLY_TUPLE as u16 == 0;
        (result, indexed)
    }
    // SAFETY: as above; 16 reports which indexes need entries.
    #[cfg(not(feature = "pg15"))]
    unsafe {
        let mut which: pg_sys::TU_UpdateIndexes::Type = pg_sys::TU_UpdateIndexes::TU_None;
        let result = raw_heap_update(
            rel,
            otid,
            tup,
            cid,
            std::ptr::null_mut(),
            true,
            tmfd,
            &mut mode,
            &mut which,
        );
        (result, which != pg_sys::TU_UpdateIndexes::TU_None)
    }
}

// heap_update without pgrx's guard: it waits and may raise, and runs under catch, whose
// restore point must be the one an error jumps to.
#[cfg(feature = "pg15")]
unsafe extern "C-unwind" {
    #[link_name = "heap_update"]
    fn raw_heap_update(
        relation: pg_sys::Relation,
        otid: pg_sys::ItemPointer,
        newtup: pg_sys::HeapTuple,
        cid: pg_sys::CommandId,
        crosscheck: pg_sys::Snapshot,
        wait: bool,
        tmfd: *mut pg_sys::TM_FailureData,
        lockmode: *mut pg_sys::LockTupleMode::Type,
    ) -> pg_sys::TM_Result::Type;
}
#[cfg(not(feature = "pg15"))]
unsafe extern "C-unwind" {
    #[link_name = "heap_update"]
    fn raw_heap_update(
        relation: pg_sys::Relation,
        otid: pg_sys::ItemPointer,
        newtup: pg_sys::HeapTuple,
        cid: pg_sys::CommandId,
        crosscheck: pg_sys::Snapshot,
        wait: bool,
        tmfd: *mut pg_sys::TM_FailureData,
        lockmode: *mut pg_sys::LockTupleMode::Type,
        update_indexes: *mut pg_sys::TU_UpdateIndexes::Type,
    ) -> pg_sys::TM_Result::Type;
}

/// Insert the index entries of a new row version (every index: see heap_update_waiting).
///
/// # Safety
/// `rri` must have its indexes open, `slot` hold the new version, `estate` be a live executor
/// state.
pub unsafe fn insert_index_entries(
    rri: *mut pg_sys::ResultRelInfo,
    slot: *mut pg_sys::TupleTableSlot,
    estate: *mut pg_sys::EState,
) {
    // SAFETY: the caller's guarantee; "update" is false: no hint from the updated columns,
    // which need a range table this state does not have.
    #[cfg(feature = "pg15")]
    unsafe {
        pg_sys::ExecInsertIndexTuples(
            rri,
            slot,
            estate,
            false,
            false,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    }
    // SAFETY: as above; 16 added "onlySummarizing".
    #[cfg(not(feature = "pg15"))]
    unsafe {
        pg_sys::ExecInsertIndexTuples(
            rri,
            slot,
            estate,
            false,
            false,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            false,
        );
    }
}

/// Was the relation's file made in this transaction (the relation created, or given a new
/// file by TRUNCATE, REINDEX, ...)? A TRUNCATE then empties that file in place.
///
/// # Safety
/// `rel` is an open relation.
pub unsafe fn file_made_in_transaction(rel: pg_sys::Relation) -> bool {
    // SAFETY: the caller's guarantee.
    let r = unsafe { &*rel };
    #[cfg(feature = "pg15")]
    let first = r.rd_firstRelfilenodeSubid;
    #[cfg(not(feature = "pg15"))]
    let first = r.rd_firstRelfilelocatorSubid;
    r.rd_createSubid != 0 || first != 0
}

// The lock manager's local table, read without pgrx's guard (no error can be raised: a
// lookup of the backend's own hash table).
unsafe extern "C-unwind" {
    #[link_name = "LockHeldByMe"]
    #[cfg(not(any(feature = "pg17", feature = "pg18")))]
    fn lock_held_by_me(locktag: *const pg_sys::LOCKTAG, lockmode: pg_sys::LOCKMODE) -> bool;
    #[link_name = "LockHeldByMe"]
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    fn lock_held_by_me_or(
        locktag: *const pg_sys::LOCKTAG,
        lockmode: pg_sys::LOCKMODE,
        orstronger: bool,
    ) -> bool;
}

/// Does this backend hold relation `relid` (of this database) locked in one of `modes` (in
/// this transaction, or its session)? Each mode is one lookup in the backend's own lock table
/// (the modes a caller takes itself, or the executor's). Such a relation is opened without
/// taking another lock: nothing that conflicts with the lock held has run since it was
/// granted, and the invalidations committed before it were read then. (Changes that do not
/// conflict with it, such as ANALYZE or CREATE INDEX CONCURRENTLY, may have committed since
/// and are not read here, as they would be by a new lock mode; what the callers read of the
/// relation, its file, columns and indexes, changes only under a conflicting lock.)
pub fn relation_locked_by_me(relid: Oid, modes: &[u32]) -> bool {
    // SAFETY: reads the backend's database id and looks up its own local lock table, which
    // raises no error.
    unsafe {
        let tag = pg_sys::LOCKTAG {
            locktag_field1: u32::from(pg_sys::MyDatabaseId),
            locktag_field2: u32::from(relid),
            locktag_field3: 0,
            locktag_field4: 0,
            locktag_type: pg_sys::LockTagType::LOCKTAG_RELATION as u8,
            locktag_lockmethodid: pg_sys::DEFAULT_LOCKMETHOD as u8,
        };
        modes.iter().any(|&mode| {
            #[cfg(not(any(feature = "pg17", feature = "pg18")))]
            {
                lock_held_by_me(&tag, mode as pg_sys::LOCKMODE)
            }
            #[cfg(any(feature = "pg17", feature = "pg18"))]
            {
                lock_held_by_me_or(&tag, mode as pg_sys::LOCKMODE, false)
            }
        })
    }
}

/// The lock to open relation `relid` with for reading: none when this backend holds it locked
/// already, by the executor that writes it (`RowExclusiveLock`) or by a read before
/// (`AccessShareLock`); `AccessShareLock` otherwise.
pub fn read_lock(relid: Oid) -> u32 {
    if relation_locked_by_me(relid, &[pg_sys::RowExclusiveLock, pg_sys::AccessShareLock]) {
        pg_sys::NoLock
    } else {
        pg_sys::AccessShareLock
    }
}
