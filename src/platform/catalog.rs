//! The platform tables as the triggers reach them: found next to the trigger's table (by name,
//! in the platform schema), cached per backend and checked on every use; a run locked by its
//! primary key; a tool read from the catalog as committed now; ids from the platform's
//! sequences. No SPI on this path.
//!
//! **Runs.** Locking a run is what `SELECT ... FOR NO KEY UPDATE` does, except that the latest
//! version is always followed: whatever the isolation level, a step is judged with the labels
//! the last committed step left. A run that carries many labels keeps them out of line
//! (TOAST); its decoded labels are cached per backend under the TOAST value's identity, which
//! changes whenever the labels do, so a step that adds nothing costs the same for a run of ten
//! labels as for one of a hundred thousand.
//!
//! **Tools.** A decision reads the tool catalog with the latest snapshot (a tool made
//! `destructive` or removed by a committed change counts at once, in `REPEATABLE READ` too),
//! holding `ROW SHARE` on `pg_labels.tools` until it commits (a fast-path lock, like a
//! reader's: it does not touch the shared lock table). A change to a tool (`UPDATE`,
//! `DELETE`) first takes `EXCLUSIVE` (`tools_change()`, below), which conflicts with the
//! decisions' `ROW SHARE` and not with readers' `ACCESS SHARE`: it waits for the decisions in
//! flight, not for an analyst's open transaction, and a decision arriving meanwhile waits for it
//! and then sees it. Changes are rare and decisions are not, so the changes pay for the
//! ordering. A new tool needs no ordering: until it commits, a call to it is refused as unknown.

use crate::pg::citus;
use crate::pg::datum::{Bytea, Timestamp, Uuid};
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::fmgr::external_id;
use crate::pg::heap::{Held, PageHint, Paged, RowLock, Table, Tid};
use crate::pg::local::{BackendLocal, IdMap};
use crate::pg::lock::ObjectLock;
use crate::pg::trigger::{col, platform_schema, Columns, Op, Spec, Timing, Trigger};
use crate::sql_function;
use crate::types::datum::ScopeBuf;
use pg_labels_core::barrier::Summary;
use pg_labels_core::chain;
use pg_labels_core::labelset::{self, LabelSet};
use pg_labels_core::rules::Effect;
use pg_labels_core::LabelSet as LabelSetCol;
use pgrx::pg_sys::{self, Datum, Oid};
use std::collections::{BTreeMap, HashMap};
use std::ffi::CStr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The platform relations, found by name in the platform schema and cached per backend
/// (checked against the opened relation on every use, so a recreated table is noticed).
#[derive(Clone, Copy, Default)]
struct Rels {
    namespace: Oid,
    runs: Oid,
    runs_pkey: Oid,
    tools: Oid,
    tools_pkey: Oid,
}

static RELS: BackendLocal<Rels> = BackendLocal::new(Rels {
    namespace: Oid::INVALID,
    runs: Oid::INVALID,
    runs_pkey: Oid::INVALID,
    tools: Oid::INVALID,
    tools_pkey: Oid::INVALID,
});

fn missing(what: &str) -> Error {
    Error::new(
        NOT_IN_PREREQUISITE_STATE,
        format!("pg_labels: relation pg_labels.{what} is missing"),
    )
    .hint("The platform tables are created by CREATE EXTENSION pg_labels (or restored from a dump); see docs/operations.md in pg_labels' source.")
}

/// A platform table by its name (`INVALID` if there is none).
pub fn relation_named(namespace: Oid, table: &str) -> Oid {
    std::ffi::CString::new(table)
        .map(|c| relation(namespace, &c))
        .unwrap_or(Oid::INVALID)
}

/// A relation of the platform schema by name.
pub fn relation(namespace: Oid, name: &CStr) -> Oid {
    // SAFETY: a syscache lookup by name.
    unsafe { pg_sys::get_relname_relid(name.as_ptr(), namespace) }
}

fn lookup(namespace: Oid) -> Result<Rels> {
    let pkey = |rel: Oid, what: &str| -> Result<Oid> {
        let t = Table::open(rel, pg_sys::AccessShareLock)?.ok_or_else(|| missing(what))?;
        Ok(t.primary_key())
    };
    let runs = relation(namespace, c"runs");
    let tools = relation(namespace, c"tools");
    if runs == Oid::INVALID {
        return Err(missing("runs"));
    }
    if tools == Oid::INVALID {
        return Err(missing("tools"));
    }
    Ok(Rels {
        namespace,
        runs,
        runs_pkey: pkey(runs, "runs")?,
        tools,
        tools_pkey: pkey(tools, "tools")?,
    })
}

/// Open one of the platform tables (and know its primary key), refreshing the cache if needed.
fn open(namespace: Oid, which: &CStr, lock: u32) -> Result<(Table, Oid)> {
    if citus::SHARD.current().is_some() {
        // a trigger on a Citus shard: the shard of this table next to it (crate::pg::citus)
        let table = if which == c"runs" { "runs" } else { "tools" };
        let t = open_next_to_shard(namespace, table, lock)?;
        let pk = t.primary_key();
        return Ok((t, pk));
    }
    let pick = |r: &Rels| {
        if which == c"runs" {
            (r.runs, r.runs_pkey)
        } else {
            (r.tools, r.tools_pkey)
        }
    };
    let cached = RELS.get();
    if cached.namespace == namespace {
        let (oid, pk) = pick(&cached);
        if let Some(t) = Table::open(oid, lock)?.filter(|t| t.is(which, namespace)) {
            return Ok((t, pk));
        }
    }
    let fresh = lookup(namespace)?;
    RELS.set(fresh);
    let (oid, pk) = pick(&fresh);
    match Table::open(oid, lock)?.filter(|t| t.is(which, namespace)) {
        Some(t) => Ok((t, pk)),
        None => Err(missing(&which.to_string_lossy())),
    }
}

