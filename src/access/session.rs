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

use crate::pg::citus;
use crate::pg::datum::Name;
use crate::pg::error::{Error, Result, NULL_VALUE_NOT_ALLOWED};
use crate::pg::fmgr::{external_id, ret_bool};
use crate::pg::heap::{active_view, is_active_view, View};
use crate::pg::local::{BackendLocal, IdMap};
use crate::pg::spi::{
    as_owner, current_user, current_user_name, is_member, role_oid, with_spi, SavedPlan,
};
use crate::pg::trigger::platform_schema;
use crate::platform::crossings::ancestors_array;
use crate::platform::relations::platform_owner;
use crate::sql_function;
use crate::types::datum::{scope_datum, TypeArgs};
use pg_labels_core::refusal;
use pgrx::pg_sys::{self, Oid, SubTransactionId};
use std::ffi::CStr;

#[derive(Clone, Debug)]
struct Entered {
    path: Vec<u8>,
    role: Oid,
    /// The transaction (by [`State::xact`]) in which the grant was last checked.
    checked: u64,
    /// Which entering this is (from [`State::entered_count`]): answers kept under it hold
    /// while it is the scope in force.
    stamp: u64,
}

#[derive(Default)]
struct State {
    local: Option<Entered>,
    session: Option<Entered>,
    /// (subtransaction, local, session) as they were before that subtransaction changed them.
    saved: Vec<(SubTransactionId, Option<Entered>, Option<Entered>)>,
    /// Counts transactions of this backend.
    xact: u64,
    /// Counts the scopes entered in this backend (each [`Entered::stamp`]).
    entered_count: u64,
    /// `visible()`'s answers for labelsets stored out of line (TOAST), in this transaction and
    /// scope: see [`Answers`].
    answers: Option<Answers>,
    /// On a Citus node: what a transaction carried here (the setting's value), for whom, and
    /// the scope it gives (see [`carried`]).
    carried: Option<(u64, Oid, Vec<u8>, Option<Vec<u8>>)>,
    /// `run_visible()`'s and `artifact_visible()`'s answers under one view: see [`Seen`].
    seen: Option<Seen>,
    /// Which tables the current role writes, under one view: see [`Writes`].
    writes: Option<Writes>,
}

/// A writer of a platform table (a role that may insert into it) sees every row of it: the
/// policies of `runs`, `steps`, `artifacts`, `agent_versions` and `listeners` ask, for every
/// row, through `readable()` and `step_readable()` (a subquery evaluated once per query would
/// be planned with every query, and evaluated in every row's qual). The answer is kept while
/// it cannot change: in one transaction, for one role, while no invalidation that could change
/// a privilege was read ([`crate::pg::inval`]: a table's privileges or owner, a role's
/// attributes or memberships; the transaction's own changes are read at its next command and
/// when a savepoint rolls back) and the active snapshot's head is the same. A savepoint rolled
/// back also drops it.
struct Writes {
    /// (transaction, role, invalidation generation, the active snapshot's head)
    view: (u64, Oid, u64, [u64; 3]),
    tables: Vec<(Oid, bool)>,
}

/// How many tables' answers one view keeps.
const WRITES_KEPT: usize = 16;

