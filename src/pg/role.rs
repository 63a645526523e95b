//! Who the extension acts as, and for: statements run as the platform tables' owner
//! ([`as_owner`]) and the user it switched from ([`acting_for`]); the current user and roles by
//! name and OID; membership, superuser and row-level security status; table privileges.

use crate::pg::error::{Error, Result};
use crate::pg::inval;
use crate::pg::local::BackendLocal;
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::{CStr, CString};

/// Run `f` as `owner` (the platform tables' owner), with row-level security not forced on it,
/// the way PostgreSQL runs foreign-key checks. The caller's identity is restored afterwards,
/// also when `f` fails (a PostgreSQL error restores it through the transaction's abort).
///
/// What the caller set cannot change what runs as the owner: a session whose user is not a
/// superuser but was granted `SET` on `session_replication_role` gets the triggers of what
/// the owner writes for it all the same (`origin` for the duration). And an error PostgreSQL
/// raised inside reaches the caller as [`Error::for_caller`] makes it: without a DETAIL that
/// could hold rows the caller cannot read.
pub fn as_owner<T>(owner: Oid, f: impl FnOnce() -> Result<T>) -> Result<T> {
    struct Restore(Oid, i32, Option<i32>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALLERS.with(|c| c.pop());
            // SAFETY: puts back what GetUserIdAndSecContext returned, and the settings at the
            // nest level opened below.
            unsafe {
                if let Some(nest) = self.2 {
                    pg_sys::AtEOXact_GUC(true, nest);
                }
                pg_sys::SetUserIdAndSecContext(self.0, self.1)
            }
        }
    }
    let (mut saved_user, mut saved_ctx) = (Oid::INVALID, 0i32);
    // SAFETY: plain reads and writes of the backend's current user, security context and
    // settings; the setting is one a C function may set (PGC_SUSET).
    let nest = unsafe {
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_ctx);
        let nest = (pg_sys::SessionReplicationRole
            != pg_sys::SESSION_REPLICATION_ROLE_ORIGIN as i32
            && !pg_sys::superuser_arg(pg_sys::GetSessionUserId()))
        .then(|| {
            let nest = pg_sys::NewGUCNestLevel();
            pg_sys::set_config_option(
                c"session_replication_role".as_ptr(),
                c"origin".as_ptr(),
                pg_sys::GucContext::PGC_SUSET,
                pg_sys::GucSource::PGC_S_SESSION,
                pg_sys::GucAction::GUC_ACTION_SAVE,
                true,
                0,
                false,
            );
            nest
        });
        pg_sys::SetUserIdAndSecContext(
            owner,
            saved_ctx
                | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                | pg_sys::SECURITY_NOFORCE_RLS as i32,
        );
        nest
    };
    CALLERS.with(|c| c.push(saved_user));
    let _restore = Restore(saved_user, saved_ctx, nest);
    f().map_err(Error::for_caller)
}

/// The users [`as_owner`] switched from, innermost last.
static CALLERS: BackendLocal<Vec<Oid>> = BackendLocal::new(Vec::new());

/// The role the extension acts for: the current user, or, inside statements it runs as the
/// tables' owner, the user it switched from first (the caller of `authorize_crossing()`, say).
pub fn acting_for() -> Oid {
    CALLERS
        .with(|c| c.first().copied())
        .unwrap_or_else(current_user)
}

/// Forget the users of [`as_owner`]s an error skipped (at the end of a transaction).
pub fn forget_callers() {
    CALLERS.with(|c| c.clear());
}

// GetUserId reads a backend variable and cannot raise: called without pgrx's FFI guard (the
// row-level security predicates call it for every row).
unsafe extern "C" {
    #[link_name = "GetUserId"]
    fn get_user_id() -> Oid;
}

/// The current user (`current_user`).
#[inline]
pub fn current_user() -> Oid {
    // SAFETY: reads the backend's current user id.
    unsafe { get_user_id() }
}