/// The owner of the platform tables (of `pg_labels.steps`), who runs the statements the
/// triggers and platform functions make.
pub fn platform_owner() -> Result<Oid> {
    let steps = platform_schema()
        .map(|ns| relation(ns, c"steps"))
        .unwrap_or(Oid::INVALID);
    if steps == Oid::INVALID {
        return Err(missing("steps"));
    }
    // SAFETY: a syscache lookup of pg_class by OID.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            Datum::from(steps),
        );
        if tuple.is_null() {
            return Err(missing("steps"));
        }
        let form = pgrx::pg_sys::GETSTRUCT(tuple) as *const pg_sys::FormData_pg_class;
        let owner = (*form).relowner;
        pg_sys::ReleaseSysCache(tuple);
        Ok(owner)
    }
}

static RUN_COLUMNS: Columns<3> = Columns::new([
    col::<Uuid>(c"id"),
    col::<ScopeBuf>(c"scope"),
    col::<LabelSetBufCol>(c"labels"),
]);
type LabelSetBufCol = crate::types::datum::LabelSetBuf;

/// What a run carries, decoded: its labels, where each entry lies (for membership tests by
/// binary search), and their [`Summary`] for the run's scope.
pub struct RunLabels {
    pub body: Vec<u8>,
    offsets: Vec<(u32, u32)>,
    pub summary: Summary,
}

impl RunLabels {
    fn new(body: Vec<u8>, scope: &[u8]) -> RunLabels {
        let set = LabelSet::from_canonical(&body);
        RunLabels {
            offsets: labelset::offsets(set),
            summary: Summary::of(set, scope),
            body,
        }
    }

    pub fn set(&self) -> LabelSet<'_> {
        LabelSet::from_canonical(&self.body)
    }

    /// Does the run carry every label of `more` already?
    pub fn has_all(&self, more: LabelSet<'_>) -> bool {
        more.is_subset_indexed(self.set(), &self.offsets)
    }
}

/// A run, locked for this transaction ([`lock_run`]), or read to be written only if no one
/// wrote it first ([`read_run`], on a Citus shard; `locked` is then false).
pub struct LockedRun {
    pub scope: Vec<u8>,
    pub locked: bool,
    run: Uuid,
    pub labels: Rc<RunLabels>,
    /// Its hash chain (`None` for a table of release 0.1.0 until ALTER EXTENSION UPDATE).
    pub chain: Option<ChainState>,
    /// The runs table: open when the run was read now, `None` when this transaction knew it
    /// already ([`KEPT`]: then opened only if the step writes the run's row).
    table: Option<Table>,
    table_oid: Oid,
    namespace: Oid,
    pkey: Oid,
    /// The version read (`None`: the run was known to this transaction already, see [`KEPT`]).
    held: Option<Held>,
    columns: [i32; 3],
}

/// Where a run's hash chain stands: its head (the hash of its last step) and its row's
/// checkpoint's partition (`chain_slot`).
pub struct ChainState {
    pub head: chain::Hash,
    pub slot: Option<i16>,
    columns: [i32; 2],
}

/// A run's chain columns.
static CHAIN_COLUMNS: Columns<2> =
    Columns::new([col::<Bytea>(c"chain_head"), col::<i16>(c"chain_slot")]);

/// What this transaction knows of the runs it locked, as its own steps left them: a run's
/// row is locked to the end of the transaction, so no one else writes its steps or its row
/// meanwhile, and a bulk write's next step of the run reads nothing again. Forgotten at the
/// end of the transaction, when a subtransaction aborts (its steps and locks are gone), when
/// a relation changes, and when a statement updates or deletes a run (`runs_seal`).
struct Kept {
    generation: u64,
    table: Oid,
    /// The runs table's primary key, its columns and its chain's columns.
    pkey: Oid,
    columns: [i32; 3],
    chain_columns: [i32; 2],
    runs: IdMap<Uuid, KeptRun>,
}
struct KeptRun {
    scope: Vec<u8>,
    labels: Rc<RunLabels>,
    head: chain::Hash,
    slot: Option<i16>,
    /// The id of the last step this transaction wrote to it (`head` is its hash).
    last: Option<i64>,
}
static KEPT: BackendLocal<Option<Kept>> = BackendLocal::new(None);
/// How many runs a transaction keeps (a bulk write over more reads the others again).
const KEPT_RUNS: usize = 65536;

/// Forget what this transaction knew of its runs (see [`KEPT`]).
pub fn forget_runs() {
    KEPT.with(|k| *k = None);
}

impl LockedRun {
    /// Move the run's chain on to a step's hash (`head`, of step `id` in ring partition `slot`),
    /// and, when the step brought new labels, write what the run carries now (`carried`).
    /// The run's row is written only when its labels grow or the step is the first of the run
    /// in another partition than its checkpoint's (`chain_slot`: every step after the row's
    /// `chain_head` lies in it), and for every step on a Citus shard, where a step's write of
    /// its run's row is its lock. `false` when the run was not locked and another transaction
    /// wrote it first: nothing was written, and the step must be decided again on the run as
    /// it is now ([`lock_run`]).
    pub fn advance(
        &self,
        head: &chain::Hash,
        id: i64,
        carried: Option<&[u8]>,
        slot: Option<i16>,
    ) -> Result<bool> {
        let Some(c) = &self.chain else {
            return Ok(true);
        };
        // (on a Citus shard the row keeps the head itself: no probe of the trail there)
        let write = on_shard() || carried.is_some() || slot != c.slot;
        if !write {
            keep(self.table_oid, &self.run, |k| {
                k.head = *head;
                k.last = Some(id);
            });
            return Ok(true);
        }
        // the runs table, opened now if the run was known to this transaction (locked by it)
        let opened;
        let table = match &self.table {
            Some(t) => t,
            None => {
                opened = open(self.namespace, c"runs", pg_sys::RowExclusiveLock)?.0;
                if opened.oid() != self.table_oid {
                    return Err(changed_concurrently());
                }
                &opened
            }
        };
        let [c_head, c_slot] = c.columns;
        let mut changes = vec![
            (c_head, Some(crate::pg::datum::bytea_datum(head)?)),
            (c_slot, slot.map(Datum::from)),
        ];
        if let Some(labels) = carried {
            changes.push((
                self.columns[2],
                Some(crate::types::datum::labelset_datum(labels)?),
            ));
        }
        let fetched;
        let held = match &self.held {
            Some(h) => h,
            None => {
                // known to this transaction, not read: its latest version (locked by it)
                fetched = fetch_run(table, self.pkey, self.columns[0], &self.run, |f| {
                    Ok(f.hold())
                })?
                .ok_or_else(changed_concurrently)?;
                &fetched
            }
        };
        let written = table.update(held, &changes, "run")?;
        if let Some(place) = written {
            // the next step of this run in this transaction (a bulk write) starts there
            // rather than walking the versions this transaction left behind
            // SAFETY: reads the backend's transaction state.
            let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
            WRITTEN.with(|w| {
                if w.xid != xid || w.table != table.oid() {
                    w.xid = xid;
                    w.table = table.oid();
                    w.places.clear();
                }
                if w.places.len() >= RUN_PLACES_KEPT {
                    w.places.clear();
                }
                w.places.insert(self.run, place);
            });
            keep(table.oid(), &self.run, |k| {
                k.head = *head;
                k.last = Some(id);
                k.slot = slot;
                if let Some(labels) = carried {
                    k.labels = Rc::new(RunLabels::new(labels.to_vec(), &k.scope));
                }
            });
        }
        let written = written.is_some();
        if !written && self.locked {
            // cannot happen: a locked row is written by no one else
            return Err(changed_concurrently());
        }
        Ok(written)
    }
}

