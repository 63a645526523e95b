//! What this transaction knows of the runs it locked ([`KEPT`]), as its own steps left them: a
//! step of a run this transaction locked already reads nothing again, and the runs table is
//! not even opened unless the step writes the run's row.

use super::{ChainState, LockedRun, RunLabels, RUN_LOCKS};
use crate::pg::datum::Uuid;
use crate::pg::local::{BackendLocal, IdMap};
use crate::pg::sys::Oid;
use crate::platform::chain_head;
use crate::platform::relations::RELS;
use pg_labels_core::chain;
use std::rc::Rc;

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
    /// The chain's columns, and `carried_scope` (none before release 0.3.1).
    chain_columns: ([i32; 2], Option<i32>),
    runs: IdMap<Uuid, KeptRun>,
}
pub(super) struct KeptRun {
    pub(super) scope: Vec<u8>,
    pub(super) labels: Rc<RunLabels>,
    pub(super) head: chain::Hash,
    pub(super) slot: Option<i16>,
    /// The id of the last step this transaction wrote to it (`head` is its hash).
    pub(super) last: Option<i64>,
}
static KEPT: BackendLocal<Option<Kept>> = BackendLocal::new(None);
/// How many runs a transaction keeps (a bulk write over more reads the others again).
const KEPT_RUNS: usize = 65536;

/// Forget what this transaction knew of its runs (see [`KEPT`]).
pub fn forget_runs() {
    KEPT.with(|k| *k = None);
}

/// Keep a run this transaction has just locked, read from `table` (with its primary key,
/// columns and chain columns) while the invalidation generation was `generation`.
pub(super) fn remember(
    generation: u64,
    table: Oid,
    pkey: Oid,
    columns: [i32; 3],
    chain_columns: ([i32; 2], Option<i32>),
    run: &Uuid,
    kept: KeptRun,
) {
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
        k.runs.insert(*run, kept);
    });
}

/// Change what this transaction keeps of a run, if it keeps it.
pub(super) fn keep(table: Oid, run: &Uuid, f: impl FnOnce(&mut KeptRun)) {
    KEPT.with(|k| {
        if let Some(k) = k.as_mut().filter(|k| k.table == table) {
            if let Some(r) = k.runs.get_mut(run) {
                f(r);
            }
        }
    });
}

/// A run this transaction locked already, as its steps left it ([`KEPT`]), without opening the
/// runs table: the transaction holds it locked (`ROW EXCLUSIVE`) since it read the run, and no
/// relation changed since.
pub(super) fn kept_run(namespace: Oid, run: &Uuid) -> Option<LockedRun> {
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
    if !crate::pg::compat::relation_locked_by_me(
        rels.runs,
        &[crate::pg::sys::locks::RowExclusiveLock],
    ) {
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
            columns: chain_columns.0,
            carried: chain_columns.1,
        }),
        table: None,
        table_oid: rels.runs,
        namespace,
        pkey,
        held: None,
        columns,
    })
}

/// The end of the transaction: what it knew of its runs, and how many it locked. When it
/// committed, the last step it wrote to each run it kept is remembered (see [`chain_head::committed`]).
pub fn end_of_transaction(committed: bool) {
    if committed {
        let generation = crate::pg::inval::generation();
        if let Some(kept) = KEPT
            .with(|k| k.take())
            .filter(|k| k.generation == generation)
        {
            for (run, r) in kept.runs {
                if let Some(id) = r.last {
                    chain_head::committed(&run, generation, id, r.head);
                }
            }
        }
    }
    forget_runs();
    RUN_LOCKS.set(0);
}
