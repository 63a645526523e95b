//! The hot path of the steps trigger, without SPI: find a run by its primary key and lock its
//! row, and read a tool's catalog entry, through the index and table access methods directly.
//!
//! Locking the run is what `SELECT ... FOR NO KEY UPDATE` does (`table_tuple_lock` with
//! `LockTupleNoKeyExclusive`, waiting), except that the latest version is always followed:
//! whatever the isolation level, the run is judged with the labels the last committed step left.
//! No executor, plan cache or SPI connection is set up per row.

use crate::error::{Error, Result};
use crate::fmgr::{datum_labelset, datum_scope, varlena_bytes};
use crate::spi::{BackendLocal, Columns};
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

/// The platform relations, found by name next to the trigger's table and cached per backend
/// (checked against the opened relation on every use, so a recreated extension is noticed).
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
        *b"55000",
        format!("pg_labels: relation pg_labels.{what} is missing"),
    )
    .hint("Reinstall the extension: DROP EXTENSION pg_labels; CREATE EXTENSION pg_labels;")
}

unsafe fn lookup(namespace: Oid) -> Result<Rels> {
    unsafe {
        let find = |name: &CStr| pg_sys::get_relname_relid(name.as_ptr(), namespace);
        let pkey = |rel: Oid, what: &str| -> Result<Oid> {
            let r = pg_sys::try_table_open(rel, pg_sys::AccessShareLock as i32);
            if r.is_null() {
                return Err(missing(what));
            }
            let pk = pg_sys::RelationGetPrimaryKeyIndex(r);
            pg_sys::table_close(r, pg_sys::NoLock as i32);
            Ok(pk)
        };
        let runs = find(c"runs");
        let tools = find(c"tools");
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
}

/// Open `oid` if it is still the relation `name` of the namespace.
unsafe fn open_checked(
    oid: Oid,
    name: &CStr,
    namespace: Oid,
    lock: u32,
) -> Option<pg_sys::Relation> {
    unsafe {
        if oid == Oid::INVALID {
            return None;
        }
        let rel = pg_sys::try_table_open(oid, lock as i32);
        if rel.is_null() {
            return None;
        }
        let form = &*(*rel).rd_rel;
        if form.relnamespace == namespace && CStr::from_ptr(form.relname.data.as_ptr()) == name {
            Some(rel)
        } else {
            pg_sys::table_close(rel, lock as i32);
            None
        }
    }
}

/// Open one of the platform tables (and know its primary key), refreshing the cache if needed.
unsafe fn open(namespace: Oid, which: &CStr, lock: u32) -> Result<(pg_sys::Relation, Oid)> {
    unsafe {
        let cached = *RELS.get();
        let pick = |r: &Rels| {
            if which == c"runs" {
                (r.runs, r.runs_pkey)
            } else {
                (r.tools, r.tools_pkey)
            }
        };
        if cached.namespace == namespace {
            let (oid, pk) = pick(&cached);
            if let Some(rel) = open_checked(oid, which, namespace, lock) {
                return Ok((rel, pk));
            }
        }
        let fresh = lookup(namespace)?;
        *RELS.get() = fresh;
        let (oid, pk) = pick(&fresh);
        match open_checked(oid, which, namespace, lock) {
            Some(rel) => Ok((rel, pk)),
            None => Err(missing(&which.to_string_lossy())),
        }
    }
}

static RUN_COLUMNS: Columns<2> = Columns::new([c"scope", c"labels"]);
static TOOL_COLUMNS: Columns<2> = Columns::new([c"effect", c"trusted_output"]);

/// One index probe by equality on the first key column; calls `found` with the slot holding
/// the visible row, if any, and returns what it returns.
/// `latest`: look with a new snapshot rather than the statement's.
unsafe fn probe<T>(
    rel: pg_sys::Relation,
    index: Oid,
    key: Datum,
    eq_proc: u32,
    latest: bool,
    found: impl FnOnce(*mut pg_sys::TupleTableSlot, pg_sys::Snapshot) -> Result<T>,
) -> Result<Option<T>> {
    unsafe {
        let idx = pg_sys::index_open(index, pg_sys::AccessShareLock as i32);
        let snapshot = pg_sys::RegisterSnapshot(if latest {
            pg_sys::GetLatestSnapshot()
        } else {
            pg_sys::GetActiveSnapshot()
        });
        let mut skey = pg_sys::ScanKeyData::default();
        pg_sys::ScanKeyEntryInitialize(
            &mut skey,
            0,
            1,
            pg_sys::BTEqualStrategyNumber as u16,
            Oid::INVALID,
            *(*idx).rd_indcollation,
            Oid::from(eq_proc),
            key,
        );
        let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
        let scan = pg_sys::index_beginscan(rel, idx, snapshot, 1, 0);
        pg_sys::index_rescan(scan, &mut skey, 1, std::ptr::null_mut(), 0);
        let hit =
            pg_sys::index_getnext_slot(scan, pg_sys::ScanDirection::ForwardScanDirection, slot);
        pg_sys::index_endscan(scan);
        let out = if hit {
            Some(found(slot, snapshot))
        } else {
            None
        };
        pg_sys::ExecDropSingleTupleTableSlot(slot);
        pg_sys::UnregisterSnapshot(snapshot);
        pg_sys::index_close(idx, pg_sys::NoLock as i32);
        out.transpose()
    }
}

/// Value of column `n` of a slot.
unsafe fn slot_value(slot: *mut pg_sys::TupleTableSlot, n: usize) -> Option<Datum> {
    unsafe {
        if ((*slot).tts_nvalid as usize) < n {
            pg_sys::slot_getsomeattrs_int(slot, n as i32);
        }
        if *(*slot).tts_isnull.add(n - 1) {
            None
        } else {
            Some(*(*slot).tts_values.add(n - 1))
        }
    }
}

/// A run, locked for this transaction.
pub struct LockedRun {
    pub scope: Vec<u8>,
    pub labels: Vec<u8>,
}

/// Find the run and lock its row until the end of the transaction (`FOR NO KEY UPDATE`),
/// waiting for concurrent writers and following their updates to the latest version.
/// `None` when there is no such run.
pub unsafe fn lock_run(namespace: Oid, run_id: Datum) -> Result<Option<LockedRun>> {
    unsafe {
        let (rel, pkey) = open(namespace, c"runs", pg_sys::RowShareLock)?;
        let [c_scope, c_labels] = RUN_COLUMNS
            .of((*rel).rd_id, (*rel).rd_att)?
            .map(|c| c as usize);
        let run = probe(
            rel,
            pkey,
            run_id,
            pg_sys::F_UUID_EQ,
            true,
            |slot, snapshot| {
                let mut tid = (*slot).tts_tid;
                let mut tmfd = pg_sys::TM_FailureData::default();
                let lock = (*(*rel).rd_tableam)
                    .tuple_lock
                    .ok_or_else(|| missing("runs (table access method)"))?;
                let cid = pg_sys::GetCurrentCommandId(false);
                // waits here for concurrent writers: a cancel, lock timeout or deadlock comes
                // back whole (see crate::catch)
                let (tid_ptr, tmfd_ptr) = (
                    &mut tid as *mut pg_sys::ItemPointerData,
                    &mut tmfd as *mut pg_sys::TM_FailureData,
                );
                let result = crate::catch::catch(|| {
                    lock(
                        rel,
                        tid_ptr,
                        snapshot,
                        slot,
                        cid,
                        pg_sys::LockTupleMode::LockTupleNoKeyExclusive,
                        pg_sys::LockWaitPolicy::LockWaitBlock,
                        pg_sys::TUPLE_LOCK_FLAG_FIND_LAST_VERSION as u8,
                        tmfd_ptr,
                    )
                })?;
                match result {
                    pg_sys::TM_Result::TM_Ok => {}
                    // The run was changed by this very statement (a data-modifying WITH that
                    // updates the run and writes a step): the version at hand may be stale.
                    pg_sys::TM_Result::TM_SelfModified => {
                        return Err(Error::new(
                            *b"27000",
                            "a step cannot be written by the statement that changes its run",
                        )
                        .detail("The run's row was updated by the same command; its labels could be read stale.")
                        .hint("Write the step in a statement of its own."))
                    }
                    _ => {
                        return Err(Error::new(
                            *b"40001",
                            "could not serialize access to a run being changed concurrently",
                        )
                        .detail("The run was deleted or moved while this step waited for it.")
                        .hint("Retry the transaction."))
                    }
                }
                let scope = match slot_value(slot, c_scope) {
                    Some(d) => datum_scope(d)?.to_vec(),
                    None => return Err(Error::corrupt("scope")),
                };
                let labels = match slot_value(slot, c_labels) {
                    Some(d) => datum_labelset(d)?.body().to_vec(),
                    None => Vec::new(),
                };
                Ok(LockedRun { scope, labels })
            },
        );
        pg_sys::table_close(rel, pg_sys::NoLock as i32);
        run
    }
}

/// A tool's catalog entry.
pub struct Tool {
    pub effect: String,
    pub trusted_output: bool,
}

/// The catalog entry of a tool, `None` when the catalog does not list it.
pub unsafe fn tool(namespace: Oid, name: Datum) -> Result<Option<Tool>> {
    unsafe {
        let (rel, pkey) = open(namespace, c"tools", pg_sys::AccessShareLock)?;
        let [c_effect, c_trusted] = TOOL_COLUMNS
            .of((*rel).rd_id, (*rel).rd_att)?
            .map(|c| c as usize);
        let t = probe(rel, pkey, name, pg_sys::F_TEXTEQ, false, |slot, _| {
            let effect = slot_value(slot, c_effect)
                .map(|d| String::from_utf8_lossy(varlena_bytes(d.cast_mut_ptr())).into_owned())
                .unwrap_or_default();
            let trusted_output = slot_value(slot, c_trusted)
                .map(|d| d.value() != 0)
                .unwrap_or(false);
            Ok(Tool {
                effect,
                trusted_output,
            })
        });
        pg_sys::table_close(rel, pg_sys::NoLock as i32);
        t
    }
}
