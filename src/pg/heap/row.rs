//! The row a probe found: its columns read (type-checked), whether another transaction holds
//! it, locking it as `SELECT ... FOR NO KEY UPDATE` / `FOR SHARE` do, and updating it in place
//! of an UPDATE (without the executor).

use super::{Table, Tid};
use crate::pg::datum::{self, FromDatum};
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE, SERIALIZATION_FAILURE};
use pgrx::pg_sys::{self, Datum};

/// A row found by [`Table::probe`].
pub struct Found<'t> {
    pub(super) table: &'t Table,
    pub(super) slot: *mut pg_sys::TupleTableSlot,
    pub(super) snapshot: pg_sys::Snapshot,
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
    /// caller's [`Columns`](crate::pg::columns::Columns)), read without detoasting.
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
            let new = crate::pg::tuple::modify_tuple(held.tuple, desc, changes);
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
