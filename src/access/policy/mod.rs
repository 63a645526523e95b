//! The row-level security policies' functions: `readable_in()`, `visible_in()`, `visible()`,
//! `readable()`, `writable()`, `member_of()` (and the functions earlier releases' policies
//! named, kept so that their install scripts load).
//!
//! PostgreSQL evaluates a query's own leakproof conditions before the policies, so a policy
//! function is called only for the rows that passed them, hidden ones included. Whatever such a
//! call does beyond reading its own arguments would tell, through counters every role can read,
//! which hidden rows matched. So the platform tables' policies decide from one compact value
//! stored inline in the row (the scope it can be read in: `carried_scope`, a `scope` column,
//! a protected table's generated `pg_labels_scope`, all of storage `PLAIN`, never toasted),
//! and from state fixed before the query's first row: the scope in force ([`super::session`],
//! whose session scope's grant is checked again at the first query of each transaction), and
//! whether the current role writes each table the query reads and which roles of
//! `pg_labels.grants` it is a member of, both fixed by [`settle`] when the query's execution
//! starts (`pg::executor`), for the rest of the query.

use super::session::{effective, in_force, settle_scope, xact};
use crate::pg::citus;
use crate::pg::datum::Name;
use crate::pg::error::{Error, Result};
use crate::pg::executor::{in_parallel_worker, is_partition, namespace_of};
use crate::pg::fmgr::{ret_bool, Call};
use crate::pg::heap::{active_head, active_view, is_active_view, View};
use crate::pg::local::{BackendLocal, IdMap, Scoped};
use crate::pg::role::{bypasses_rls, current_user, is_member, may_insert, role_oid};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::Oid;
use crate::pg::trigger::platform_schema;
use crate::platform::grants::Reach;
use crate::platform::relations::relation;
use crate::sql_function;
use crate::types::datum::TypeArgs;
use std::rc::Rc;

mod rows;
mod settle;

use rows::*;
pub use settle::settle;
use settle::*;

#[derive(Default)]
struct State {
    /// The platform's tables, and the relations plans read: see [`Known`].
    known: Option<Known>,
    /// Where the role writes (its grants' reach), found when its query started.
    reach: Option<(u64, Oid, Rc<Reach>)>,
    /// Which tables the roles write, fixed per query: see [`Writes`].
    writes: Vec<Writes>,
    /// Which roles of `pg_labels.grants` the current role is a member of: see [`Members`].
    members: Option<Members>,
    /// `visible()`'s answers for labelsets stored out of line: see [`Answers`].
    answers: Option<Answers>,
    /// The answers of the functions earlier releases' policies named: see [`Seen`].
    seen: Option<Seen>,
}

static STATE: BackendLocal<State> = BackendLocal::new(State {
    known: None,
    reach: None,
    writes: Vec::new(),
    members: None,
    answers: None,
    seen: None,
});

fn state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(f)
}

/// A writer of a platform table (a role that may insert into it; for `crossings`, one that may
/// execute `authorize_crossing()` or `revoke_crossing()`) reads every row of it. Whether the
/// current role is one is found when a query that reads the table starts ([`settle`]) and kept
/// for the transaction and the role; a later query's start finds it again when an invalidation
/// that could change a privilege was read since, or the snapshot changed (the transaction's own
/// `GRANT`s count from its next command). A policy only looks it up: what a query's policies
/// see is what held when it started, as PostgreSQL checks the query's own privileges then.
struct Writes {
    xact: u64,
    role: Oid,
    table: Oid,
    /// (invalidation generation, the active snapshot's head) when it was found
    view: (u64, Option<[u64; 3]>),
    writes: bool,
}

/// How many (role, table) answers a transaction keeps (the platform has nine tables with
/// policies; a query switching roles through functions has a few roles).
const WRITES_KEPT: usize = 64;

/// `grants`' policy lets a role read its own grants (those of the roles it is a member of):
/// the roles the table names, each with whether the current role is a member, found when a
/// query reading `grants` starts, under the same view as [`Writes`].
struct Members {
    xact: u64,
    role: Oid,
    view: (u64, Option<[u64; 3]>),
    names: Vec<(String, bool)>,
}

/// `visible()` of a big labelset (a user's own call, or a policy of a user's own making on a
/// toasted column) would read and check it each time. A stored TOAST value never changes while
/// it lives, so its answer is kept by its identity, for the transaction and the scope.
struct Answers {
    xact: u64,
    scope: Vec<u8>,
    by_value: Vec<((Oid, Oid), bool)>,
}

/// How many answers are kept (the big values of a query are few; small ones are not kept).
const ANSWERS_KEPT: usize = 64;