/// The steps' policy asks, for every step a query reads, whether its run is visible: a probe
/// of `runs` per step, the same run's for every step of a run. Under one view of the data (the
/// transaction, what the active snapshot sees ([`View`], which includes the invalidations
/// read: privileges), the role and the entering of the scope in force) the answer for a row
/// cannot change, so it is kept by (relation read next to, table, id) until the view changes,
/// a subtransaction rolls back or [`SEEN_KEPT`] answers are held.
struct Seen {
    /// (transaction, role, the entering in force), and what the snapshot sees
    view: (u64, Oid, u64),
    snapshot: View,
    answers: IdMap<(Oid, &'static str, [u8; 16]), bool>,
}

/// The scope entered and in force for `user`, with its stamp, when the state alone tells
/// (a transaction's scope, or a session scope already checked in this transaction); `None`
/// when [`effective`] has to find out.
fn in_force(s: &State, user: Oid) -> Option<(u64, &[u8])> {
    let e = match (&s.local, &s.session) {
        (Some(e), _) => e,
        (None, Some(e)) if e.checked == s.xact => e,
        _ => return None,
    };
    (e.role == user).then_some((e.stamp, e.path.as_slice()))
}

/// How many answers one view keeps (a query over more rows starts again, still correct).
const SEEN_KEPT: usize = 1 << 16;

/// A policy that checks the same big labelset for many rows (a run carrying 100,000 labels,
/// checked through a hashed subplan for every step of a query) would read and check it each
/// time. A stored TOAST value never changes while it lives, so its answer is kept, by its
/// identity, for the transaction and the entered scope it was computed in.
struct Answers {
    xact: u64,
    scope: Vec<u8>,
    by_value: Vec<((Oid, Oid), bool)>,
}

/// How many answers are kept (the big values of a query are few; small ones are not kept).
const ANSWERS_KEPT: usize = 64;

static STATE: BackendLocal<State> = BackendLocal::new(State {
    local: None,
    session: None,
    saved: Vec::new(),
    xact: 0,
    entered_count: 0,
    answers: None,
    carried: None,
    seen: None,
    writes: None,
});

impl Answers {
    /// Were these answers given in transaction `xact` under `scope`?
    fn hold(&self, xact: u64, scope: &[u8]) -> bool {
        self.xact == xact && self.scope == scope
    }
}

/// The answer kept for a stored labelset under `scope` in this transaction.
fn kept_answer(scope: &[u8], value: (Oid, Oid)) -> Option<bool> {
    state(|s| {
        let a = s.answers.as_ref().filter(|a| a.hold(s.xact, scope))?;
        a.by_value
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, ok)| *ok)
    })
}

fn keep_answer(scope: &[u8], value: (Oid, Oid), ok: bool) {
    state(|s| {
        let xact = s.xact;
        let a = match &mut s.answers {
            Some(a) if a.hold(xact, scope) => a,
            other => other.insert(Answers {
                xact,
                scope: scope.to_vec(),
                by_value: Vec::new(),
            }),
        };
        if a.by_value.len() >= ANSWERS_KEPT {
            a.by_value.remove(0);
        }
        a.by_value.push((value, ok));
    });
}

/// Run `f` with the session state.
fn state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(f)
}

/// Remember the state before this subtransaction's first change, for a rollback.
fn save_before_change() {
    // SAFETY: reads the current subtransaction's id.
    let sub = unsafe { pg_sys::GetCurrentSubTransactionId() };
    state(|s| {
        if s.saved.last().map(|e| e.0) != Some(sub) {
            s.saved.push((sub, s.local.clone(), s.session.clone()));
        }
    });
}

unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    state(|s| xact_event(s, event));
}

fn xact_event(s: &mut State, event: pg_sys::XactEvent::Type) {
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
    s.seen = None;
    s.xact += 1;
}

unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    my: SubTransactionId,
    parent: SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    state(|s| subxact_event(s, event, my, parent));
}

fn subxact_event(
    s: &mut State,
    event: pg_sys::SubXactEvent::Type,
    my: SubTransactionId,
    parent: SubTransactionId,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        s.seen = None; // what its writes showed is gone
        s.writes = None; // and the privileges it granted or revoked
    }
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
    // SAFETY: PostgreSQL calls the hook with a valid statement; the previous hook (or the
    // standard one) gets the arguments unchanged; the state is touched only after it returns.
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
            state(|s| {
                s.local = None;
                s.session = None;
                s.saved.clear();
            });
        }
    }
}