/// A run's row gone or written by another transaction under a lock this one holds.
fn changed_concurrently() -> Error {
    Error::new(
        crate::pg::error::SERIALIZATION_FAILURE,
        "could not serialize access to a run being changed concurrently",
    )
}

/// Change what this transaction keeps of a run, if it keeps it.
fn keep(table: Oid, run: &Uuid, f: impl FnOnce(&mut KeptRun)) {
    KEPT.with(|k| {
        if let Some(k) = k.as_mut().filter(|k| k.table == table) {
            if let Some(r) = k.runs.get_mut(run) {
                f(r);
            }
        }
    });
}

/// Decoded labels of runs that keep them out of line: ((TOAST relation, value id), run, scope).
type CacheEntry = ((Oid, Oid), Uuid, Vec<u8>, Rc<RunLabels>);
static BIG_RUNS: BackendLocal<Vec<CacheEntry>> = BackendLocal::new(Vec::new());
/// How many big runs a backend keeps decoded.
const BIG_RUNS_KEPT: usize = 4;

/// Find the run and lock its row until the end of the transaction (`FOR NO KEY UPDATE`),
/// waiting for concurrent writers and following their updates to the latest version.
/// `None` when there is no such run.
pub fn lock_run(namespace: Oid, run: &Uuid) -> Result<Option<LockedRun>> {
    find_run(namespace, run, true)
}

/// On a Citus shard: find the run's latest version, to write it with [`LockedRun::advance`]
/// only if no one wrote it first: a step's one write of its run's row is then also its lock.
/// The run is locked at once, as [`lock_run`] does, when its version found is held by another
/// transaction (a writer is at it: waiting in the lock queue is fairer than deciding in vain)
/// or its table keeps no chain. On one node, [`lock_run`].
pub fn read_run(namespace: Oid, run: &Uuid) -> Result<Option<LockedRun>> {
    find_run(namespace, run, !on_shard())
}

