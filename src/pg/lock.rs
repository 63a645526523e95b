//! Locks of the lock manager on objects of the extension's own: no WAL, no page written,
//! released at the end of the transaction (or when a subtransaction that took them aborts),
//! seen by the deadlock detector, waited for under `lock_timeout`. They live in the advisory
//! lock space of the current database with a fourth key field no SQL function uses
//! ([`FIELD4`]): `pg_advisory_lock()` and friends (1 and 2) can neither take nor release them.
//! `pg_locks` shows them as `advisory` locks with `objsubid` 20556.

use crate::pg::error::Result;
use pgrx::pg_sys;

// The lock manager's entry points, without pgrx's guard: called under catch, whose restore
// point must be the one an error jumps to (pgrx's guard would turn it into a panic that
// unwinds past catch).
unsafe extern "C-unwind" {
    #[link_name = "LockAcquire"]
    fn lock_acquire(
        locktag: *const pg_sys::LOCKTAG,
        lockmode: pg_sys::LOCKMODE,
        session_lock: bool,
        dont_wait: bool,
    ) -> pg_sys::LockAcquireResult::Type;
}

/// The fourth key field of the extension's locks ("PL").
pub const FIELD4: u16 = 0x504C;

/// A lock on an object named by 64 bits.
#[derive(Clone, Copy)]
pub struct ObjectLock(pg_sys::LOCKTAG);

impl ObjectLock {
    pub fn new(key: u64) -> ObjectLock {
        ObjectLock::in_space(FIELD4, key)
    }

    /// A lock of another space than the runs' (its own fourth key field, not 1 or 2: no SQL
    /// function reaches it either).
    pub fn in_space(space: u16, key: u64) -> ObjectLock {
        // SAFETY: reads the backend's database id.
        let db = unsafe { pg_sys::MyDatabaseId };
        ObjectLock(pg_sys::LOCKTAG {
            locktag_field1: u32::from(db),
            locktag_field2: (key >> 32) as u32,
            locktag_field3: key as u32,
            locktag_field4: space,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        })
    }

    /// Take the lock in `mode` until the end of the transaction, waiting for holders of a
    /// conflicting mode. A cancel, lock timeout, deadlock or a full lock table comes back
    /// whole.
    pub fn acquire(&self, mode: u32) -> Result<()> {
        let tag = &self.0 as *const pg_sys::LOCKTAG;
        // SAFETY: a valid lock tag of the user lock method; LockAcquire may wait and raise,
        // so it runs (unguarded) under catch, and owns nothing a jump would skip.
        unsafe {
            crate::pg::catch::catch(|| {
                lock_acquire(tag, mode as pg_sys::LOCKMODE, false, false);
            })
        }
    }

    /// Give up one hold of the lock in `mode` before the end of the transaction.
    pub fn release(&self, mode: u32) {
        // SAFETY: a valid lock tag; releasing a lock not held only warns.
        unsafe {
            pg_sys::LockRelease(&self.0, mode as pg_sys::LOCKMODE, false);
        }
    }
}
