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
use crate::pg::fmgr::{external_id, ret_bool, Call};
use crate::pg::heap::{active_head, active_view, is_active_view, View};
use crate::pg::local::{BackendLocal, IdMap, Scoped};
use crate::pg::spi::{
    bypasses_rls, current_user, is_member, may_insert, role_oid, with_spi, SavedPlan,
};
use crate::pg::trigger::platform_schema;
use crate::platform::grants::Reach;
use crate::platform::relations::relation;
use crate::sql_function;
use crate::types::datum::TypeArgs;
use pgrx::pg_sys::{self, Oid};
use std::rc::Rc;

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

/// While [`settle`] runs (its own statements start executors too).
static SETTLING: Scoped<()> = Scoped::new();

/// At the start of each query's execution (`pg::executor`), before any row: the scope in force
/// (a session scope's grant checked again, once per transaction; the scope a Citus node is
/// carried), and, for each platform table the query reads, whether the current role writes it
/// and, for `grants`, which of its roles the current role is a member of.
pub fn settle(relations: &[Oid]) -> Result<()> {
    if in_parallel_worker() || SETTLING.current().is_some() {
        return Ok(());
    }
    let Some(ns) = platform_schema() else {
        return Ok(());
    };
    let _settling = SETTLING.enter(());
    settle_scope()?;
    let generation = crate::pg::inval::generation();
    let tables = policy_tables(ns, generation, relations);
    if tables.is_empty() {
        return Ok(());
    }
    let view = (generation, active_head());
    let (xact, role) = (xact(), current_user());
    let (crossings, grants) = state(|s| {
        s.known
            .as_ref()
            .map_or((Oid::INVALID, Oid::INVALID), |k| (k.crossings, k.grants))
    });
    for &table in &tables {
        let current = state(|s| {
            s.writes
                .iter()
                .any(|w| w.xact == xact && w.role == role && w.table == table && w.view == view)
        });
        // (a role that bypasses row-level security meets no policy)
        if !current && !bypasses(generation, role) {
            let writes = if table == crossings {
                may_write_crossings(ns)?
            } else {
                may_insert(table)
            };
            keep_writes(xact, role, table, view, writes);
        }
    }
    // where the role writes, found now (a grant read for a row would tell which rows)
    let writes_any = state(|s| {
        s.writes
            .iter()
            .any(|w| w.xact == xact && w.role == role && w.writes && tables.contains(&w.table))
    });
    // (on a Citus node, where the writers' clause is acts_in(), read for every query that
    // reads a platform table: a shard's query is not known as its table's)
    if writes_any || citus::loaded() {
        let reach = crate::platform::grants::reach(role)?;
        state(|s| s.reach = Some((xact, role, reach)));
    }
    if tables.contains(&grants) && !bypasses(generation, role) {
        settle_members(xact, role, view)?;
    }
    Ok(())
}

/// Does `role` bypass row-level security (kept while no invalidation arrived: a role's
/// attributes are among what [`crate::pg::inval`] counts)?
fn bypasses(generation: u64, role: Oid) -> bool {
    let kept = state(|s| {
        s.known
            .as_ref()
            .filter(|k| k.generation == generation)
            .and_then(|k| k.bypass.iter().find(|b| b.0 == role).map(|b| b.1))
    });
    if let Some(b) = kept {
        return b;
    }
    let b = bypasses_rls();
    state(|s| {
        if let Some(k) = s.known.as_mut().filter(|k| k.generation == generation) {
            if k.bypass.len() < KNOWN_RELATIONS {
                k.bypass.push((role, b));
            }
        }
    });
    b
}

/// The platform's tables with policies of their own, as this backend knows them while no
/// invalidation arrived: the trail (its partitions are read under its policy), crossings and
/// grants (whose policies differ), and which relations of recent plans are which.
#[derive(Clone, Default)]
struct Known {
    generation: u64,
    steps: Oid,
    crossings: Oid,
    grants: Oid,
    /// (relation, the platform table whose policy it is read under, or INVALID)
    relations: Vec<(Oid, Oid)>,
    /// (role, whether it bypasses row-level security)
    bypass: Vec<(Oid, bool)>,
}

/// How many relations [`Known`] keeps.
const KNOWN_RELATIONS: usize = 64;

/// The platform tables (by their policies) a plan's relations are read under.
fn policy_tables(ns: Oid, generation: u64, relations: &[Oid]) -> Vec<Oid> {
    state(|s| {
        let k = match &mut s.known {
            Some(k) if k.generation == generation => k,
            other => other.insert(Known {
                generation,
                steps: relation(ns, c"steps"),
                crossings: relation(ns, c"crossings"),
                grants: relation(ns, c"grants"),
                relations: Vec::new(),
                bypass: Vec::new(),
            }),
        };
        let mut tables: Vec<Oid> = Vec::new();
        for &rel in relations {
            let table = match k.relations.iter().find(|(r, _)| *r == rel) {
                Some(&(_, t)) => t,
                None => {
                    let t = if namespace_of(rel) != ns {
                        Oid::INVALID
                    } else if is_partition(rel) {
                        k.steps
                    } else {
                        rel
                    };
                    if k.relations.len() >= KNOWN_RELATIONS {
                        k.relations.clear();
                    }
                    k.relations.push((rel, t));
                    t
                }
            };
            if table != Oid::INVALID && !tables.contains(&table) {
                tables.push(table);
            }
        }
        tables
    })
}