/// The run's latest version, handed to `f` (the places kept are tried first).
fn fetch_run<T>(
    rel: &Table,
    pkey: Oid,
    c_id: i32,
    run: &Uuid,
    f: impl FnOnce(&crate::pg::heap::Found<'_>) -> Result<T>,
) -> Result<Option<T>> {
    // where the run was found last time: kept while no invalidation of a relation arrived
    // (a table rewritten has new places) and for this table only
    let generation = crate::pg::inval::generation();
    let mut hint = RUN_PLACES.with(|p| {
        if p.generation != generation || p.table != rel.oid() {
            p.generation = generation;
            p.table = rel.oid();
            p.places.clear();
        }
        p.places.get(run).copied()
    });
    // the version of the run this transaction wrote last, if it wrote one
    // SAFETY: reads the backend's transaction state.
    let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
    let written = WRITTEN.with(|w| {
        (xid != pg_sys::InvalidTransactionId && w.xid == xid && w.table == rel.oid())
            .then(|| w.places.get(run).copied())
            .flatten()
    });
    let result = rel.probe_hinted(
        pkey,
        run.datum(),
        pg_sys::F_UUID_EQ,
        written,
        &mut hint,
        |found| Ok(found.get::<Uuid>(c_id)?.as_ref() == Some(run)),
        f,
    )?;
    if let Some(place) = hint {
        RUN_PLACES.with(|p| {
            if p.places.len() >= RUN_PLACES_KEPT {
                p.places.clear();
            }
            p.places.insert(*run, place);
        });
    }
    Ok(result)
}

fn find_run(namespace: Oid, run: &Uuid, lock: bool) -> Result<Option<LockedRun>> {
    let shard = on_shard();
    if lock && !shard {
        if let Some(kept) = kept_run(namespace, run) {
            return Ok(Some(kept));
        }
    }
    // a step may write the run row
    let (rel, pkey) = open(namespace, c"runs", pg_sys::RowExclusiveLock)?;
    let columns = rel.columns(&RUN_COLUMNS)?;
    let [c_id, c_scope, c_labels] = columns;
    let chain_columns = rel.columns(&CHAIN_COLUMNS).ok();
    let generation = crate::pg::inval::generation();
    // how the run is locked (see RunLock)
    let how = if shard {
        RunLock::Shard
    } else if RUN_LOCKS.get() < RUN_LOCKS_MAX {
        RunLock::Object
    } else {
        RunLock::Row
    };
    let object = ObjectLock::new(run_key(run));
    match how {
        RunLock::Object => {
            object.acquire(pg_sys::ExclusiveLock)?;
            RUN_LOCKS.set(RUN_LOCKS.get() + 1);
        }
        RunLock::Row => object.acquire(pg_sys::ShareLock)?,
        RunLock::Shard => {}
    }
    let result = fetch_run(&rel, pkey, c_id, run, |found| {
        let locked = match how {
            RunLock::Object => {
                // a writer that locked the row (RunLock::Row) before this lock was granted
                // is waited for
                if found.held_by_other() {
                    found.lock(RowLock::NoKeyUpdate, "run")?;
                }
                true
            }
            RunLock::Row => {
                found.lock(RowLock::NoKeyUpdate, "run")?;
                true
            }
            RunLock::Shard => {
                let locked = lock || chain_columns.is_none() || found.may_be_held();
                if locked {
                    found.lock(RowLock::NoKeyUpdate, "run")?;
                }
                locked
            }
        };
        let scope = found
            .get::<ScopeBuf>(c_scope)?
            .ok_or_else(|| Error::corrupt("scope"))?
            .0;
        let raw = found.raw(c_labels);
        // SAFETY: the labels column is a labelset (a varlena), checked by RUN_COLUMNS.
        let id = raw.and_then(|d| unsafe { external_id(d.cast_mut_ptr()) });
        let labels = match id {
            Some(id) => match BIG_RUNS.with(|c| {
                c.iter()
                    .find(|(k, r, s, _)| *k == id && r == run && *s == scope)
                    .map(|e| e.3.clone())
            }) {
                Some(hit) => hit,
                None => {
                    let body = found
                        .get::<LabelSetCol<'_>>(c_labels)?
                        .map(|l| l.body().to_vec())
                        .unwrap_or_default();
                    let decoded = Rc::new(RunLabels::new(body, &scope));
                    BIG_RUNS.with(|c| {
                        if c.len() >= BIG_RUNS_KEPT {
                            c.remove(0);
                        }
                        c.push((id, *run, scope.clone(), decoded.clone()));
                    });
                    decoded
                }
            },
            None => {
                let body = found
                    .get::<LabelSetCol<'_>>(c_labels)?
                    .map(|l| l.body().to_vec())
                    .unwrap_or_default();
                Rc::new(RunLabels::new(body, &scope))
            }
        };
        let chain = match chain_columns {
            Some(columns) => {
                let head = found
                    .get::<Bytea>(columns[0])?
                    .and_then(|b| b.0.try_into().ok())
                    .ok_or_else(|| unchained(run))?;
                Some(ChainState {
                    head,
                    slot: found.get::<i16>(columns[1])?,
                    columns,
                })
            }
            None => None,
        };
        Ok((scope, labels, chain, found.hold(), locked))
    })?;
    if let RunLock::Row = how {
        // the row lock holds it now
        object.release(pg_sys::ShareLock);
    }
    let Some((scope, labels, mut chain, held, locked)) = result else {
        return Ok(None);
    };
    if let Some(c) = chain.as_mut().filter(|_| locked && !shard) {
        // the row keeps a checkpoint; the steps after it are in its partition, the last of
        // them the head
        if let Some(slot) = c.slot {
            if let Some(last) = last_step(namespace, slot, run)? {
                c.head = last;
            }
        }
        let (table, head, slot, chain_columns) = (rel.oid(), c.head, c.slot, c.columns);
        KEPT.with(|k| {
            let k = match k {
                Some(k) if k.generation == generation && k.table == table => k,
                other => other.insert(Kept {
                    generation,
                    table,
                    pkey,
                    columns,
                    chain_columns,
                    runs: IdMap::default(),
                }),
            };
            if k.runs.len() >= KEPT_RUNS {
                k.runs.clear();
            }
            k.runs.insert(
                *run,
                KeptRun {
                    scope: scope.clone(),
                    labels: labels.clone(),
                    head,
                    slot,
                    last: None,
                },
            );
        });
    }
    Ok(Some(LockedRun {
        scope,
        locked,
        run: *run,
        labels,
        chain,
        table_oid: rel.oid(),
        table: Some(rel),
        namespace,
        pkey,
        held: Some(held),
        columns,
    }))
}

/// A run this transaction locked already, as its steps left it ([`KEPT`]), without opening the
/// runs table: the transaction holds it locked (`ROW EXCLUSIVE`) since it read the run, and no
/// relation changed since.
fn kept_run(namespace: Oid, run: &Uuid) -> Option<LockedRun> {
    let rels = RELS.get();
    if rels.namespace != namespace || rels.runs == Oid::INVALID {
        return None;
    }
    let generation = crate::pg::inval::generation();
    let kept = KEPT.with(|k| {
        let k = k
            .as_ref()
            .filter(|k| k.generation == generation && k.table == rels.runs)?;
        let r = k.runs.get(run)?;
        Some((
            (r.scope.clone(), r.labels.clone(), r.head, r.slot),
            (k.pkey, k.columns, k.chain_columns),
        ))
    })?;
    if !crate::pg::compat::relation_locked_by_me(rels.runs, &[pg_sys::RowExclusiveLock]) {
        return None;
    }
    let ((scope, labels, head, slot), (pkey, columns, chain_columns)) = kept;
    Some(LockedRun {
        scope,
        locked: true,
        run: *run,
        labels,
        chain: Some(ChainState {
            head,
            slot,
            columns: chain_columns,
        }),
        table: None,
        table_oid: rels.runs,
        namespace,
        pkey,
        held: None,
        columns,
    })
}

/// How a step (or an artifact) locks its run, until the end of its transaction.
///
/// - `Object`: a lock of the lock manager on the run ([`ObjectLock`], `ExclusiveLock`), which
///   writes nothing: no WAL, the run's page untouched. A transaction takes at most
///   [`RUN_LOCKS_MAX`] of them (the lock manager's table is shared and bounded);
/// - `Row`: past that (a bulk write over many runs), the run's row `FOR NO KEY UPDATE` (a
///   lock record, once per run and transaction), after waiting for the run's `Object` holder
///   (a `ShareLock` of the same object, given up once the row is locked);
/// - `Shard`: on a Citus shard, the step's write of the run's row (see [`read_run`]).
///
/// The two single-node kinds exclude each other: a `Row` writer waits for an `Object` holder
/// before it locks the row, and an `Object` writer granted its lock waits for a row locked
/// before (it finds the row held, [`crate::pg::heap::Found::held_by_other`], and locks it
/// too). Writes of the run's row (a step that grows its labels) wait for any row lock.
#[derive(Clone, Copy)]
enum RunLock {
    Object,
    Row,
    Shard,
}

/// How many runs a transaction locks with [`RunLock::Object`] before it locks rows.
const RUN_LOCKS_MAX: u32 = 32;
static RUN_LOCKS: BackendLocal<u32> = BackendLocal::new(0);

/// A run's key in the lock space: its 128 bits folded to 64 (two runs that share a key only
/// wait for each other).
fn run_key(run: &Uuid) -> u64 {
    let hi = u64::from_be_bytes(run.0[..8].try_into().unwrap_or_default());
    let lo = u64::from_be_bytes(run.0[8..].try_into().unwrap_or_default());
    hi ^ lo
}

/// The end of the transaction: what it knew of its runs, and how many it locked. When it
/// committed, the last step it wrote to each run it kept is remembered (see [`Seen::mine`]).
pub fn end_of_transaction(committed: bool) {
    if committed {
        let generation = crate::pg::inval::generation();
        if let Some(kept) = KEPT
            .with(|k| k.take())
            .filter(|k| k.generation == generation)
        {
            for (run, r) in kept.runs {
                if let Some(id) = r.last {
                    saw_step(&run, |s| {
                        s.id = Some(id);
                        s.mine = Some((generation, id, r.head));
                    });
                }
            }
        }
    }
    forget_runs();
    RUN_LOCKS.set(0);
}

/// The partitions of the trail's ring (`steps_00` .. `steps_23`) and their index on
/// `(run_id, id)`, found by name and kept while no relation changes.
/// Each with whether [`Table::probe_last_paged`] can read that index.
static RING: BackendLocal<(u64, Oid, Vec<RingPart>)> =
    BackendLocal::new((0, Oid::INVALID, Vec::new()));
/// A partition of the ring: its slot, its oid, its `(run_id, id)` index and whether that
/// index's pages can be read directly.
type RingPart = (i16, Oid, Oid, bool);

static STEP_HASH: Columns<3> = Columns::new([
    col::<i64>(c"id"),
    col::<Bytea>(c"hash"),
    col::<Uuid>(c"run_id"),
]);

/// What this backend saw of each run's steps, across transactions (see [`Seen`]).
static SEEN_STEPS: BackendLocal<Option<IdMap<Uuid, Seen>>> = BackendLocal::new(None);
#[derive(Clone, Copy, Default)]
struct Seen {
    /// The id of a recent step of the run (the last one it wrote in a transaction that
    /// committed, or found last): a lower bound of its last step's id (ids grow in a run's
    /// decision order), from which PostgreSQL's index scan reads (if that step is gone, the
    /// scan then reads all).
    id: Option<i64>,
    /// The leaf page of the trail's index where the run's last step was found, where the next
    /// search starts (see [`Table::probe_last_paged`]).
    page: Option<PageHint>,
    /// The last step this backend wrote to the run in a transaction that committed: the
    /// invalidation generation then (see [`crate::pg::inval`]), its id and its hash. While no
    /// relation changed since, when the index shows it still last, the run's head is its hash,
    /// with no row read.
    mine: Option<(u64, i64, chain::Hash)>,
}
/// How many runs a backend remembers a step of.
const SEEN_STEPS_KEPT: usize = 65536;

/// Remember what was seen of `run`'s steps (see [`SEEN_STEPS`]).
fn saw_step(run: &Uuid, f: impl FnOnce(&mut Seen)) {
    SEEN_STEPS.with(|s| {
        let s = s.get_or_insert_with(IdMap::default);
        if s.len() >= SEEN_STEPS_KEPT {
            s.clear();
        }
        f(s.entry(*run).or_default());
    });
}

/// The hash of the run's last step in ring partition `slot` (`None`: it has none there),
/// as this transaction sees the trail now, under the run's lock.
fn last_step(namespace: Oid, slot: i16, run: &Uuid) -> Result<Option<chain::Hash>> {
    let generation = crate::pg::inval::generation();
    let kept = RING.with(|(g, ns, v)| {
        if *g != generation || *ns != namespace {
            *g = generation;
            *ns = namespace;
            v.clear();
        }
        v.iter().find(|e| e.0 == slot).map(|e| (e.1, e.2, e.3))
    });
    let (part, index, fits) = match kept {
        Some(k) => k,
        None => {
            let name =
                std::ffi::CString::new(format!("steps_{slot:02}")).map_err(|_| missing("steps"))?;
            let Some(t) = Table::open(relation(namespace, &name), pg_sys::AccessShareLock)? else {
                return Ok(None);
            };
            let (Some(r), Some(i)) = (t.attnum(c"run_id"), t.attnum(c"id")) else {
                return Err(missing("steps"));
            };
            let index = t
                .btree_on(&[r, i])
                .ok_or_else(|| missing("steps_run_idx"))?;
            let fits = t.index_fits(index);
            RING.with(|(_, _, v)| v.push((slot, t.oid(), index, fits)));
            (t.oid(), index, fits)
        }
    };
    // no new lock when this transaction holds one on it already (the executor's, when the step
    // goes to this partition)
    let Some(t) = Table::open(part, crate::pg::compat::read_lock(part))? else {
        return Ok(None);
    };
    // (after the lock, or under the one held: the invalidations committed before it were read)
    let generation = crate::pg::inval::generation();
    let [c_id, c_hash, c_run] = t.columns(&STEP_HASH)?;
    let read = |f: &crate::pg::heap::Found<'_>| -> Result<(i64, chain::Hash)> {
        let hash = f
            .get::<Bytea>(c_hash)?
            .and_then(|b| b.0.try_into().ok())
            .ok_or_else(|| unchained(run))?;
        Ok((f.get::<i64>(c_id)?.unwrap_or_default(), hash))
    };
    let mut seen = SEEN_STEPS
        .with(|s| s.as_ref().and_then(|s| s.get(run).copied()))
        .unwrap_or_default();
    let found = if fits {
        // the step this backend committed last, while no relation changed since (the trail
        // may have been made again, and its ids started over)
        let mine = seen.mine.filter(|m| m.0 == generation).map(|m| (m.1, m.2));
        let is_it = |f: &crate::pg::heap::Found<'_>, id: i64| -> Result<bool> {
            Ok(f.get::<Uuid>(c_run)?.as_ref() == Some(run) && f.get::<i64>(c_id)? == Some(id))
        };
        let known = mine.map(|m| m.0);
        match t.probe_last_paged(index, &run.0, seen.id, known, &mut seen.page, is_it, read)? {
            Paged::Found(f) => f,
            Paged::Known => mine,
        }
    } else {
        t.probe_last(index, run.datum(), pg_sys::F_UUID_EQ, seen.id, read)?
    };
    saw_step(run, |s| {
        s.page = seen.page;
        if let Some((id, _)) = found {
            s.id = Some(id);
        }
    });
    Ok(found.map(|(_, hash)| hash))
}