/// Called from `_PG_init`: the callbacks that end entered scopes.
pub fn init() {
    // SAFETY: registers callbacks and a hook that live as long as the library; the previous
    // hook is kept and called.
    unsafe {
        pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
        PREV_PROCESS_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

/// Grants of any role whose scope is the target or one of its ancestors.
static GRANTS_REACHING: SavedPlan =
    SavedPlan::new(c"SELECT role FROM pg_labels.grants WHERE scope::text = ANY ($1)");

/// Does a grant give `role` (or a role it is a member of) a scope reaching `target`?
fn granted(role: Oid, target: &[u8]) -> Result<bool> {
    let owner = platform_owner()?;
    let ancestors = ancestors_array(target)?;
    // on a Citus node, the grants are this node's copy of the reference table
    let _place = match (citus::loaded(), platform_schema()) {
        (true, Some(ns)) => citus::reference_shard(ns, "grants")?.map(|id| citus::SHARD.enter(id)),
        _ => None,
    };
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = GRANTS_REACHING.execute(
                spi,
                &[pg_sys::TEXTARRAYOID],
                &[Some(ancestors)],
                true,
                0,
            )?;
            for i in 0..rows.len() {
                let Some(name) = rows.get::<Name>(i, 1)? else {
                    continue;
                };
                if role_oid(&name.0).is_some_and(|granted| is_member(role, granted)) {
                    return Ok(true);
                }
            }
            Ok(false)
        })
    })
}

/// The name of the setting a transaction carries its entered scope to Citus' workers in.
const CARRIED: &CStr = c"pg_labels.carried_scope";
const CARRIED_NAME: &str = "pg_labels.carried_scope";

/// The key the carried scopes are sealed with (a reference table only the tables' owner reads,
/// made by `pg_labels.distribute()`; this node's copy on a worker). `None` before it exists.
static CARRY_KEY: SavedPlan = SavedPlan::new(c"SELECT key FROM pg_labels.carry_key LIMIT 1");

fn carry_key() -> Result<Option<Vec<u8>>> {
    let Some(ns) = platform_schema() else {
        return Ok(None);
    };
    if crate::platform::relations::relation(ns, c"carry_key") == Oid::INVALID {
        return Ok(None);
    }
    let owner = platform_owner()?;
    let _place = citus::reference_shard(ns, "carry_key")?.map(|id| citus::SHARD.enter(id));
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = CARRY_KEY.execute(spi, &[], &[], true, 1)?;
            Ok(rows
                .get::<crate::pg::datum::Bytea>(0, 1)?
                .map(|k| k.0.to_vec()))
        })
    })
}

/// On a Citus cluster a statement's rows are read by backends Citus opens on the workers for
/// it, as the current user of the node the statement entered, which have entered no scope.
/// `enter_scope()` sets `pg_labels.carried_scope` for its transaction as a statement Citus
/// carries to every node the transaction reaches, sealed for the role that entered it
/// ([`pg_labels_core::carry`]: an HMAC under a key only the tables' owner reads). Such a backend
/// takes that scope only where Citus is loaded, for its session's own role acting as itself,
/// when the seal names that role and holds, and a grant (this node's copy of
/// `pg_labels.grants`) lets the role enter it, as `enter_scope()` checked. Anyone can set the
/// setting or claim to be Citus' backend, but no one can seal a claim for another role: a
/// `SECURITY DEFINER` function, whose queries reach the workers as its owner, gets no scope
/// from its caller (on one node the entered scope is the caller's, so none is in force there
/// either).
fn carried() -> Result<Option<Vec<u8>>> {
    if !citus::internal_backend() || !crate::pg::spi::acting_as_session_user() {
        return Ok(None);
    }
    let Some(text) = citus::setting(CARRIED).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let user = current_user();
    let xact = state(|s| s.xact);
    let kept = state(|s| {
        s.carried
            .as_ref()
            .filter(|c| c.0 == xact && c.1 == user && c.2 == text.as_bytes())
            .map(|c| c.3.clone())
    });
    if let Some(kept) = kept {
        return Ok(kept);
    }
    let path = match carry_key()? {
        Some(key) => pg_labels_core::carry::open(&text, &key, &current_user_name())
            .and_then(|scope| pg_labels_core::scope::parse(scope.as_bytes()).ok()),
        None => None,
    };
    let answer = match path {
        Some(path) if granted(user, &path)? => Some(path),
        _ => None,
    };
    state(|s| s.carried = Some((xact, user, text.into_bytes(), answer.clone())));
    Ok(answer)
}

