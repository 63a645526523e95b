//! What this backend keeps of runs, across statements and transactions: where each run's row
//! was found last ([`RUN_PLACES`]), the versions of runs this transaction wrote last
//! ([`WRITTEN`]), and the decoded labels of runs that keep them out of line ([`BIG_RUNS`]).

use super::RunLabels;
use crate::pg::datum::Uuid;
use crate::pg::error::Result;
use crate::pg::fmgr::external_id;
use crate::pg::heap::{Found, Table, Tid};
use crate::pg::local::{BackendLocal, Recent};
use crate::pg::sys::Oid;
use pg_labels_core::LabelSet as LabelSetCol;
use std::rc::Rc;

/// Decoded labels of runs that keep them out of line: ((TOAST relation, value id), run, scope).
type CacheEntry = ((Oid, Oid), Uuid, Vec<u8>, Rc<RunLabels>);
static BIG_RUNS: BackendLocal<Vec<CacheEntry>> = BackendLocal::new(Vec::new());
/// How many big runs a backend keeps decoded.
const BIG_RUNS_KEPT: usize = 4;

/// The run's latest version, handed to `f` (the places kept are tried first).
pub(super) fn fetch_run<T>(
    rel: &Table,
    pkey: Oid,
    c_id: i32,
    run: &Uuid,
    f: impl FnOnce(&Found<'_>) -> Result<T>,
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
    let xid = crate::pg::xact::top_xid();
    let written = WRITTEN.with(|w| {
        (xid != crate::pg::sys::InvalidTransactionId && w.xid == xid && w.table == rel.oid())
            .then(|| w.places.get(run).copied())
            .flatten()
    });
    let result = rel.probe_hinted(
        pkey,
        run.datum(),
        crate::pg::sys::funcs::F_UUID_EQ,
        written,
        &mut hint,
        |found| Ok(found.get::<Uuid>(c_id)?.as_ref() == Some(run)),
        f,
    )?;
    if let Some(place) = hint {
        RUN_PLACES.with(|p| p.places.insert(*run, place));
    }
    Ok(result)
}

/// Where runs were found (see [`super::lock_run`]).
struct RunPlaces {
    generation: u64,
    table: Oid,
    places: Recent<Uuid, Tid>,
}
static RUN_PLACES: BackendLocal<RunPlaces> = BackendLocal::new(RunPlaces {
    generation: 0,
    table: Oid::INVALID,
    places: Recent::new(RUN_PLACES_KEPT),
});
/// The versions of runs this transaction wrote last (see [`super::LockedRun::advance`]).
struct Written {
    xid: crate::pg::sys::TransactionId,
    table: Oid,
    places: Recent<Uuid, Tid>,
}
static WRITTEN: BackendLocal<Written> = BackendLocal::new(Written {
    xid: crate::pg::sys::InvalidTransactionId,
    table: Oid::INVALID,
    places: Recent::new(RUN_PLACES_KEPT),
});

/// How many runs' places a backend keeps (at least; see [`Recent`]): more than the active
/// runs of a busy platform (issue 38 measures 10,000), so that a backend going round them all
/// finds each where it found it last.
const RUN_PLACES_KEPT: usize = 16384;

/// The labels of the run `run` (in `scope`) whose row `found` holds in column `c_labels`,
/// decoded: from [`BIG_RUNS`] when they are out of line and decoded already.
#[inline]
pub(super) fn labels(
    found: &Found<'_>,
    c_labels: i32,
    run: &Uuid,
    scope: &[u8],
) -> Result<Rc<RunLabels>> {
    let raw = found.raw(c_labels);
    // SAFETY: the labels column is a labelset (a varlena), checked by super::RUN_COLUMNS.
    let id = raw.and_then(|d| unsafe { external_id(d.cast_mut_ptr()) });
    let labels = match id {
        Some(id) => match BIG_RUNS.with(|c| {
            c.iter()
                .find(|(k, r, s, _)| *k == id && r == run && s[..] == *scope)
                .map(|e| e.3.clone())
        }) {
            Some(hit) => hit,
            None => {
                let body = found
                    .get::<LabelSetCol<'_>>(c_labels)?
                    .map(|l| l.body().to_vec())
                    .unwrap_or_default();
                let decoded = Rc::new(RunLabels::new(body, scope));
                BIG_RUNS.with(|c| {
                    if c.len() >= BIG_RUNS_KEPT {
                        c.remove(0);
                    }
                    c.push((id, *run, scope.to_vec(), decoded.clone()));
                });
                decoded
            }
        },
        None => {
            let body = found
                .get::<LabelSetCol<'_>>(c_labels)?
                .map(|l| l.body().to_vec())
                .unwrap_or_default();
            Rc::new(RunLabels::new(body, scope))
        }
    };
    Ok(labels)
}

/// Remember the version `place` of `run` this transaction wrote in `table`: the next step of
/// this run in this transaction (a bulk write) starts there rather than walking the versions
/// this transaction left behind.
#[inline]
pub(super) fn wrote(table: Oid, run: &Uuid, place: Tid) {
    let xid = crate::pg::xact::top_xid();
    WRITTEN.with(|w| {
        if w.xid != xid || w.table != table {
            w.xid = xid;
            w.table = table;
            w.places.clear();
        }
        w.places.insert(*run, place);
    });
}