/// A run whose row holds no hash chain: written around the triggers.
fn unchained(run: &Uuid) -> Error {
    Error::new(
        NOT_IN_PREREQUISITE_STATE,
        format!("run {run} has no hash chain"),
    )
    .detail("Its row was written without the database's triggers (in replica mode, or loaded from a release without chains), so its steps cannot be chained.")
    .hint("pg_labels.verify(run) reports it; open a new run for new steps.")
}

/// Where runs were found (see [`lock_run`]).
struct RunPlaces {
    generation: u64,
    table: Oid,
    places: BTreeMap<Uuid, Tid>,
}
static RUN_PLACES: BackendLocal<RunPlaces> = BackendLocal::new(RunPlaces {
    generation: 0,
    table: Oid::INVALID,
    places: BTreeMap::new(),
});
/// The versions of runs this transaction wrote last (see [`LockedRun::advance`]).
struct Written {
    xid: pg_sys::TransactionId,
    table: Oid,
    places: BTreeMap<Uuid, Tid>,
}
static WRITTEN: BackendLocal<Written> = BackendLocal::new(Written {
    xid: pg_sys::InvalidTransactionId,
    table: Oid::INVALID,
    places: BTreeMap::new(),
});

/// How many runs' places a backend keeps.
const RUN_PLACES_KEPT: usize = 8192;

