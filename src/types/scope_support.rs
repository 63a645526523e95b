//! Planner support: subtree queries on a btree index of `scope`.
//!
//! `col <@ 'acme'` (or `'acme' @> col`) is not a btree operator, but the subtree of `acme` is one
//! contiguous range of the btree order: `col >= 'acme' AND col < 'acme-'` (`-` is the least
//! segment character and sorts after the separator). Like `LIKE 'abc%'`, the support function
//! hands the planner that range as index conditions (`crate::pg::planner`). They are exact, so
//! the original clause is not rechecked.

use crate::pg::error::Result;
use crate::pg::fmgr::Call;
use crate::pg::sys::Datum;
use crate::types::datum::{scope_datum, scope_from_bytes};
use pg_labels_core::scope;

/// The range of the btree order that holds the subtree of a scope constant; `None` when the
/// constant is not a scope or its subtree is everything (the installation's).
fn subtree(bytes: &[u8]) -> Result<Option<(Datum, Datum)>> {
    let Ok(path) = scope_from_bytes(bytes) else {
        return Ok(None);
    };
    // The installation's subtree is everything: no condition narrows it.
    let Some(upper) = scope::subtree_upper(path) else {
        return Ok(None);
    };
    Ok(Some((scope_datum(path)?, scope_datum(&upper)?)))
}

/// Answer the planner's support request of a containment function whose index-side argument
/// is `col_arg` (0 for `col <@ const`, 1 for `const @> col`).
///
/// # Safety
/// `call` must be a call of a planner support function: argument 0 the planner's request.
pub(crate) unsafe fn index_condition(call: &Call<'_>, col_arg: i32) -> Result<Datum> {
    // SAFETY: the caller's guarantee.
    unsafe { crate::pg::planner::btree_range_condition(call.datum(0), col_arg, subtree) }
}
