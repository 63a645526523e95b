//! The scope a session has entered, for row-level security: `pg_labels.enter_scope()`,
//! `leave_scope()`, `current_scope()` and `visible()`.
//!
//! The entered scope lives in this backend's memory, never in a setting: `SET`,
//! `set_config()`, `RESET` or a placeholder setting made before the library loaded cannot
//! touch it. Only `enter_scope()` sets it, after checking `pg_labels.grants` for the current
//! role. It behaves like a setting otherwise: by default it lasts until the end of the
//! transaction (`SET LOCAL`); with `for_session` until `leave_scope()`, `DISCARD ALL` or the
//! end of the session (`SET`); a rolled-back transaction or savepoint undoes it. It is bound to
//! the role that entered it: under another current role (`SET ROLE`, a `SECURITY DEFINER`
//! function, a reused connection) no scope is entered. A session scope is checked against the
//! grants again in every later transaction, so a revoked grant ends it.

use crate::error::{Error, Result, NULL_VALUE_NOT_ALLOWED};
use crate::fmgr::{arg, arg_is_null, arg_labelset, arg_scope, ret_bool, ret_null, ret_scope};
use crate::spi::{
    as_owner, current_user_name, datum_bytes, result_datum, with_spi, BackendLocal, SavedPlan,
};
use crate::sql_function;
use pg_labels_core::scope;
use pgrx::pg_sys::{self, Oid, SubTransactionId};

#[derive(Clone, Debug)]
struct Entered {
    path: Vec<u8>,
    role: Oid,
    /// The transaction (by [`State::xact`]) in which the grant was last checked.
    checked: u64,
}

#[derive(Default)]
struct State {
    local: Option<Entered>,
    session: Option<Entered>,
    /// (subtransaction, local, session) as they were before that subtransaction changed them.
    saved: Vec<(SubTransactionId, Option<Entered>, Option<Entered>)>,
    /// Counts transactions of this backend.
    xact: u64,
}

static STATE: BackendLocal<Option<State>> = BackendLocal::new(None);

fn state() -> &'static mut State {
    unsafe { STATE.get().get_or_insert_with(State::default) }
}

/// Remember the state before this subtransaction's first change, for a rollback.
fn save_before_change() {
    let s = state();
    let sub = unsafe { pg_sys::GetCurrentSubTransactionId() };
    if s.saved.last().map(|e| e.0) != Some(sub) {
        s.saved.push((sub, s.local.clone(), s.session.clone()));
    }
}

unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    let s = state();
    match event {
        pg_sys::XactEvent::XACT_EVENT_COMMIT | pg_sys::XactEvent::XACT_EVENT_PREPARE => {
            s.saved.clear();
        }
        pg_sys::XactEvent::XACT_EVENT_ABORT => {
            if let Some((_, _, session)) = s.saved.first().cloned() {
                s.session = session;
            }
            s.saved.clear();
        }
        _ => return,
    }
    s.local = None;
    s.xact += 1;
}

unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    my: SubTransactionId,
    parent: SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    let s = state();
    if s.saved.last().map(|e| e.0) != Some(my) {
        return;
    }
    match event {
        pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB => {
            if let Some((_, local, session)) = s.saved.pop() {
                s.local = local;
                s.session = session;
            }
        }
        pg_sys::SubXactEvent::SUBXACT_EVENT_COMMIT_SUB => {
            let n = s.saved.len();
            if n >= 2 && s.saved[n - 2].0 == parent {
                s.saved.pop(); // the parent's saved state is older
            } else {
                s.saved[n - 1].0 = parent;
            }
        }
        _ => {}
    }
}

static mut PREV_PROCESS_UTILITY: pg_sys::ProcessUtility_hook_type = None;

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

/// `DISCARD ALL` (a pooler's reset) also forgets the entered scope.
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
            let s = state();
            s.local = None;
            s.session = None;
            s.saved.clear();
        }
    }
}