/// A tool's catalog entry.
#[derive(Clone, Copy)]
pub struct Tool {
    /// `None` when the catalog holds an effect this version does not know (never: a CHECK
    /// constraint keeps the four).
    pub effect: Option<Effect>,
    pub trusted_output: bool,
}

static TOOL_COLUMNS: Columns<2> =
    Columns::new([col::<String>(c"effect"), col::<bool>(c"trusted_output")]);

/// Tools found in the catalog, kept by this backend until the catalog changes: every change
/// to a tool fires `tools_change()` (enabled ALWAYS, so in replica mode too), which sends a
/// relation cache invalidation for `pg_labels.tools`; a decision takes its lock on the catalog
/// first, and taking a lock reads the invalidations committed until then. A tool absent from
/// the catalog is not kept (a new tool counts at once). Entries hold while the count of
/// invalidations seen stays the same (a catalog dropped and created again, another relation,
/// counts as one).
struct ToolCache {
    generation: u64,
    entries: HashMap<String, Tool>,
}
static TOOL_CACHE: BackendLocal<Option<ToolCache>> = BackendLocal::new(None);
/// Invalidations of the tool catalog (or of every relation) seen by this backend.
static TOOLS_GENERATION: AtomicU64 = AtomicU64::new(0);
static TOOLS_RELID: AtomicU32 = AtomicU32::new(0);
static TOOLS_CALLBACK: AtomicBool = AtomicBool::new(false);

/// A relation cache invalidation: one of the tool catalog, or of every relation, ends what
/// this backend kept.
///
/// # Safety
///
/// Called by PostgreSQL while it reads invalidations, with any relation's OID: it only bumps
/// a counter (no allocation, no error).
unsafe extern "C-unwind" fn tools_invalidated(_arg: Datum, relid: Oid) {
    let tools = TOOLS_RELID.load(Ordering::Relaxed);
    if relid == Oid::INVALID || u32::from(relid) == tools {
        TOOLS_GENERATION.fetch_add(1, Ordering::Relaxed);
    }
}

/// A tool's entry as this backend keeps it, if it was kept under `generation`.
fn kept_tool(generation: u64, name: &str) -> Option<Tool> {
    TOOL_CACHE.with(|c| {
        c.as_ref()
            .filter(|c| c.generation == generation)
            .and_then(|c| c.entries.get(name).copied())
    })
}

/// The catalog entry of a tool as committed now, `None` when the catalog does not list it.
/// Holds `ROW SHARE` on the catalog until the transaction ends (see the module's header).
pub fn tool(namespace: Oid, name: &str) -> Result<Option<Tool>> {
    // The catalog locked by this transaction already (the next step of a bulk write, or of the
    // transaction): taking the lock again would read no invalidation, so the entry kept is
    // read without opening the table.
    let rels = RELS.get();
    if rels.namespace == namespace
        && rels.tools != Oid::INVALID
        && TOOLS_RELID.load(Ordering::Relaxed) == u32::from(rels.tools)
        && citus::SHARD.current().is_none()
        && crate::pg::compat::relation_locked_by_me(rels.tools, &[pg_sys::RowShareLock])
    {
        let generation = TOOLS_GENERATION.load(Ordering::Relaxed);
        if let Some(t) = kept_tool(generation, name) {
            return Ok(Some(t));
        }
    }
    // the lock first: it reads the invalidations of changes committed before it was granted
    let (rel, pkey) = open(namespace, c"tools", pg_sys::RowShareLock)?;
    let relid = rel.oid();
    if !TOOLS_CALLBACK.swap(true, Ordering::Relaxed) {
        // SAFETY: registers a plain function, once per backend.
        unsafe {
            pg_sys::CacheRegisterRelcacheCallback(Some(tools_invalidated), Datum::from(0usize))
        };
    }
    if TOOLS_RELID.swap(u32::from(relid), Ordering::Relaxed) != u32::from(relid) {
        TOOLS_GENERATION.fetch_add(1, Ordering::Relaxed);
    }
    let generation = TOOLS_GENERATION.load(Ordering::Relaxed);
    if let Some(t) = kept_tool(generation, name) {
        return Ok(Some(t));
    }
    let [c_effect, c_trusted] = rel.columns(&TOOL_COLUMNS)?;
    let key = crate::pg::datum::text_datum(name)?;
    let found = rel.probe(pkey, key, pg_sys::F_TEXTEQ, true, |found| {
        Ok(Tool {
            effect: found
                .get::<String>(c_effect)?
                .as_deref()
                .and_then(Effect::parse),
            trusted_output: found.get::<bool>(c_trusted)?.unwrap_or(false),
        })
    })?;
    if let Some(t) = found {
        // kept only if no invalidation arrived while the catalog was read
        if TOOLS_GENERATION.load(Ordering::Relaxed) == generation {
            TOOL_CACHE.with(|c| {
                let kept = match c {
                    Some(k) if k.generation == generation => k,
                    other => other.insert(ToolCache {
                        generation,
                        entries: HashMap::new(),
                    }),
                };
                if kept.entries.len() < TOOLS_KEPT {
                    kept.entries.insert(name.to_owned(), t);
                }
            });
        }
    }
    Ok(found)
}

