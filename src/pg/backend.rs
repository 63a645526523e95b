//! This backend: its process id, the session's user, whether a role is a superuser, and the
//! clock.

use pgrx::pg_sys::{self, Oid};

/// The backend's process id.
pub fn pid() -> i32 {
    // SAFETY: a global set at the backend's start.
    unsafe { pg_sys::MyProcPid }
}

/// The session's user (who logged in, or `SET SESSION AUTHORIZATION`).
pub fn session_user() -> Oid {
    // SAFETY: reads the session state.
    unsafe { pg_sys::GetSessionUserId() }
}

/// Is `role` a superuser?
pub fn is_superuser(role: Oid) -> bool {
    // SAFETY: a syscache lookup by OID (false for a role that does not exist).
    unsafe { pg_sys::superuser_arg(role) }
}

/// The current time (`clock_timestamp()`), in PostgreSQL's microseconds since 2000-01-01.
pub fn now() -> i64 {
    // SAFETY: reads the clock.
    unsafe { pg_sys::GetCurrentTimestamp() }
}