/// Carry the entered scope (or none: "") to the nodes of a Citus cluster this transaction
/// reaches (in a transaction block, where Citus carries `SET LOCAL`), sealed for the current
/// role (see [`carried`]).
fn carry(path: Option<&[u8]>) -> Result<()> {
    // SAFETY: reads the transaction state.
    if citus::loaded() && unsafe { pg_sys::IsTransactionBlock() } {
        let value = match (path, carry_key()?) {
            (Some(path), Some(key)) => pg_labels_core::carry::seal(
                &key,
                &current_user_name(),
                &pg_labels_core::scope::to_text(path),
            ),
            _ => String::new(),
        };
        citus::set_local_carried(CARRIED_NAME, &value)?;
    }
    Ok(())
}

/// The scope in force for the current role, if any (checking a session scope's grant again
/// once per transaction).
fn effective() -> Result<Option<Vec<u8>>> {
    match entered()? {
        Some(p) => Ok(Some(p)),
        None => carried(),
    }
}

fn entered() -> Result<Option<Vec<u8>>> {
    let user = current_user();
    enum Next {
        Done(Option<Vec<u8>>),
        Recheck(Vec<u8>, u64),
    }
    let next = state(|s| {
        if let Some(e) = &s.local {
            return Next::Done((e.role == user).then(|| e.path.clone()));
        }
        match &s.session {
            None => Next::Done(None),
            Some(e) if e.role != user => Next::Done(None),
            Some(e) if e.checked == s.xact => Next::Done(Some(e.path.clone())),
            Some(e) => Next::Recheck(e.path.clone(), s.xact),
        }
    });
    match next {
        Next::Done(p) => Ok(p),
        Next::Recheck(path, xact) => {
            let still = granted(user, &path)?;
            state(|s| {
                if still {
                    if let Some(e) = &mut s.session {
                        e.checked = xact;
                    }
                } else {
                    s.session = None;
                }
            });
            Ok(still.then_some(path))
        }
    }
}

