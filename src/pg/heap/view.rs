//! What the active snapshot sees: its head (bounds, command id, invalidations read) and a
//! [`View`] of it held by value, to tell whether a later snapshot sees the same rows.

use pgrx::pg_sys;

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
/// see the same rows of every table ([`Table::probe`](super::Table::probe) reads with the
/// active snapshot), as far as other transactions go; the command id covers this transaction's
/// own writes, and a subtransaction's rollback (which changes what they show without a new
/// command) is the caller's to watch. The count of invalidation messages this backend has read
/// is part of it: a privilege granted or revoked since changes it. Lists of more than
/// [`VIEW_XIDS`] ids are not held (`None`), nor a snapshot taken on a standby (whose lists are
/// kept otherwise).
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
