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
