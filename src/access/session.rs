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
use crate::pg::error::{Error, Result, NULL_VALUE_NOT_ALLOWED};
use crate::pg::local::BackendLocal;
use crate::pg::role::{as_owner, current_user, current_user_name};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::{Oid, SubTransactionId};
use crate::pg::trigger::platform_schema;
use crate::pg::xact::{End, SubEnd};
use crate::platform::relations::platform_owner;
use crate::sql_function;
use crate::types::datum::{scope_datum, TypeArgs};
use pg_labels_core::refusal;
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
    /// On a Citus node: what a transaction carried here (the setting's value), for whom, and
    /// the scope it gives (see [`carried`]).
    carried: Option<(u64, Oid, Vec<u8>, Option<Vec<u8>>)>,
}

/// The scope entered and in force for `user`, with its stamp, when the state alone tells
/// (a transaction's scope, or a session scope already checked in this transaction); `None`
/// when [`effective`] has to find out.
fn in_force_of(s: &State, user: Oid) -> Option<(u64, &[u8])> {
    let e = match (&s.local, &s.session) {
        (Some(e), _) => e,
        (None, Some(e)) if e.checked == s.xact => e,
        _ => return None,
    };
    (e.role == user).then_some((e.stamp, e.path.as_slice()))
}

/// Run `f` with the scope in force for `user` and its stamp, when the state alone tells (see
/// [`in_force_of`]): what the policies read for every row, without a copy.
pub(super) fn in_force<R>(user: Oid, f: impl FnOnce(Option<(u64, &[u8])>) -> R) -> R {
    state(|s| f(in_force_of(s, user)))
}

/// This backend's count of transactions (what is kept per transaction is tagged with it).
pub(super) fn xact() -> u64 {
    state(|s| s.xact)
}

static STATE: BackendLocal<State> = BackendLocal::new(State {
    local: None,
    session: None,
    saved: Vec::new(),
    xact: 0,
    entered_count: 0,
    carried: None,
});

/// Run `f` with the session state.
fn state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(f)
}

/// Remember the state before this subtransaction's first change, for a rollback.
fn save_before_change() {
    let sub = crate::pg::xact::subtransaction();
    state(|s| {
        if s.saved.last().map(|e| e.0) != Some(sub) {
            s.saved.push((sub, s.local.clone(), s.session.clone()));
        }
    });
}

fn xact_event(end: End) {
    state(|s| {
        match end {
            End::Commit | End::Prepare => s.saved.clear(),
            End::Abort => {
                if let Some((_, _, session)) = s.saved.first().cloned() {
                    s.session = session;
                }
                s.saved.clear();
            }
        }
        s.local = None;
        s.xact += 1;
    });
    super::policy::forget(end == End::Abort);
}

fn subxact_event(end: SubEnd, my: SubTransactionId, parent: SubTransactionId) {
    state(|s| {
        if end == SubEnd::Abort {
            super::policy::forget(true); // what its writes showed, the privileges it changed
        }
        if s.saved.last().map(|e| e.0) != Some(my) {
            return;
        }
        match end {
            SubEnd::Abort => {
                if let Some((_, local, session)) = s.saved.pop() {
                    s.local = local;
                    s.session = session;
                }
            }
            SubEnd::Commit => {
                let n = s.saved.len();
                if n >= 2 && s.saved[n - 2].0 == parent {
                    s.saved.pop(); // the parent's saved state is older
                } else {
                    s.saved[n - 1].0 = parent;
                }
            }
        }
    });
}

/// `DISCARD ALL` (a pooler's reset) also forgets the entered scope.
fn discard_all() {
    state(|s| {
        s.local = None;
        s.session = None;
        s.saved.clear();
    });
}

/// Called from `_PG_init`: the callbacks that end entered scopes.
pub fn init() {
    crate::pg::xact::on_end(xact_event);
    crate::pg::xact::on_subtransaction_end(subxact_event);
    crate::pg::utility::on_discard_all(discard_all);
    // what the policies decide by, fixed when each query starts (a session scope's grant is
    // checked there, once per transaction)
    crate::pg::executor::on_start(super::policy::settle);
}

/// Does a grant give `role` (or a role it is a member of) a scope reaching `target`?
fn granted(role: Oid, target: &[u8]) -> Result<bool> {
    Ok(crate::platform::grants::reach(role)?.may_enter(target))
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
    if !citus::internal_backend() || !crate::pg::role::acting_as_session_user() {
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
    if citus::loaded() && crate::pg::xact::in_block() {
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

/// At a query's start: what [`effective`] would find out later, found now, when there is
/// something to find: a session scope not yet checked in this transaction, or a scope Citus
/// carries to this node. (Nothing otherwise: a query's start stays cheap.)
pub(super) fn settle_scope() -> Result<()> {
    let unchecked = state(|s| s.session.as_ref().is_some_and(|e| e.checked != s.xact));
    if unchecked || citus::internal_backend() {
        effective()?;
    }
    Ok(())
}

/// The scope in force for the current role, if any (checking a session scope's grant again
/// once per transaction).
pub(super) fn effective() -> Result<Option<Vec<u8>>> {
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

}
