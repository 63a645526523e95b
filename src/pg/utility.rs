//! Utility statements: a `ProcessUtility` hook that tells the modules that asked when a
//! `DISCARD ALL` (a connection pooler's reset) has run.

use crate::pg::local::BackendLocal;
use pgrx::pg_sys;

static ON_DISCARD_ALL: BackendLocal<Vec<fn()>> = BackendLocal::new(Vec::new());

static mut PREV_PROCESS_UTILITY: pg_sys::ProcessUtility_hook_type = None;

/// Call `f` after each `DISCARD ALL` this backend runs, for as long as the library is loaded.
/// To be called from `_PG_init` (the hook is installed with the first function).
pub fn on_discard_all(f: fn()) {
    ON_DISCARD_ALL.with(|l| {
        if l.is_empty() {
            // SAFETY: installs a hook that lives as long as the library, once, from _PG_init
            // (one thread); the previous hook is kept and called.
            unsafe {
                PREV_PROCESS_UTILITY = pg_sys::ProcessUtility_hook;
                pg_sys::ProcessUtility_hook = Some(process_utility);
            }
        }
        l.push(f);
    });
}

// Unguarded: an ERROR raised by a utility statement must reach PostgreSQL's own handler
// untouched (pgrx's guard would re-raise it through its closed SQLSTATE enum, without its
// CONTEXT). The hook below owns nothing that needs dropping, so the longjmp may cross it.
unsafe extern "C-unwind" {
    #[link_name = "standard_ProcessUtility"]
    fn standard_process_utility(
        pstmt: *mut pg_sys::PlannedStmt,
        query: *const std::ffi::c_char,
        read_only_tree: bool,
        context: pg_sys::ProcessUtilityContext::Type,
        params: pg_sys::ParamListInfo,
        env: *mut pg_sys::QueryEnvironment,
        dest: *mut pg_sys::DestReceiver,
        qc: *mut pg_sys::QueryCompletion,
    );
}

/// # Safety
///
/// Installed as `ProcessUtility_hook`: PostgreSQL calls it with a valid statement.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    // SAFETY: PostgreSQL calls the hook with a valid statement; the previous hook (or the
    // standard one) gets the arguments unchanged; the functions are told only after it returns.
    unsafe {
        let node = (*pstmt).utilityStmt;
        let discard_all = !node.is_null()
            && (*node).type_ == pg_sys::NodeTag::T_DiscardStmt
            && (*(node as *mut pg_sys::DiscardStmt)).target == pg_sys::DiscardMode::DISCARD_ALL;
        match PREV_PROCESS_UTILITY {
            Some(prev) => prev(pstmt, query, read_only_tree, context, params, env, dest, qc),
            None => standard_process_utility(
                pstmt,
                query,
                read_only_tree,
                context,
                params,
                env,
                dest,
                qc,
            ),
        }
        if discard_all {
            let n = ON_DISCARD_ALL.with(|l| l.len());
            for i in 0..n {
                let f = ON_DISCARD_ALL.with(|l| l[i]);
                f();
            }
        }
    }
}