sql_function! {
    /// `pg_labels.enter_scope(scope scope, for_session boolean DEFAULT false) → scope`
    fn pgl_enter_scope(call) {
        if call.is_null(0) {
            return Err(Error::new(NULL_VALUE_NOT_ALLOWED, "enter_scope needs a scope"));
        }
        let target = call.scope(0)?.to_vec();
        let for_session = !call.is_null(1) && call.bool(1);
        // On a Citus cluster the scope reaches the workers with the transaction it is entered
        // in (see carry): a scope for the session would show nothing there in later ones.
        if for_session && citus::loaded() {
            if let Some(ns) = platform_schema() {
                if citus::manages(ns, "runs")? {
                    return Err(Error::new(
                        crate::pg::error::FEATURE_NOT_SUPPORTED,
                        "a scope cannot be entered for the session on a Citus cluster",
                    )
                    .detail("The workers learn the scope with the transaction it is entered in.")
                    .hint("Enter it in each transaction: BEGIN; SELECT pg_labels.enter_scope(...); ...; COMMIT;"));
                }
            }
        }
        let user = current_user();
        if !granted(user, &target)? {
            return Err(refusal::scope_not_granted(&current_user_name(), &target).into());
        }
        save_before_change();
        state(|s| {
            s.entered_count += 1;
            let e = Entered {
                path: target.clone(),
                role: user,
                checked: s.xact,
                stamp: s.entered_count,
            };
            if for_session {
                s.session = Some(e);
                s.local = None;
            } else {
                s.local = Some(e);
            }
        });
        carry(Some(&target))?;
        scope_datum(&target)
    }

    /// `pg_labels.leave_scope() → void`
    fn pgl_leave_scope(call) {
        save_before_change();
        state(|s| {
            s.local = None;
            s.session = None;
        });
        carry(None)?;
        call.null()
    }

    /// `pg_labels.current_scope() → scope`: NULL when none is entered (for the current role).
    fn pgl_current_scope(call) {
        match effective()? {
            Some(p) => scope_datum(&p),
            None => call.null(),
        }
    }

    /// `pg_labels.run_visible(rel oid, run uuid) → boolean`: the policy of `steps` on a Citus
    /// cluster (which runs no subquery in a policy): the run, read next to `rel` (a shard's
    /// co-located shard of runs), is one the caller sees: a writer of runs, or its labels are
    /// visible. Nothing a `SELECT` on runs would not show.
    fn pgl_run_visible(call) {
        row_visible(&call, "runs")
    }

    /// `pg_labels.artifact_visible(rel oid, artifact uuid) → boolean`: the same for `shares`
    /// and their artifact.
    fn pgl_artifact_visible(call) {
        row_visible(&call, "artifacts")
    }

    /// `pg_labels.member_of(role name) → boolean`: the current role is that role or a member
    /// of it (false for a role that does not exist); the policy of `grants` on Citus.
    fn pgl_member_of(call) {
        if call.is_null(0) {
            return ret_bool(false);
        }
        let name = String::from_utf8_lossy(call.cstring(0)).into_owned();
        ret_bool(role_oid(&name).is_some_and(|r| is_member(current_user(), r)))
    }

    /// `pg_labels.visible(labels labelset) → boolean`: the entered scope can carry the labels.
    fn pgl_visible(call) {
        ret_bool(visible_at(&call, 0)?)
    }

    /// `pg_labels.readable(tab regclass, labels labelset) → boolean`: the policy of runs,
    /// artifacts, agent versions and listeners: the caller writes `tab`, or the entered scope
    /// can carry the labels.
    fn pgl_readable(call) {
        // an analyst's row first: its scope in force carries the labels (what a writer is
        // asked, and visible() in full, only past that)
        let in_force = answer_in_force(&call, 1);
        if let Ok(Some(true)) = in_force {
            return ret_bool(true);
        }
        let tab = Oid::from(call.datum(0).value() as u32);
        if writes(tab) {
            return ret_bool(true);
        }
        match in_force {
            Ok(Some(false)) => ret_bool(false),
            _ => ret_bool(visible_at(&call, 1)?),
        }
    }

    /// `pg_labels.readable_in(tab regclass, scope scope) → boolean`: the policy of steps and
    /// shares: the caller writes `tab`, or the entered scope reaches `scope`, the one the row
    /// can be read in (for a step, the deepest scope that can carry what its run carried once
    /// it was written; for a share, its artifact's labels), which the insert trigger keeps in
    /// the row. Decided from the row alone: no other row is read, so what a query's own
    /// conditions match among rows it cannot see changes nothing this function does.
    fn pgl_readable_in(call) {
        ret_bool(readable_in(&call)?)
    }

    /// `pg_labels.writable(labels labelset) → boolean`: what `protect()` checks of a row
    /// written to a table it guards: the row can be read exactly in the entered scope (the
    /// deepest scope that can carry its labels is the entered one). A writer reads what its
    /// scope can carry, so it cannot label what it writes down to a scope fewer analysts must
    /// reach: not to `{}` (which every scope can carry), not to a sub-area of its scope.
    fn pgl_writable(call) {
        let labels = call.labelset(0)?;
        let Some(deepest) = labels.scope() else {
            return ret_bool(false);
        };
        let user = current_user();
        let entered = match state(|s| in_force(s, user).map(|(_, scope)| scope.to_vec())) {
            Some(scope) => Some(scope),
            None => effective()?,
        };
        ret_bool(entered.is_some_and(|e| e == deepest && labels.carried_by(&e)))
    }

    /// `pg_labels.step_readable(tab regclass, labels labelset, run uuid) → boolean`: the
    /// steps' policy: the caller writes `tab`, or the entered scope can carry the labels and the
    /// run (read next to `tab`) is one the caller sees, as `run_visible(tab, run)`.
    fn pgl_step_readable(call) {
        let tab = Oid::from(call.datum(0).value() as u32);
        if writes(tab) {
            return ret_bool(true);
        }
        if !visible_at(&call, 1)? {
            return ret_bool(false);
        }
        let run = crate::pg::datum::uuid_arg(&call, 2);
        ret_bool(row_visible_for(tab, "runs", run)?)
    }
}

