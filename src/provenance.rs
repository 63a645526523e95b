//! Provenance: `pg_labels.lineage(run)`, every upstream run reached through context reads.
//!
//! A breadth-first walk: one statement per level reads the `context_read` steps of all the runs
//! of that level (`run_id = ANY ($1)`, served by `steps_context_read_idx`), and a run is
//! expanded once, at its shortest depth, so cycles (two runs reading each other's artifacts)
//! end the walk; one last statement reads the scope and agent of every upstream run. The
//! statements run as the caller: row-level security decides what lineage an analyst sees (a
//! read step it cannot see is not followed; a run it cannot see has no scope or agent).

use crate::error::Error;
use crate::error::FEATURE_NOT_SUPPORTED;
use crate::fmgr::{arg, arg_is_null, datum_labelset, ret_labelset};
use crate::spi::{
    datum_bytes, datum_uuid, result_datum, text_datum, uuid_array_datum, uuid_datum, with_spi,
    SavedPlan, Uuid,
};
use crate::sql_function;
use pgrx::pg_sys::{self, Datum};
use std::collections::{HashMap, HashSet};

static READS_OF: SavedPlan = SavedPlan::new(
    c"SELECT s.origin_run, s.artifact_id, s.digest, s.labels, s.run_id, s.id, s.created_at
        FROM pg_labels.steps s
       WHERE s.kind = 'context_read' AND s.run_id = ANY ($1)",
);

static RUNS: SavedPlan =
    SavedPlan::new(c"SELECT r.id, r.scope, r.agent FROM pg_labels.runs r WHERE r.id = ANY ($1)");

/// The columns `lineage()` returns.
const COLUMNS: usize = 10;

/// An upstream run's scope (datum body) and agent, when the caller can see the run.
type RunFacts = (Option<Vec<u8>>, Option<Vec<u8>>);

/// One context read found by the walk, copied out of SPI's memory.
struct Read {
    depth: i32,
    upstream: Option<Uuid>,
    artifact: Option<Uuid>,
    digest: Option<Vec<u8>>,
    labels: Vec<u8>,
    reader: Uuid,
    step: i64,
    at: i64,
}

sql_function! {
    /// `pg_labels.lineage(run uuid) → TABLE (depth, run_id, scope, agent, artifact_id, digest,
    /// labels, read_by, read_step, read_at)`
    fn pgl_lineage(fc) {
        let rsinfo = (*fc).resultinfo as *mut pg_sys::ReturnSetInfo;
        if rsinfo.is_null() || (*rsinfo).type_ != pg_sys::NodeTag::T_ReturnSetInfo {
            return Err(Error::new(FEATURE_NOT_SUPPORTED, "pg_labels.lineage() must be called in a FROM clause"));
        }
        pg_sys::InitMaterializedSRF(fc, pg_sys::MAT_SRF_USE_EXPECTED_DESC);
        let (store, desc) = ((*rsinfo).setResult, (*rsinfo).setDesc);
        if (*desc).natts as usize != COLUMNS {
            return Err(Error::new(*b"42804", "pg_labels.lineage() returns 10 columns"));
        }
        if arg_is_null(fc, 0) {
            return Ok(Datum::from(0usize));
        }
        let start = datum_uuid(arg(fc, 0));

        // the walk, then the upstream runs' scope and agent
        let mut reads: Vec<Read> = Vec::new();
        let mut runs: HashMap<Uuid, RunFacts> = HashMap::new();
        with_spi(|| {
            let mut seen: HashSet<Uuid> = HashSet::from([start]);
            let mut frontier = vec![start];
            // the start is looked up too: a cycle leads back to it
            let mut upstream_runs = vec![start];
            let mut depth: i32 = 0;
            while !frontier.is_empty() {
                depth += 1;
                let n = READS_OF.execute(&[pg_sys::UUIDARRAYOID], &[Some(uuid_array_datum(&frontier))], true, 0)?;
                let first = reads.len();
                for i in 0..n {
                    let upstream = result_datum(i, 1).map(|d| datum_uuid(d));
                    reads.push(Read {
                        depth,
                        upstream,
                        artifact: result_datum(i, 2).map(|d| datum_uuid(d)),
                        digest: result_datum(i, 3).map(|d| datum_bytes(d).to_vec()),
                        labels: match result_datum(i, 4) {
                            Some(d) => datum_labelset(d)?.body().to_vec(),
                            None => Vec::new(),
                        },
                        reader: result_datum(i, 5).map(|d| datum_uuid(d)).unwrap_or_default(),
                        step: result_datum(i, 6).map(|d| d.value() as i64).unwrap_or_default(),
                        at: result_datum(i, 7).map(|d| d.value() as i64).unwrap_or_default(),
                    });
                }
                pg_sys::SPI_freetuptable(pg_sys::SPI_tuptable);
                reads[first..].sort_by_key(|r| r.step);
                frontier = reads[first..]
                    .iter()
                    .filter_map(|r| r.upstream)
                    .filter(|u| seen.insert(*u))
                    .collect();
                upstream_runs.extend_from_slice(&frontier);
            }
            if upstream_runs.len() > 1 {
                let n = RUNS.execute(&[pg_sys::UUIDARRAYOID], &[Some(uuid_array_datum(&upstream_runs))], true, 0)?;
                for i in 0..n {
                    let Some(id) = result_datum(i, 1) else { continue };
                    let scope = result_datum(i, 2).map(|d| datum_bytes(d).to_vec());
                    let agent = result_datum(i, 3).map(|d| datum_bytes(d).to_vec());
                    runs.insert(datum_uuid(id), (scope, agent));
                }
            }
            Ok(())
        })?;

        for r in &reads {
            let run = r.upstream.and_then(|u| runs.get(&u));
            let cells: [Option<Datum>; COLUMNS] = [
                Some(Datum::from(r.depth)),
                r.upstream.as_ref().map(uuid_datum),
                // the scope datum's bytes are its varlena body (version byte and path)
                run.and_then(|x| x.0.as_deref()).map(crate::fmgr::ret_bytes).transpose()?,
                run.and_then(|x| x.1.as_deref()).map(crate::fmgr::ret_bytes).transpose()?,
                r.artifact.as_ref().map(uuid_datum),
                r.digest.as_deref().map(|d| text_datum(&String::from_utf8_lossy(d))).transpose()?,
                Some(ret_labelset(&r.labels)?),
                Some(uuid_datum(&r.reader)),
                Some(Datum::from(r.step)),
                Some(Datum::from(r.at)),
            ];
            let mut values = cells.map(|c| c.unwrap_or(Datum::from(0usize)));
            let mut nulls = cells.map(|c| c.is_none());
            pg_sys::tuplestore_putvalues(store, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
        }
        Ok(Datum::from(0usize))
    }
}