/// Called from `_PG_init`: the callbacks that end entered scopes.
pub unsafe fn init() {
    unsafe {
        pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
        PREV_PROCESS_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

/// Grants of any role whose scope is the target or one of its ancestors.
static GRANTS_REACHING: SavedPlan =
    SavedPlan::new(c"SELECT role::text FROM pg_labels.grants WHERE scope::text = ANY ($1)");

/// Does a grant give `role` (or a role it is a member of) a scope reaching `target`?
unsafe fn granted(role: Oid, target: &[u8]) -> Result<bool> {
    unsafe {
        let owner = crate::approval::platform_owner()?;
        let ancestors = crate::crossing::ancestors_array(target)?;
        as_owner(owner, || {
            with_spi(|| {
                let n = GRANTS_REACHING.execute(
                    &[pg_sys::TEXTARRAYOID],
                    &[Some(ancestors)],
                    true,
                    0,
                )?;
                for i in 0..n {
                    let Some(d) = result_datum(i, 1) else {
                        continue;
                    };
                    let name = std::ffi::CString::new(datum_bytes(d)).unwrap_or_default();
                    let granted_role = pg_sys::get_role_oid(name.as_ptr(), true);
                    if granted_role != Oid::INVALID
                        && pg_sys::is_member_of_role_nosuper(role, granted_role)
                    {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
        })
    }
}

/// The scope in force for the current role, if any (checking a session scope's grant again
/// once per transaction).
unsafe fn effective() -> Result<Option<&'static [u8]>> {
    unsafe {
        let user = pg_sys::GetUserId();
        let s = state();
        if let Some(e) = &s.local {
            return Ok((e.role == user).then_some(&e.path[..]));
        }
        let xact = s.xact;
        let Some(e) = &mut s.session else {
            return Ok(None);
        };
        if e.role != user {
            return Ok(None);
        }
        if e.checked != xact {
            let path = e.path.clone();
            if granted(user, &path)? {
                if let Some(e) = &mut state().session {
                    e.checked = xact;
                }
            } else {
                state().session = None;
                return Ok(None);
            }
        }
        Ok(state().session.as_ref().map(|e| &e.path[..]))
    }
}

sql_function! {
    /// `pg_labels.enter_scope(scope scope, for_session boolean DEFAULT false) → scope`
    fn pgl_enter_scope(fc) {
        if arg_is_null(fc, 0) {
            return Err(Error::new(NULL_VALUE_NOT_ALLOWED, "enter_scope needs a scope"));
        }
        let target = arg_scope(fc, 0)?.to_vec();
        let for_session = !arg_is_null(fc, 1) && arg(fc, 1).value() != 0;
        let user = pg_sys::GetUserId();
        if !granted(user, &target)? {
            let text = scope::to_text(&target);
            let role = current_user_name();
            return Err(Error::new(crate::refusal::INSUFFICIENT_PRIVILEGE, format!("permission denied to enter scope {text}"))
                .detail(format!("No grant in pg_labels.grants gives role {role}, or a role it is a member of, a scope reaching {text}."))
                .hint(format!("A DBA grants it: INSERT INTO pg_labels.grants (role, scope) VALUES ('{role}', '{text}');"))
                .table("pg_labels", "grants"));
        }
        save_before_change();
        let s = state();
        let e = Entered { path: target.clone(), role: user, checked: s.xact };
        if for_session {
            s.session = Some(e);
            s.local = None;
        } else {
            s.local = Some(e);
        }
        ret_scope(&target)
    }

    /// `pg_labels.leave_scope() → void`
    fn pgl_leave_scope(fc) {
        save_before_change();
        let s = state();
        s.local = None;
        s.session = None;
        ret_null(fc)
    }

    /// `pg_labels.current_scope() → scope`: NULL when none is entered (for the current role).
    fn pgl_current_scope(fc) {
        match effective()? {
            Some(p) => ret_scope(p),
            None => ret_null(fc),
        }
    }

    /// `pg_labels.visible(labels labelset) → boolean`: the entered scope can carry the labels.
    fn pgl_visible(fc) {
        let labels = arg_labelset(fc, 0)?;
        ret_bool(match effective()? {
            Some(p) => labels.carried_by(p),
            None => false,
        })
    }
}