/// The name of a role (`None` if it no longer exists).
pub fn role_name(role: Oid) -> Option<String> {
    // SAFETY: GetUserNameFromId with noerr returns NULL or a palloc'd cstring.
    unsafe {
        let p = pg_sys::GetUserNameFromId(role, true);
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

/// The name of the current user (`current_user`), kept while no role changes
/// ([`inval::generation`]).
pub fn current_user_name() -> String {
    static LAST: BackendLocal<(u64, Oid, String)> =
        BackendLocal::new((0, Oid::INVALID, String::new()));
    let (generation, user) = (inval::generation(), current_user());
    if let Some(name) = LAST.with(|(g, u, n)| (*g == generation && *u == user).then(|| n.clone())) {
        return name;
    }
    let name = role_name(user).unwrap_or_default();
    LAST.set((generation, user, name.clone()));
    name
}

/// The OID of a role by name (`None` if there is none).
pub fn role_oid(name: &str) -> Option<Oid> {
    let c = CString::new(name).ok()?;
    // SAFETY: get_role_oid with missing_ok reads a NUL-terminated name.
    let oid = unsafe { pg_sys::get_role_oid(c.as_ptr(), true) };
    (oid != Oid::INVALID).then_some(oid)
}

/// Can `member` act as `role` (is it `role` or a member of it, superuser status aside)?
pub fn is_member(member: Oid, role: Oid) -> bool {
    // SAFETY: a catalog lookup on two OIDs.
    unsafe { pg_sys::is_member_of_role_nosuper(member, role) }
}

/// Is the session's own role a superuser, and acting as itself: its current user a superuser
/// too, not raised to one for the time of a `SECURITY DEFINER` function or of [`as_owner`],
/// and not in a security-restricted operation (an index expression, a materialized view's
/// query, run as another role)? What a superuser may do without checks belongs to this case
/// only.
pub fn superuser_session() -> bool {
    // SAFETY: reads of the backend's identity and security context, and two catalog lookups.
    unsafe {
        !pg_sys::InLocalUserIdChange()
            && !pg_sys::InSecurityRestrictedOperation()
            && pg_sys::superuser_arg(pg_sys::GetSessionUserId())
            && pg_sys::superuser()
    }
}

/// Is the current user the session's own role, acting as itself (not inside a `SECURITY
/// DEFINER` function, [`as_owner`] or a security-restricted operation)?
pub fn acting_as_session_user() -> bool {
    // SAFETY: reads of the backend's identity and security context.
    unsafe {
        !pg_sys::InLocalUserIdChange()
            && !pg_sys::InSecurityRestrictedOperation()
            && pg_sys::GetUserId() == pg_sys::GetSessionUserId()
    }
}

/// Is the `row_security` setting on (its default)? pg_dump and pg_restore turn it off.
pub fn row_security_on() -> bool {
    // SAFETY: reads a GUC variable of this backend.
    unsafe { pg_sys::row_security }
}

/// Does the current role bypass row-level security (a superuser, or `BYPASSRLS`)?
pub fn bypasses_rls() -> bool {
    // SAFETY: reads the current user and its role's attributes (cached by PostgreSQL).
    unsafe {
        let user = pg_sys::GetUserId();
        pg_sys::superuser_arg(user) || pg_sys::has_bypassrls_privilege(user)
    }
}

/// May the current user insert into this relation (false if there is none)?
pub fn may_insert(relid: Oid) -> bool {
    may(relid, pg_sys::ACL_INSERT)
}

/// May the current user read this relation (false if there is none)?
pub fn may_select(relid: Oid) -> bool {
    may(relid, pg_sys::ACL_SELECT)
}

fn may(relid: Oid, mode: u32) -> bool {
    if relid == Oid::INVALID {
        return false;
    }
    // SAFETY: a syscache probe, then a privilege check on an OID whose relation exists (a
    // missing one is no privilege, as has_table_privilege() answers, not an error).
    unsafe {
        pg_sys::SearchSysCacheExists(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            Datum::from(relid),
            Datum::from(0usize),
            Datum::from(0usize),
            Datum::from(0usize),
        ) && pg_sys::pg_class_aclcheck(relid, current_user(), mode as pg_sys::AclMode)
            == pg_sys::AclResult::ACLCHECK_OK
    }
}
