//! `NOTIFY`: a message to the sessions listening on a channel, delivered when the transaction
//! commits (and never if it rolls back), as PostgreSQL's own `NOTIFY` statement sends it.

use crate::pg::error::Result;
use std::ffi::{c_char, CStr, CString};

// Unguarded (commands/async.h, which pgrx does not bind): an ERROR inside longjmps to the
// restore point crate::pg::catch::catch sets.
unsafe extern "C-unwind" {
    #[link_name = "Async_Notify"]
    fn async_notify(channel: *const c_char, payload: *const c_char);
}

/// Queue a notification on `channel` with `payload` (short, with no NUL: an id, say) for
/// this transaction's commit. Identical notifications of one transaction are sent once.
pub fn notify(channel: &CStr, payload: &str) -> Result<()> {
    let Ok(payload) = CString::new(payload) else {
        return Ok(());
    };
    let (c, p) = (channel.as_ptr(), payload.as_ptr());
    // SAFETY: both strings outlive the call, which copies them into the transaction's queue;
    // the closure owns nothing (an ERROR, such as in a parallel worker, comes back whole).
    unsafe { crate::pg::catch::catch(|| async_notify(c, p)) }
}