/// How many tools a backend keeps.
const TOOLS_KEPT: usize = 1024;

/// `BEFORE UPDATE OR DELETE FOR EACH STATEMENT` on `pg_labels.tools`.
const TOOLS_CHANGE: Spec = Spec {
    function: "pg_labels.tools_change()",
    tables: &["tools"],
    timing: Timing::Before,
    row: false,
    ops: &[Op::Update, Op::Delete],
};

sql_function! {
    /// A change to the tool catalog waits for the decisions in flight (module header).
    fn pgl_tools_change(call) {
        let trigger = Trigger::fired(&call, &TOOLS_CHANGE)?;
        // the lock is kept to the end of the transaction (Table's drop keeps it)
        Table::open(trigger.relid(), pg_sys::ExclusiveLock)?;
        // every backend forgets the tools it kept once this change commits (and this one at
        // the end of the statement)
        // SAFETY: queues an invalidation message for a relation that exists (it fired us).
        unsafe { pg_sys::CacheInvalidateRelcacheByRelid(trigger.relid()) };
        Ok(Datum::from(0usize))
    }
}

// nextval(regclass) itself, a V1 function (pgrx binds it without the C calling convention).
unsafe extern "C-unwind" {
    fn nextval_oid(fcinfo: pg_sys::FunctionCallInfo) -> Datum;
}

/// On a Citus node, ids are taken from the node's own range, as Citus does for the sequences
/// of distributed tables: from its group id times 2^48 (the coordinator, group 0, from 1), so
/// that two nodes never hand out the same id. Checked once per backend and sequence.
static NODE_RANGE: crate::pg::spi::SavedPlan = crate::pg::spi::SavedPlan::new(
    c"SELECT pg_catalog.setval($1, g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48, true)
        FROM pg_catalog.pg_dist_local_group g
       WHERE g.groupid OPERATOR(pg_catalog.>) 0
         AND COALESCE(pg_catalog.pg_sequence_last_value($1), 0)
             OPERATOR(pg_catalog.<) (g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48)",
);

/// On a Citus cluster a run's steps are on one shard, which moves from node to node as a
/// whole: their ids come from a sequence of that shard (`steps_id_seq_<shard id>`, made on the
/// node that holds it when first needed) over the shard's own range (its id times 2^32, so no
/// two shards share an id), and moved to just past the highest id the shard holds when it
/// arrives. Ids then follow each run's decisions wherever its shard is. Checked once per backend
/// and shard while no relation changes (a shard arriving is a new relation).
static SHARD_SEQUENCE: crate::pg::spi::SavedPlan =
    crate::pg::spi::SavedPlan::new(c"SELECT pg_labels.shard_sequence($1, $2)::pg_catalog.oid");

fn shard_sequence(namespace: Oid, shard: i64, owner: Oid) -> Result<Oid> {
    static KEPT: BackendLocal<(u64, Vec<(i64, Oid)>)> = BackendLocal::new((0, Vec::new()));
    let generation = crate::pg::inval::generation();
    let kept = KEPT.with(|(g, v)| {
        if *g != generation {
            *g = generation;
            v.clear();
        }
        v.iter().find(|(s, _)| *s == shard).map(|e| e.1)
    });
    if let Some(seq) = kept {
        return Ok(seq);
    }
    let trail = citus::local_name(namespace, shard, "steps")?.ok_or_else(|| missing("steps"))?;
    let trail = relation_named(namespace, &trail);
    let seq = crate::pg::spi::as_owner(owner, || {
        crate::pg::spi::with_spi(|spi| {
            let rows = SHARD_SEQUENCE.execute(
                spi,
                &[pg_sys::INT8OID, pg_sys::REGCLASSOID],
                &[Some(Datum::from(shard)), Some(Datum::from(trail))],
                false,
                1,
            )?;
            rows.must::<Oid>(0, 1)
        })
    })?;
    // (creating the sequence sent an invalidation: kept under the generation after it)
    let generation = crate::pg::inval::generation();
    KEPT.with(|(g, v)| {
        if *g != generation {
            *g = generation;
            v.clear();
        }
        v.push((shard, seq));
    });
    Ok(seq)
}

fn node_range(seq: Oid, owner: Oid) -> Result<()> {
    static CHECKED: BackendLocal<Vec<Oid>> = BackendLocal::new(Vec::new());
    if CHECKED.with(|c| c.contains(&seq)) {
        return Ok(());
    }
    crate::pg::spi::as_owner(owner, || {
        crate::pg::spi::with_spi(|spi| {
            NODE_RANGE.execute(
                spi,
                &[pg_sys::REGCLASSOID],
                &[Some(Datum::from(seq))],
                false,
                0,
            )?;
            Ok(())
        })
    })?;
    CHECKED.with(|c| c.push(seq));
    Ok(())
}

/// The next value of a sequence of the platform schema, taken as `owner` (the owner of the
/// platform table whose trigger asks).
pub fn next_id(namespace: Oid, sequence: &'static CStr, owner: Oid) -> Result<i64> {
    next_id_where(namespace, sequence, owner, false)
}

