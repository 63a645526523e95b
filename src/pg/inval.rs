//! Knowing when what a backend keeps about catalogs goes stale: a count of the invalidations
//! this backend has read that could change a relation's name, schema, columns or privileges,
//! a schema's name, or a role's name, attributes or memberships. A cache tags what it keeps
//! with [`generation`] and trusts it while the count stays the same. The backend's own changes
//! count from its next command (and when a savepoint is rolled back: PostgreSQL reads them
//! then too).
//!
//! PostgreSQL delivers invalidations to a backend when it takes a lock on a relation and at the
//! start of each transaction, so a relation's trigger, which runs with its relation locked,
//! sees every change committed before that lock was granted.

use pgrx::pg_sys::{self, Datum, Oid};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(1);
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// # Safety
///
/// Called by PostgreSQL while it reads invalidations: it only bumps a counter (no allocation,
/// no error).
unsafe extern "C-unwind" fn relation_changed(_arg: Datum, _relid: Oid) {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// # Safety
///
/// As above, for a catalog cache (schemas, roles).
unsafe extern "C-unwind" fn catalog_changed(_arg: Datum, _cache: i32, _hash: u32) {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The count of invalidations read so far (registers the callbacks on first use).
pub fn generation() -> u64 {
    if !REGISTERED.swap(true, Ordering::Relaxed) {
        // SAFETY: registers plain functions, once per backend.
        unsafe {
            pg_sys::CacheRegisterRelcacheCallback(Some(relation_changed), Datum::from(0usize));
            for cache in [
                pg_sys::SysCacheIdentifier::NAMESPACEOID,
                pg_sys::SysCacheIdentifier::AUTHOID,
                pg_sys::SysCacheIdentifier::AUTHMEMMEMROLE,
            ] {
                pg_sys::CacheRegisterSyscacheCallback(
                    cache as i32,
                    Some(catalog_changed),
                    Datum::from(0usize),
                );
            }
        }
        // what was kept before the callbacks existed is not trusted
        GENERATION.fetch_add(1, Ordering::Relaxed);
    }
    GENERATION.load(Ordering::Relaxed)
}

static ON_RELATION: crate::pg::local::BackendLocal<Vec<fn(Oid)>> =
    crate::pg::local::BackendLocal::new(Vec::new());

/// # Safety
///
/// Called by PostgreSQL while it reads invalidations: calls the registered functions, which
/// neither allocate nor raise.
unsafe extern "C-unwind" fn relation_changed_for(_arg: Datum, relid: Oid) {
    let n = ON_RELATION.with(|l| l.len());
    for i in 0..n {
        let f = ON_RELATION.with(|l| l[i]);
        f(relid);
    }
}

/// Call `f` with a relation's OID whenever this backend reads an invalidation of it
/// (`Oid::INVALID`: of every relation), for as long as the library is loaded. `f` runs while
/// PostgreSQL reads invalidations: it must not allocate in a memory context, take a lock or
/// raise an error (bumping a counter is what it is for).
pub fn on_relation_changed(f: fn(Oid)) {
    ON_RELATION.with(|l| {
        if l.is_empty() {
            // SAFETY: registers a plain function that lives as long as the library, once.
            unsafe {
                pg_sys::CacheRegisterRelcacheCallback(
                    Some(relation_changed_for),
                    Datum::from(0usize),
                )
            };
        }
        l.push(f);
    });
}

/// Tell every backend (this one at its next command) that a relation changed, as a change of
/// its definition would: what they keep about it, and what they tag with [`generation`], is
/// found again.
pub fn relation_changed_everywhere(relid: Oid) {
    // SAFETY: queues an invalidation message for the relation (sent at commit).
    unsafe { pg_sys::CacheInvalidateRelcacheByRelid(relid) };
}
