//! Catalog lookups by name and OID through PostgreSQL's caches: a relation's OID and owner, a
//! type's extension and name, and a sequence's next value.

use crate::pg::error::Result;
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

/// The relation `name` of schema `namespace`, `Oid::INVALID` when there is none.
pub fn relation_oid(namespace: Oid, name: &CStr) -> Oid {
    // SAFETY: a syscache lookup by name.
    unsafe { pg_sys::get_relname_relid(name.as_ptr(), namespace) }
}

/// The owner of relation `rel`, `None` when it does not exist.
pub fn relation_owner(rel: Oid) -> Option<Oid> {
    // SAFETY: a syscache lookup of pg_class by OID; the tuple is read, then released.
    unsafe {
        let tuple =
            pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::RELOID as i32, Datum::from(rel));
        if tuple.is_null() {
            return None;
        }
        let form = pg_sys::GETSTRUCT(tuple) as *const pg_sys::FormData_pg_class;
        let owner = (*form).relowner;
        pg_sys::ReleaseSysCache(tuple);
        Some(owner)
    }
}

/// The schema-qualified name of type `oid` when it is a member of extension `extension`.
pub fn extension_type_name(oid: Oid, extension: &CStr) -> Option<String> {
    // SAFETY: catalog lookups by OID and name; the name is copied out of the palloc'd string.
    unsafe {
        let ext = pg_sys::get_extension_oid(extension.as_ptr(), true);
        if ext == Oid::INVALID || pg_sys::getExtensionOfObject(pg_sys::TypeRelationId, oid) != ext {
            return None;
        }
        let p = pg_sys::format_type_extended(oid, -1, pg_sys::FORMAT_TYPE_FORCE_QUALIFY as u16);
        Some(CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

// nextval() as identity columns take it: without the privilege check. Unguarded: called under
// crate::pg::catch.
unsafe extern "C-unwind" {
    fn nextval_internal(relid: Oid, check_permissions: bool) -> i64;
}

/// The next value of sequence `seq`, as an identity column takes it: without the privilege
/// check (for a sequence the caller's own table owns). Its errors (the sequence exhausted, a
/// read-only transaction) come back whole.
pub fn nextval_unchecked(seq: Oid) -> Result<i64> {
    // SAFETY: calls one unguarded C function and owns nothing.
    unsafe { crate::pg::catch::catch(|| nextval_internal(seq, false)) }
}