/// [`next_id`], from this node's range when `on_node` (a column default on a Citus cluster,
/// evaluated on the node the statement entered).
pub fn next_id_where(
    namespace: Oid,
    sequence: &'static CStr,
    owner: Oid,
    on_node: bool,
) -> Result<i64> {
    // found by name once while no relation changes (a sequence dropped, renamed or created
    // sends an invalidation)
    static SEQUENCES: BackendLocal<(u64, Vec<(Oid, &'static CStr, Oid)>)> =
        BackendLocal::new((0, Vec::new()));
    let generation = crate::pg::inval::generation();
    let kept = SEQUENCES.with(|(g, v)| {
        if *g != generation {
            *g = generation;
            v.clear();
        }
        v.iter()
            .find(|(ns, name, _)| *ns == namespace && *name == sequence)
            .map(|e| e.2)
    });
    let seq = match kept {
        Some(oid) => oid,
        None => {
            let oid = relation(namespace, sequence);
            if oid != Oid::INVALID {
                SEQUENCES.with(|(_, v)| v.push((namespace, sequence, oid)));
            }
            oid
        }
    };
    if seq == Oid::INVALID {
        return Err(missing(&sequence.to_string_lossy()));
    }
    let seq = match citus::SHARD.current() {
        // a step on a Citus shard: its shard's own sequence (see shard_sequence)
        Some(shard) if sequence == c"steps_id_seq" => shard_sequence(namespace, shard, owner)?,
        Some(_) => {
            node_range(seq, owner)?;
            seq
        }
        None if on_node => {
            node_range(seq, owner)?;
            seq
        }
        None => seq,
    };
    crate::pg::spi::as_owner(owner, || {
        // SAFETY: nextval_oid is a V1 function of one oid argument; the guard of pg_sys turns
        // its errors (sequence exhausted) into ours.
        let d = unsafe {
            pg_sys::DirectFunctionCall1Coll(Some(nextval_oid), Oid::INVALID, Datum::from(seq))
        };
        Ok(d.value() as i64)
    })
}

/// The time a step is written at: the transaction's start (what `now()`, the column's default,
/// gives). The time partitions the trail, so it is the database's, never the writer's.
pub fn trail_time() -> Timestamp {
    // SAFETY: reads the transaction's start time.
    Timestamp(unsafe { pg_sys::GetCurrentTransactionStartTimestamp() })
}

/// A platform table by name: on a Citus shard (see [`citus::SHARD`]) the relation next to it
/// that holds the table's rows, otherwise (or when Citus does not manage the table) the table.
fn open_next_to_shard(namespace: Oid, table: &str, lock: u32) -> Result<Table> {
    let local = match citus::SHARD.current() {
        Some(shard) => citus::local_name(namespace, shard, table)?,
        None => None,
    };
    let name = local.as_deref().unwrap_or(table);
    let c = std::ffi::CString::new(name).map_err(|_| missing(name))?;
    Table::open(relation(namespace, &c), lock)?
        .filter(|t| t.is(&c, namespace))
        .ok_or_else(|| missing(name))
}

/// On a Citus shard, is this write the tables' owner's? The functions that act for a role
/// (`authorize_crossing()`, `revoke_crossing()`, `decide_approval()`) write as the owner on the
/// node the statement entered and name that role in the row; a shard's trigger on another node
/// takes such a row from the owner only.
pub fn owner_on_shard(owner: Oid) -> bool {
    on_shard() && crate::pg::spi::current_user() == owner
}

static LABELS_COLUMN: Columns<1> = Columns::new([col::<LabelSetBufCol>(c"labels")]);

/// The labels stored in a row of `runs` or `artifacts` (by id), as the statement's snapshot
/// sees it, read directly (no row-level security: for the policies' own checks). On a Citus
/// shard (see [`citus::SHARD`]) the table next to it is read.
pub fn labels_of(namespace: Oid, table: &'static str, id: &Uuid) -> Result<Option<Vec<u8>>> {
    let rel = open_next_to_shard(namespace, table, pg_sys::AccessShareLock)?;
    let [c_labels] = rel.columns(&LABELS_COLUMN)?;
    let pkey = rel.primary_key();
    let found = rel.probe(pkey, id.datum(), pg_sys::F_UUID_EQ, false, |found| {
        Ok(found
            .get::<LabelSetCol<'_>>(c_labels)?
            .map(|l| l.body().to_vec())
            .unwrap_or_default())
    })?;
    Ok(found)
}

/// On a Citus node, where a trigger on a copy of a reference table runs on every node: the
/// place of a run's row if this node holds it (raise it around the run's lookups: what the
/// run decides is decided here), `None` if another node does, which decides it there.
pub enum RunPlace {
    /// not on Citus: the run is read as on one node
    Single,
    /// this node holds the run's shard
    Here(crate::pg::local::Guard<i64>),
    /// another node does
    Elsewhere,
}

pub fn run_place(namespace: Oid, run: &Uuid) -> Result<RunPlace> {
    if !on_shard() {
        return Ok(RunPlace::Single);
    }
    let Some(shard) = citus::shard_for_uuid(namespace, "runs", run.datum())? else {
        return Ok(RunPlace::Single);
    };
    Ok(match citus::local_name(namespace, shard, "runs")? {
        Some(_) => RunPlace::Here(citus::SHARD.enter(shard)),
        None => RunPlace::Elsewhere,
    })
}

/// Is the running trigger on a Citus shard? A row's time was then filled where the statement
/// entered the cluster (Citus evaluates `now()` there), which the trigger cannot tell from a
/// writer's: it writes the time itself instead of checking it (README, "Scaling out with
/// Citus").
pub fn on_shard() -> bool {
    citus::SHARD.current().is_some()
}

/// Refuse a writer's value for the trail's id, time or writer.
pub fn refuse_given(table: &'static str, column: &str, why: &str) -> Error {
    pg_labels_core::refusal::written_by_database(table, column, why).into()
}

/// Is this session restoring a dump? A superuser session, acting as itself, with `row_security`
/// off, as pg_dump's output and pg_restore run: the triggers then take every row as it was
/// decided when it was first written (history is not decided again, and the tables load in
/// any order). No other session can be taken as restoring: not one whose current user is a
/// superuser only for the time of a `SECURITY DEFINER` function or of a statement the
/// extension runs as the tables' owner (a function writing as the owner for its caller always
/// gets the full checks, whatever the caller set); and no other role at all: a writer's id,
/// time, decision or actor is refused as always.
pub fn restoring() -> bool {
    !crate::pg::spi::row_security_on() && crate::pg::spi::superuser_session()
}