fn keep_writes(xact: u64, role: Oid, table: Oid, view: (u64, Option<[u64; 3]>), writes: bool) {
    state(|s| {
        s.writes.retain(|w| w.xact == xact);
        if let Some(w) = s
            .writes
            .iter_mut()
            .find(|w| w.role == role && w.table == table)
        {
            w.view = view;
            w.writes = writes;
        } else if s.writes.len() < WRITES_KEPT {
            s.writes.push(Writes {
                xact,
                role,
                table,
                view,
                writes,
            });
        }
    });
}

/// May the current role write `pg_labels.crossings` (through its functions)?
static CROSSING_WRITER: SavedPlan = SavedPlan::new(
    c"SELECT coalesce(bool_or(pg_catalog.has_function_privilege(p.oid, 'EXECUTE')), false)
        FROM pg_catalog.pg_proc p
       WHERE p.pronamespace = $1 AND p.proname IN ('authorize_crossing', 'revoke_crossing')",
);

fn may_write_crossings(ns: Oid) -> Result<bool> {
    with_spi(|spi| {
        CROSSING_WRITER
            .execute(
                spi,
                &[pg_sys::OIDOID],
                &[Some(pg_sys::Datum::from(ns))],
                true,
                1,
            )?
            .must::<bool>(0, 1)
    })
}

/// The roles `pg_labels.grants` names (read as the tables' owner: every row, whatever the
/// caller may see).
static GRANTED_ROLES: SavedPlan = SavedPlan::new(c"SELECT DISTINCT role FROM pg_labels.grants");

fn settle_members(xact: u64, role: Oid, view: (u64, Option<[u64; 3]>)) -> Result<()> {
    let current = state(|s| {
        s.members
            .as_ref()
            .is_some_and(|m| m.xact == xact && m.role == role && m.view == view)
    });
    if current {
        return Ok(());
    }
    let owner = crate::platform::relations::platform_owner()?;
    let names: Vec<String> = crate::pg::spi::as_owner(owner, || {
        with_spi(|spi| {
            let rows = GRANTED_ROLES.execute(spi, &[], &[], true, 0)?;
            let mut names = Vec::new();
            for i in 0..rows.len() {
                if let Some(n) = rows.get::<Name>(i, 1)? {
                    names.push(n.0);
                }
            }
            Ok(names)
        })
    })?;
    let names = names
        .into_iter()
        .map(|n| {
            let member = role_oid(&n).is_some_and(|r| is_member(role, r));
            (n, member)
        })
        .collect();
    state(|s| {
        s.members = Some(Members {
            xact,
            role,
            view,
            names,
        })
    });
    Ok(())
}

/// Does the current role write `tab` (see [`Writes`])? Fixed when the query started; found now
/// only where no query's start did (a direct call).
fn writes(tab: Oid) -> Result<bool> {
    let (xact, role) = (xact(), current_user());
    let kept = state(|s| {
        s.writes
            .iter()
            .find(|w| w.xact == xact && w.role == role && w.table == tab)
            .map(|w| w.writes)
    });
    if let Some(w) = kept {
        return Ok(w);
    }
    let ns = platform_schema().unwrap_or(Oid::INVALID);
    let writes = if ns != Oid::INVALID && tab == relation(ns, c"crossings") {
        may_write_crossings(ns)?
    } else {
        may_insert(tab)
    };
    keep_writes(
        xact,
        role,
        tab,
        (crate::pg::inval::generation(), active_head()),
        writes,
    );
    Ok(writes)
}

/// Does the scope in force reach `needed`? `None`: no scope is in force for the current role.
fn reaches(needed: &[u8]) -> Result<Option<bool>> {
    let user = current_user();
    let kept = in_force(user, |scope| {
        scope.map(|(_, scope)| pg_labels_core::scope::reaches(scope, needed))
    });
    match kept {
        Some(answer) => Ok(Some(answer)),
        None => Ok(effective()?.map(|scope| pg_labels_core::scope::reaches(&scope, needed))),
    }
}

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
    // SAFETY: the argument is a varlena (a labelset: the functions are STRICT and declared so).
    if unsafe { external_id(call.datum(n).cast_mut_ptr()) }.is_some() {
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
    // SAFETY: the argument is a varlena (a labelset: the function is STRICT and declared so).
    let stored = unsafe { external_id(call.datum(n).cast_mut_ptr()) };
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

/// [`pgl_run_visible`], [`pgl_artifact_visible`]: the row of `table` with the id in argument 1,
/// read next to the relation in argument 0, is one the caller may see.
fn row_visible(call: &Call<'_>, table: &'static str) -> Result<pg_sys::Datum> {
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
    let user = current_user();
    let view = in_force(user, |s| s.map(|(stamp, _)| (xact(), user, stamp)));
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
    if may_insert(relid) {
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
