//! Finding and locking a run: the run a step (or an artifact, a share) is decided on, locked by
//! its primary key, and the one write of its row a step makes ([`LockedRun::advance`]). No SPI
//! on this path.
//!
//! Locking a run is what `SELECT ... FOR NO KEY UPDATE` does, except that the latest version is
//! always followed: whatever the isolation level, a step is judged with the labels the last
//! committed step left. A run that carries many labels keeps them out of line (TOAST); its
//! decoded labels are cached per backend under the TOAST value's identity, which changes
//! whenever the labels do, so a step that adds nothing costs the same for a run of ten labels
//! as for one of a hundred thousand.
//!
//! - [`kept`]: what this transaction knows of the runs it locked, as its steps left them;
//! - [`cache`]: what this backend keeps of runs across transactions: where each was found,
//!   the versions this transaction wrote, the decoded labels of big runs.
//!
//! The run's chain head, read from the trail's index pages, is [`crate::platform::chain_head`].

mod cache;
mod kept;

pub use kept::{end_of_transaction, forget_runs};

use crate::pg::citus;
use crate::pg::columns::{col, Columns};
use crate::pg::datum::{Bytea, Uuid};
use crate::pg::error::{Error, Result};
use crate::pg::heap::{Held, RowLock, Table};
use crate::pg::local::BackendLocal;
use crate::pg::lock::ObjectLock;
use crate::pg::sys::{Datum, Oid};
use crate::platform::chain_head::{last_step, unchained};
use crate::platform::context::on_shard;
use crate::platform::relations::open;
use crate::types::datum::ScopeBuf;
use cache::fetch_run;
use kept::{keep, kept_run, KeptRun};
use pg_labels_core::barrier::Summary;
use pg_labels_core::chain;
use pg_labels_core::labelset::{self, LabelSet};
use std::rc::Rc;

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
    /// already ([`kept`]: then opened only if the step writes the run's row).
    table: Option<Table>,
    table_oid: Oid,
    namespace: Oid,
    pkey: Oid,
    /// The version read (`None`: the run was known to this transaction already, see [`kept`]).
    held: Option<Held>,
    columns: [i32; 3],
}

/// Where a run's hash chain stands: its head (the hash of its last step) and its row's
/// checkpoint's partition (`chain_slot`).
pub struct ChainState {
    pub head: chain::Hash,
    pub slot: Option<i16>,
    columns: [i32; 2],
    /// The column `carried_scope` (none before release 0.3.1): where the run can be read,
    /// written with its labels.
    carried: Option<i32>,
}

/// Where a run can be read (`carried_scope`, release 0.3.1): the deepest scope that can carry
/// its labels, written with them.
pub static CARRIED: Columns<1> = Columns::new([col::<ScopeBuf>(c"carried_scope")]);

/// A run's chain columns.
static CHAIN_COLUMNS: Columns<2> =
    Columns::new([col::<Bytea>(c"chain_head"), col::<i16>(c"chain_slot")]);

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
                opened = open(
                    self.namespace,
                    c"runs",
                    crate::pg::sys::locks::RowExclusiveLock,
                )?
                .0;
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
            // where the run can be read, with what it carries
            if let Some(column) = c.carried {
                let scope = LabelSet::from_canonical(labels).scope();
                changes.push((
                    column,
                    scope.map(crate::types::datum::scope_datum).transpose()?,
                ));
            }
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
            cache::wrote(table.oid(), &self.run, place);
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
pub(super) fn changed_concurrently() -> Error {
    Error::new(
        crate::pg::error::SERIALIZATION_FAILURE,
        "could not serialize access to a run being changed concurrently",
    )
}

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

fn find_run(namespace: Oid, run: &Uuid, lock: bool) -> Result<Option<LockedRun>> {
    let shard = on_shard();
    if lock && !shard {
        if let Some(kept) = kept_run(namespace, run) {
            return Ok(Some(kept));
        }
    }
    // a step may write the run row
    let (rel, pkey) = open(namespace, c"runs", crate::pg::sys::locks::RowExclusiveLock)?;
    let columns = rel.columns(&RUN_COLUMNS)?;
    let [c_id, c_scope, c_labels] = columns;
    let chain_columns = rel.columns(&CHAIN_COLUMNS).ok();
    let carried_column = rel.columns(&CARRIED).ok().map(|[c]| c);
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
            object.acquire(crate::pg::sys::locks::ExclusiveLock)?;
            RUN_LOCKS.set(RUN_LOCKS.get() + 1);
        }
        RunLock::Row => object.acquire(crate::pg::sys::locks::ShareLock)?,
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
        let labels = cache::labels(found, c_labels, run, &scope)?;
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
                    carried: carried_column,
                })
            }
            None => None,
        };
        Ok((scope, labels, chain, found.hold(), locked))
    })?;
    if let RunLock::Row = how {
        // the row lock holds it now
        object.release(crate::pg::sys::locks::ShareLock);
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
        kept::remember(
            generation,
            table,
            pkey,
            columns,
            (chain_columns, c.carried),
            run,
            KeptRun {
                scope: scope.clone(),
                labels: labels.clone(),
                head,
                slot,
                last: None,
            },
        );
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