/// `pg_labels.readable_in(tab, scope)` when the scope a row can be read in is in argument 1.
fn readable_in(call: &crate::pg::fmgr::Call<'_>) -> Result<bool> {
    let needed = call.scope(1)?;
    let user = current_user();
    // an analyst's row first: the scope in force reaches the row's (a writer is asked only
    // past that)
    let answer = state(|s| {
        in_force(s, user).map(|(_, scope)| pg_labels_core::scope::reaches(scope, needed))
    });
    if answer == Some(true) {
        return Ok(true);
    }
    let tab = Oid::from(call.datum(0).value() as u32);
    if writes(tab) {
        return Ok(true);
    }
    Ok(match answer {
        Some(a) => a,
        None => effective()?.is_some_and(|scope| pg_labels_core::scope::reaches(&scope, needed)),
    })
}

/// `visible()` of the labelset in argument `n` when the state alone tells it: the labelset is
/// stored inline and a scope is in force for the current role (see [`in_force`]); `None`
/// otherwise.
fn answer_in_force(call: &crate::pg::fmgr::Call<'_>, n: usize) -> Result<Option<bool>> {
    // SAFETY: the argument is a varlena (a labelset: the functions are STRICT and declared so).
    if unsafe { external_id(call.datum(n).cast_mut_ptr()) }.is_some() {
        return Ok(None);
    }
    let labels = call.labelset(n)?;
    let user = current_user();
    Ok(state(|s| {
        in_force(s, user).map(|(_, scope)| labels.carried_by(scope))
    }))
}

/// `visible()` of the labelset in argument `n` (not NULL: the functions are STRICT).
fn visible_at(call: &crate::pg::fmgr::Call<'_>, n: usize) -> Result<bool> {
    if let Some(answer) = answer_in_force(call, n)? {
        return Ok(answer);
    }
    let Some(scope) = effective()? else {
        return Ok(false);
    };
    // SAFETY: the argument is a varlena (a labelset: the function is STRICT and declared so).
    let stored = unsafe { external_id(call.datum(n).cast_mut_ptr()) };
    if let Some(answer) = stored.and_then(|v| kept_answer(&scope, v)) {
        return Ok(answer);
    }
    let answer = call.labelset(n)?.carried_by(&scope);
    if let Some(v) = stored {
        keep_answer(&scope, v, answer);
    }
    Ok(answer)
}

