//! A run's chain head: the hash of its last step, read under the run's lock. The run's row
//! keeps a checkpoint (`chain_head`) and the partition of the trail's ring that holds every step
//! after it (`chain_slot`); the head is the run's greatest entry in that partition's
//! `(run_id, id)` index, read from the index's pages ([`Table::probe_last_paged`], from the leaf
//! page where this backend found the run last time), or PostgreSQL's backward index scan when
//! the pages prove nothing ([`Table::probe_last`]); the step this backend itself wrote last in a
//! transaction that committed, while no relation changed since, is known without reading its
//! row ([`SEEN_STEPS`]). No SPI on this path.

use crate::pg::columns::{col, Columns};
use crate::pg::datum::{Bytea, Uuid};
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::heap::{PageHint, Paged, Table};
use crate::pg::local::{BackendLocal, Recent};
use crate::pg::sys::Oid;
use crate::platform::relations::{missing, relation};
use pg_labels_core::chain;

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
static SEEN_STEPS: BackendLocal<Recent<Uuid, Seen>> =
    BackendLocal::new(Recent::new(SEEN_STEPS_KEPT));
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
/// How many runs a backend remembers a step of (at least; see [`Recent`]).
const SEEN_STEPS_KEPT: usize = 32768;

/// Remember what was seen of `run`'s steps (see [`SEEN_STEPS`]).
fn saw_step(run: &Uuid, f: impl FnOnce(&mut Seen)) {
    SEEN_STEPS.with(|s| f(s.entry(*run)));
}

/// A step this backend wrote to `run` in a transaction that committed: its id and hash, under
/// the invalidation generation `generation` (see [`Seen::mine`]).
#[inline]
pub(super) fn committed(run: &Uuid, generation: u64, id: i64, head: chain::Hash) {
    saw_step(run, |s| {
        s.id = Some(id);
        s.mine = Some((generation, id, head));
    });
}

/// The hash of the run's last step in ring partition `slot` (`None`: it has none there),
/// as this transaction sees the trail now, under the run's lock.
pub(super) fn last_step(namespace: Oid, slot: i16, run: &Uuid) -> Result<Option<chain::Hash>> {
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
            let Some(t) = Table::open(
                relation(namespace, &name),
                crate::pg::sys::locks::AccessShareLock,
            )?
            else {
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
    let mut seen = SEEN_STEPS.with(|s| s.get(run).copied()).unwrap_or_default();
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
        t.probe_last(
            index,
            run.datum(),
            crate::pg::sys::funcs::F_UUID_EQ,
            seen.id,
            read,
        )?
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
pub(super) fn unchained(run: &Uuid) -> Error {
    Error::new(
        NOT_IN_PREREQUISITE_STATE,
        format!("run {run} has no hash chain"),
    )
    .detail("Its row was written without the database's triggers (in replica mode, or loaded from a release without chains), so its steps cannot be chained.")
    .hint("pg_labels.verify(run) reports it; open a new run for new steps.")
}
