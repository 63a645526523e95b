//! Provenance: `pg_labels.lineage(run)`, every upstream run reached through context reads.
//!
//! A breadth-first walk: one statement per level reads the `context_read` steps of all the runs
//! of that level (`run_id = ANY ($1)`, served by `steps_context_read_idx`), and a run is
//! expanded once, at its shortest depth, so cycles (two runs reading each other's artifacts)
//! end the walk. The statements run as the caller: row-level security decides what lineage an
//! analyst sees.

use crate::error::Error;
use crate::fmgr::{arg, arg_is_null};
use crate::spi::{result_datum, with_spi, SavedPlan};
use crate::sql_function;
use pgrx::pg_sys::{self, Datum};
use std::collections::HashSet;

static READS_OF: SavedPlan = SavedPlan::new(
    c"SELECT s.origin_run, r.scope, r.agent, s.artifact_id, s.digest, s.labels, s.run_id, s.id, s.created_at
        FROM pg_labels.steps s LEFT JOIN pg_labels.runs r ON r.id = s.origin_run
       WHERE s.kind = 'context_read' AND s.run_id = ANY ($1)
       ORDER BY s.run_id, s.id",
);

/// Columns of a lineage row after `depth`, as READS_OF returns them.
const COLUMNS: usize = 9;

unsafe fn uuid_array(ids: &[[u8; 16]]) -> Datum {
    unsafe {
        let mut elems: Vec<Datum> = ids.iter().map(crate::sharing::uuid_datum).collect();
        let a = pg_sys::construct_array(
            elems.as_mut_ptr(),
            elems.len() as i32,
            pg_sys::UUIDOID,
            16,
            false,
            pg_sys::TYPALIGN_CHAR as std::ffi::c_char,
        );
        Datum::from(a)
    }
}

unsafe fn uuid_bytes(d: Datum) -> [u8; 16] {
    let mut u = [0u8; 16];
    unsafe { std::ptr::copy_nonoverlapping(d.cast_mut_ptr::<u8>() as *const u8, u.as_mut_ptr(), 16) };
    u
}

sql_function! {
    /// `pg_labels.lineage(run uuid) → TABLE (depth, run_id, scope, agent, artifact_id, digest,
    /// labels, read_by, read_step, read_at)`
    fn pgl_lineage(fc) {
        if arg_is_null(fc, 0) {
            return crate::fmgr::ret_null(fc);
        }
        let start = uuid_bytes(arg(fc, 0));
        let rsinfo = (*fc).resultinfo as *mut pg_sys::ReturnSetInfo;
        if rsinfo.is_null() || (*rsinfo).type_ != pg_sys::NodeTag::T_ReturnSetInfo {
            return Err(Error::new(*b"0A000", "pg_labels.lineage() must be called in a FROM clause"));
        }
        pg_sys::InitMaterializedSRF(fc, pg_sys::MAT_SRF_USE_EXPECTED_DESC);
        let (store, desc) = ((*rsinfo).setResult, (*rsinfo).setDesc);
        if (*desc).natts as usize != COLUMNS + 1 {
            return Err(Error::new(*b"42804", "pg_labels.lineage() returns 10 columns"));
        }
        with_spi(|| {
            let mut seen: HashSet<[u8; 16]> = HashSet::from([start]);
            let mut frontier = vec![start];
            let mut depth: i32 = 0;
            while !frontier.is_empty() {
                depth += 1;
                let n = READS_OF.execute(&[pg_sys::UUIDARRAYOID], &[Some(uuid_array(&frontier))], true, 0)?;
                let mut next = Vec::new();
                for i in 0..n {
                    let mut values = [Datum::from(0usize); COLUMNS + 1];
                    let mut nulls = [true; COLUMNS + 1];
                    values[0] = Datum::from(depth);
                    nulls[0] = false;
                    for c in 0..COLUMNS {
                        if let Some(d) = result_datum(i, c as i32 + 1) {
                            values[c + 1] = d;
                            nulls[c + 1] = false;
                        }
                    }
                    pg_sys::tuplestore_putvalues(store, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
                    if let Some(up) = result_datum(i, 1) {
                        let up = uuid_bytes(up);
                        if seen.insert(up) {
                            next.push(up);
                        }
                    }
                }
                pg_sys::SPI_freetuptable(pg_sys::SPI_tuptable);
                frontier = next;
            }
            Ok(())
        })?;
        Ok(Datum::from(0usize))
    }
}
