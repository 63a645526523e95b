//! The start of a query's execution (`ExecutorStart`): where what a query's row-level policies
//! decide by is fixed before its first row.
//!
//! A policy function called for a row does only what the row itself tells it to: any work it
//! did the first time some row reached it (a lookup, a privilege check, a cache filled) would
//! happen only when a hidden row passed the query's own conditions (PostgreSQL evaluates a
//! query's leakproof conditions before the policies), and statistics counters every role can
//! read would tell which. So that work is done here, for every query, before any row: the
//! callback registered with [`on_start`] gets the relations the plan reads (its range table)
//! and fixes what their policies will need.

use crate::pg::error::{raise, Result};
use crate::pg::local::BackendLocal;
use pgrx::pg_sys::{self, Oid};

/// What is called at the start of every query's execution, with the relations it reads.
pub type OnStart = fn(relations: &[Oid]) -> Result<()>;

static CALLBACK: BackendLocal<Option<OnStart>> = BackendLocal::new(None);
static mut PREVIOUS: pg_sys::ExecutorStart_hook_type = None;

// Unguarded: an ERROR raised by the executor must reach PostgreSQL's own handler untouched;
// the hook owns nothing that needs dropping when it is called.
unsafe extern "C-unwind" {
    #[link_name = "standard_ExecutorStart"]
    fn standard_executor_start(query: *mut pg_sys::QueryDesc, eflags: std::ffi::c_int);
}

/// Call `f` at the start of every query's execution in this backend (once per backend; called
/// from `_PG_init`).
pub fn on_start(f: OnStart) {
    if CALLBACK.with(|c| c.replace(f)).is_none() {
        // SAFETY: the hook lives as long as the library; the previous one is kept and called.
        unsafe {
            PREVIOUS = pg_sys::ExecutorStart_hook;
            pg_sys::ExecutorStart_hook = Some(executor_start);
        }
    }
}

/// The relations a plan reads: its range table's, into `out`.
///
/// # Safety
/// `query` is the live `QueryDesc` PostgreSQL passes to `ExecutorStart`.
unsafe fn relations(query: *mut pg_sys::QueryDesc, out: &mut Vec<Oid>) {
    // SAFETY: (caller) a planned statement's range table: a List of RangeTblEntry pointers.
    unsafe {
        let stmt = (*query).plannedstmt;
        if stmt.is_null() || (*stmt).rtable.is_null() {
            return;
        }
        let list = (*stmt).rtable;
        for i in 0..(*list).length as usize {
            let rte = (*(*list).elements.add(i)).ptr_value as *const pg_sys::RangeTblEntry;
            if !rte.is_null() && (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION {
                out.push((*rte).relid);
            }
        }
    }
}

/// The list of relations, kept between queries (a nested query's start makes its own).
static RELATIONS: BackendLocal<Vec<Oid>> = BackendLocal::new(Vec::new());

/// # Safety
/// Called by PostgreSQL as `ExecutorStart_hook`.
unsafe extern "C-unwind" fn executor_start(query: *mut pg_sys::QueryDesc, eflags: std::ffi::c_int) {
    if let Some(f) = CALLBACK.with(|c| *c) {
        let mut list = RELATIONS.with(std::mem::take);
        list.clear();
        // SAFETY: PostgreSQL's own argument.
        unsafe { relations(query, &mut list) };
        let out = crate::pg::error::catch(|| f(&list));
        RELATIONS.with(|r| *r = list);
        if let Err(e) = out {
            // SAFETY: the outermost frame of this hook, which owns nothing left to drop.
            unsafe { raise(e) };
        }
    }
    // SAFETY: the previous hook (or the standard function) gets PostgreSQL's arguments.
    unsafe {
        match PREVIOUS {
            Some(previous) => previous(query, eflags),
            None => standard_executor_start(query, eflags),
        }
    }
}

/// Is this process a parallel worker (whose leader fixed what its policies need)?
pub fn in_parallel_worker() -> bool {
    // SAFETY: reads a process-wide number.
    unsafe { pg_sys::ParallelWorkerNumber >= 0 }
}

/// The schema of a relation (`INVALID` if there is none).
pub fn namespace_of(rel: Oid) -> Oid {
    // SAFETY: a syscache lookup by OID (a missing relation is InvalidOid).
    unsafe { pg_sys::get_rel_namespace(rel) }
}

/// Is the relation a partition?
pub fn is_partition(rel: Oid) -> bool {
    // SAFETY: a syscache lookup by OID (a missing relation is false).
    unsafe { pg_sys::get_rel_relispartition(rel) }
}