/// May the current role insert into `tab` (see [`Writes`])?
fn writes(tab: Oid) -> bool {
    let user = current_user();
    let Some(head) = crate::pg::heap::active_head() else {
        return crate::pg::spi::may_insert(tab);
    };
    let generation = crate::pg::inval::generation();
    let kept = state(|s| {
        let view = (s.xact, user, generation, head);
        let w = s.writes.as_ref().filter(|w| w.view == view)?;
        w.tables.iter().find(|t| t.0 == tab).map(|t| t.1)
    });
    if let Some(ok) = kept {
        return ok;
    }
    let ok = crate::pg::spi::may_insert(tab);
    state(|s| {
        let view = (s.xact, user, generation, head);
        let w = match &mut s.writes {
            Some(w) if w.view == view => w,
            other => other.insert(Writes {
                view,
                tables: Vec::new(),
            }),
        };
        if w.tables.len() < WRITES_KEPT {
            w.tables.push((tab, ok));
        }
    });
    ok
}

/// [`pgl_run_visible`], [`pgl_artifact_visible`]: the row of `table` with the id in argument 1,
/// read next to the relation in argument 0, is one the caller may see.
fn row_visible(call: &crate::pg::fmgr::Call<'_>, table: &'static str) -> Result<pg_sys::Datum> {
    if call.is_null(0) || call.is_null(1) {
        return ret_bool(false);
    }
    let rel = Oid::from(call.datum(0).value() as u32);
    let id = crate::pg::datum::uuid_arg(call, 1);
    ret_bool(row_visible_for(rel, table, id)?)
}

/// [`row_visible`] of the row of `table` with id `id`, read next to `rel`.
fn row_visible_for(rel: Oid, table: &'static str, id: crate::pg::datum::Uuid) -> Result<bool> {
    let Some(namespace) = platform_schema() else {
        return Ok(false);
    };
    let key = (rel, table, id.0);
    // the answer depends on the row as the active snapshot shows it, the role (a writer sees
    // every row) and the scope: kept under all four, when a scope is entered
    let user = current_user();
    let view = state(|s| in_force(s, user).map(|(stamp, _)| (s.xact, user, stamp)));
    // are the kept answers (if any) this view's? then one of them may be this row's
    let mut current = false;
    if let Some(view) = view {
        let kept = state(|s| {
            let seen = s
                .seen
                .as_ref()
                .filter(|seen| seen.view == view && is_active_view(&seen.snapshot))?;
            current = true;
            seen.answers.get(&key).copied()
        });
        if let Some(answer) = kept {
            return Ok(answer);
        }
    }
    let scope = effective()?;
    let answer = row_visible_now(namespace, rel, table, &id, scope.as_deref())?;
    if let Some(view) = view {
        state(|s| {
            let seen = match &mut s.seen {
                Some(seen) if current && seen.answers.len() < SEEN_KEPT => seen,
                other => {
                    let Some(snapshot) = active_view() else {
                        return;
                    };
                    other.insert(Seen {
                        view,
                        snapshot,
                        answers: IdMap::default(),
                    })
                }
            };
            seen.answers.insert(key, answer);
        });
    }
    Ok(answer)
}

/// [`row_visible`] read from the table: a writer of `table` sees every row, others a row whose
/// labels the entered scope can carry.
fn row_visible_now(
    namespace: Oid,
    rel: Oid,
    table: &'static str,
    id: &crate::pg::datum::Uuid,
    scope: Option<&[u8]>,
) -> Result<bool> {
    let relid = crate::platform::relations::relation_named(namespace, table);
    if crate::pg::spi::may_insert(relid) {
        return Ok(true);
    }
    let Some(scope) = scope else {
        return Ok(false);
    };
    // as the subquery on the table it reads would: a role that may not read it gets an error
    if !crate::pg::spi::may_select(relid) {
        return Err(Error::new(
            crate::pg::error::INSUFFICIENT_PRIVILEGE,
            format!("permission denied for table {table}"),
        ));
    }
    let _place = citus::shard_of_relation(namespace, rel)?.map(|s| citus::SHARD.enter(s));
    Ok(
        match crate::platform::relations::labels_of(namespace, table, id)? {
            Some(body) => pg_labels_core::LabelSet::from_body(&body)
                .map_err(|_| Error::corrupt("labels"))?
                .carried_by(scope),
            None => false,
        },
    )
}