/// `run_visible()`/`artifact_visible()`/`step_readable()` (policies of release 0.2.0, still
/// loadable) read another row per call: kept by (relation, table, id) under one view of the
/// data (transaction, role, entering in force, snapshot) until it changes.
struct Seen {
    view: (u64, Oid, u64),
    snapshot: View,
    answers: IdMap<(Oid, &'static str, [u8; 16]), bool>,
}

/// How many answers one view keeps (a query over more rows starts again, still correct).
const SEEN_KEPT: usize = 1 << 16;

/// A transaction or savepoint ended ([`super::session`]'s callbacks): what its writes showed,
/// and the privileges it granted or revoked, are not trusted any more. A savepoint rolled back
/// inside a running query (a function's exception block) must not make that query's policies
/// find out for themselves, row by row, what its start fixed: the answers are kept for the
/// queries running, and only marked to be found again when the next query starts.
pub(super) fn forget(rolled_back: bool) {
    state(|s| {
        s.seen = None;
        if rolled_back {
            for w in s.writes.iter_mut() {
                w.view = STALE;
            }
            if let Some(m) = &mut s.members {
                m.view = STALE;
            }
        }
    });
}

/// A view no query's start has: what is kept under it is found again at the next one.
const STALE: (u64, Option<[u64; 3]>) = (0, None);

sql_function! {
    /// `pg_labels.readable_in(tab regclass, scope scope) → boolean`: a row of `tab` that can be
    /// read in `scope` (kept inline in the row) is one the caller sees: the scope in force
    /// reaches `scope`, or the caller writes `tab` and its grants reach `scope`. Decided from the
    /// row alone and from state fixed when the query started: no other row is read, nothing is
    /// looked up.
    fn pgl_readable_in(call) {
        let needed = call.scope(1)?;
        ret_bool(readable(&call, needed, needed)?)
    }

    /// `pg_labels.readable_in(tab regclass, scope scope, run_scope scope) → boolean`: the same,
    /// where the row's writers read it in another scope than its analysts: a step, artifact or
    /// share in its run's scope (`run_scope`), a run in its own. The policy of runs, steps,
    /// artifacts and shares.
    fn pgl_readable_in_run(call) {
        let (needed, written) = (call.scope(1)?, call.scope(2)?);
        ret_bool(readable(&call, needed, written)?)
    }

    /// `pg_labels.visible_in(scope scope) → boolean`: the policy `protect()` gives a table: the
    /// scope in force reaches `scope`, the one the row can be read in (its generated column
    /// `pg_labels_scope`, the deepest scope that can carry its labels); NULL (labels with no
    /// scope label) is readable in any scope entered.
    fn pgl_visible_in(call) {
        if call.is_null(0) {
            return ret_bool(effective_in_force()?);
        }
        ret_bool(reaches(call.scope(0)?)?.unwrap_or(false))
    }

    /// `pg_labels.member_of(role name) → boolean`: the current role is that role or a member
    /// of it (false for a role that does not exist); the policy of `grants`. Under a query
    /// that reads `grants`, answered from what its start found.
    fn pgl_member_of(call) {
        if call.is_null(0) {
            return ret_bool(false);
        }
        let name = String::from_utf8_lossy(call.cstring(0)).into_owned();
        let (xact, user) = (xact(), current_user());
        let kept = state(|s| {
            s.members
                .as_ref()
                .filter(|m| m.xact == xact && m.role == user)
                .and_then(|m| m.names.iter().find(|(n, _)| *n == name).map(|(_, ok)| *ok))
        });
        match kept {
            Some(ok) => ret_bool(ok),
            None => ret_bool(role_oid(&name).is_some_and(|r| is_member(user, r))),
        }
    }

    /// `pg_labels.visible(labels labelset) → boolean`: the scope in force can carry the labels.
    fn pgl_visible(call) {
        ret_bool(visible_at(&call, 0)?)
    }

    /// `pg_labels.readable(tab regclass, labels labelset) → boolean`: the caller writes `tab`,
    /// or the scope in force can carry the labels (the policy of runs and artifacts until
    /// 0.3.1, which read `carried_scope` instead: a labelset can be stored out of line).
    fn pgl_readable(call) {
        let in_force = answer_in_force(&call, 1)?;
        if in_force == Some(true) {
            return ret_bool(true);
        }
        if writes(Oid::from(call.datum(0).value() as u32))? {
            return ret_bool(true);
        }
        match in_force {
            Some(answer) => ret_bool(answer),
            None => ret_bool(visible_at(&call, 1)?),
        }
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
        let entered = match in_force(user, |s| s.map(|(_, scope)| scope.to_vec())) {
            Some(scope) => Some(scope),
            None => effective()?,
        };
        ret_bool(entered.is_some_and(|e| e == deepest && labels.carried_by(&e)))
    }

    /// `pg_labels.run_visible(rel oid, run uuid) → boolean` (release 0.2.0's policy of steps
    /// on Citus): the run, read next to `rel`, is one the caller sees.
    fn pgl_run_visible(call) {
        row_visible(&call, "runs")
    }

    /// `pg_labels.artifact_visible(rel oid, artifact uuid) → boolean` (release 0.2.0): the
    /// same for `shares` and their artifact.
    fn pgl_artifact_visible(call) {
        row_visible(&call, "artifacts")
    }

    /// `pg_labels.step_readable(tab regclass, labels labelset, run uuid) → boolean` (release
    /// 0.2.0's policy of steps): the caller writes `tab`, or the scope in force can carry the
    /// labels and the run (read next to `tab`) is one the caller sees.
    fn pgl_step_readable(call) {
        let tab = Oid::from(call.datum(0).value() as u32);
        if writes(tab)? {
            return ret_bool(true);
        }
        if !visible_at(&call, 1)? {
            return ret_bool(false);
        }
        let run = crate::pg::datum::uuid_arg(&call, 2);
        ret_bool(row_visible_for(tab, "runs", run)?)
    }
}

/// [`pgl_readable_in`]: the scope in force reaches `needed` (an analyst's row first), or the
/// caller writes the table and its grants reach `written` (asked only past that, and the scope
/// found only past both).
fn readable(call: &Call<'_>, needed: &[u8], written: &[u8]) -> Result<bool> {
    let user = current_user();
    let kept = in_force(user, |scope| {
        scope.map(|(_, scope)| pg_labels_core::scope::reaches(scope, needed))
    });
    if kept == Some(true) {
        return Ok(true);
    }
    if writes(Oid::from(call.datum(0).value() as u32))? && write_reach(user)?.reaches(written) {
        return Ok(true);
    }
    Ok(match kept {
        Some(answer) => answer,
        None => effective()?.is_some_and(|scope| pg_labels_core::scope::reaches(&scope, needed)),
    })
}

/// Where the current role writes (its grants' reach), as the query's start found it.
fn write_reach(role: Oid) -> Result<Rc<Reach>> {
    let xact = xact();
    let kept = state(|s| {
        s.reach
            .as_ref()
            .filter(|r| r.0 == xact && r.1 == role)
            .map(|r| r.2.clone())
    });
    match kept {
        Some(r) => Ok(r),
        None => {
            let r = crate::platform::grants::reach(role)?;
            state(|s| s.reach = Some((xact, role, r.clone())));
            Ok(r)
        }
    }
}

/// Is any scope in force for the current role?
fn effective_in_force() -> Result<bool> {
    let user = current_user();
    if in_force(user, |s| s.is_some()) {
        return Ok(true);
    }
    Ok(effective()?.is_some())
}

/// `visible()` of the labelset in argument `n` when the state alone tells it: the labelset is
/// stored inline and a scope is in force for the current role; `None` otherwise.
fn answer_in_force(call: &Call<'_>, n: usize) -> Result<Option<bool>> {
    if call.external_id(n).is_some() {
        return Ok(None);
    }
    let labels = call.labelset(n)?;
    let user = current_user();
    Ok(in_force(user, |s| {
        s.map(|(_, scope)| labels.carried_by(scope))
    }))
}

/// `visible()` of the labelset in argument `n` (not NULL: the functions are STRICT).
fn visible_at(call: &Call<'_>, n: usize) -> Result<bool> {
    if let Some(answer) = answer_in_force(call, n)? {
        return Ok(answer);
    }
    let Some(scope) = effective()? else {
        return Ok(false);
    };
    let stored = call.external_id(n);
    let xact = xact();
    if let Some(v) = stored {
        let kept = state(|s| {
            let a = s
                .answers
                .as_ref()
                .filter(|a| a.xact == xact && a.scope == scope)?;
            a.by_value.iter().find(|(k, _)| *k == v).map(|(_, ok)| *ok)
        });
        if let Some(answer) = kept {
            return Ok(answer);
        }
    }
    let answer = call.labelset(n)?.carried_by(&scope);
    if let Some(v) = stored {
        state(|s| {
            let a = match &mut s.answers {
                Some(a) if a.xact == xact && a.scope == scope => a,
                other => other.insert(Answers {
                    xact,
                    scope: scope.clone(),
                    by_value: Vec::new(),
                }),
            };
            if a.by_value.len() >= ANSWERS_KEPT {
                a.by_value.remove(0);
            }
            a.by_value.push((v, answer));
        });
    }
    Ok(answer)
}
