//! Statements the extension runs itself: saved SPI plans and their results. Who they run as
//! (the platform tables' owner, [`as_owner`]) and the roles and privileges the extension asks
//! about are [`crate::pg::role`]'s, re-exported here.
//!
//! Plain `pg_sys` SPI rather than pgrx's wrapper: one prepared plan per query, kept for the life
//! of the backend (the plan cache re-plans it if the tables are recreated), executed with
//! datums straight from the trigger's tuple. A statement runs inside [`with_spi`], which hands
//! out an [`Spi`] token; results ([`Rows`]) borrow it, so they cannot outlive the connection,
//! and every value is read through [`FromDatum`], checked against the result column's type.

use crate::pg::citus;
use crate::pg::datum::{self, FromDatum};
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::local::BackendLocal;
pub use crate::pg::sql::Sql;
use crate::pg::trigger::platform_schema;
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::{CStr, CString};
use std::marker::PhantomData;

/// An open SPI connection (see [`with_spi`]).
pub struct Spi {
    _not_send: PhantomData<*const ()>,
}

/// Connect to SPI, run `f`, disconnect. If `f` raises a PostgreSQL error, the transaction's
/// abort cleans up the connection.
pub fn with_spi<T>(f: impl FnOnce(&Spi) -> Result<T>) -> Result<T> {
    // SAFETY: SPI_connect/SPI_finish bracket the statements run through the token.
    unsafe {
        let rc = pg_sys::SPI_connect();
        if rc < 0 {
            return Err(spi_error("connect", rc));
        }
        let out = f(&Spi {
            _not_send: PhantomData,
        });
        pg_sys::SPI_finish();
        out
    }
}

/// A query prepared once per backend (again if its argument types change: a type of the
/// extension gets a new OID when the extension is created again).
pub struct SavedPlan {
    sql: &'static CStr,
    plan: BackendLocal<(usize, Vec<Oid>)>,
    /// on Citus shards: per shard group, the statement naming its shards (crate::pg::citus)
    shard_plans: BackendLocal<Vec<(i64, usize, Vec<Oid>)>>,
}

/// The rows a statement returned (or changed, for `processed`), valid while its SPI
/// connection is open.
pub struct Rows<'spi> {
    table: *mut pg_sys::SPITupleTable,
    processed: u64,
    _spi: PhantomData<&'spi Spi>,
}

impl SavedPlan {
    pub const fn new(sql: &'static CStr) -> Self {
        SavedPlan {
            sql,
            plan: BackendLocal::new((0, Vec::new())),
            shard_plans: BackendLocal::new(Vec::new()),
        }
    }

    /// Execute with the given argument types and values (`None` is SQL NULL). `limit` 0 means
    /// all rows.
    ///
    /// These statements run as the tables' owner, so the caller's search_path must not choose
    /// their operators, functions or casts: they are parsed and run (and parsed again when the
    /// plan cache re-plans, which PostgreSQL 15 does under the current search_path) with
    /// `search_path = pg_catalog, pg_temp`, restored afterwards.
    pub fn execute<'spi>(
        &self,
        _spi: &'spi Spi,
        types: &[Oid],
        args: &[Option<Datum>],
        read_only: bool,
        limit: i64,
    ) -> Result<Rows<'spi>> {
        pinned(|| self.prepare_and_run(types, args, read_only, limit, false))
    }

    /// Execute a read-only statement with the latest snapshot rather than the transaction's:
    /// it sees every row committed before it starts, also in a `REPEATABLE READ` transaction
    /// (as PostgreSQL's foreign-key checks do), and the rows the running command inserted
    /// before (the earlier rows of a multi-row `INSERT`, `INSERT ... SELECT` or `COPY`, which
    /// a snapshot of the command itself does not show). For checks made under a lock that
    /// orders the writers (a run's row), so that what committed before the lock was granted
    /// counts, and a use of something single-use earlier in the same statement too.
    pub fn execute_latest<'spi>(
        &self,
        _spi: &'spi Spi,
        types: &[Oid],
        args: &[Option<Datum>],
        limit: i64,
    ) -> Result<Rows<'spi>> {
        pinned(|| self.prepare_and_run(types, args, true, limit, true))
    }

    fn plan(&self, types: &[Oid]) -> Result<pg_sys::SPIPlanPtr> {
        if let Some(shard) = citus::SHARD.current() {
            return self.shard_plan(shard, types);
        }
        self.plan.with(|(plan, planned_types)| {
            // SAFETY: the plan pointer is one SPI_keepplan kept, or null.
            unsafe {
                let mut p = *plan as pg_sys::SPIPlanPtr;
                if p.is_null() || planned_types.as_slice() != types {
                    if !p.is_null() {
                        pg_sys::SPI_freeplan(p);
                        *plan = 0;
                    }
                    // A generic plan, planned once: these are small key lookups whose custom
                    // plans would look cheaper every time and be planned again on every
                    // execution. With Citus loaded, a custom plan: Citus cannot run a generic
                    // plan of a statement over distributed tables (it routes by the values).
                    let options = if citus::loaded() {
                        pg_sys::CURSOR_OPT_CUSTOM_PLAN
                    } else {
                        pg_sys::CURSOR_OPT_GENERIC_PLAN
                    };
                    p = pg_sys::SPI_prepare_cursor(
                        self.sql.as_ptr(),
                        types.len() as i32,
                        types.as_ptr() as *mut Oid,
                        options as i32,
                    );
                    if p.is_null() {
                        return Err(spi_error("prepare", pg_sys::SPI_result));
                    }
                    pg_sys::SPI_keepplan(p);
                    *plan = p as usize;
                    *planned_types = types.to_vec();
                }
                Ok(p)
            }
        })
    }

    /// The statement for a trigger running on a Citus shard: the platform tables it names
    /// replaced by the relations next to that shard, prepared once per shard group.
    fn shard_plan(&self, shard: i64, types: &[Oid]) -> Result<pg_sys::SPIPlanPtr> {
        let kept = self.shard_plans.with(|plans| {
            plans
                .iter()
                .find(|(s, _, t)| *s == shard && t.as_slice() == types)
                .map(|(_, p, _)| *p)
        });
        if let Some(p) = kept {
            return Ok(p as pg_sys::SPIPlanPtr);
        }
        let namespace = platform_schema().ok_or_else(|| {
            Error::new(
                NOT_IN_PREREQUISITE_STATE,
                "pg_labels: the schema pg_labels is missing",
            )
        })?;
        let sql = citus::rewrite(namespace, self.sql, shard)?;
        // SAFETY: prepares and keeps a plan of a statement we made; errors propagate.
        let p = unsafe {
            let p = pg_sys::SPI_prepare_cursor(
                sql.as_ptr(),
                types.len() as i32,
                types.as_ptr() as *mut Oid,
                pg_sys::CURSOR_OPT_GENERIC_PLAN as i32,
            );
            if p.is_null() {
                return Err(spi_error("prepare", pg_sys::SPI_result));
            }
            pg_sys::SPI_keepplan(p);
            p
        };
        self.shard_plans.with(|plans| {
            if plans.len() >= 64 {
                for (_, old, _) in plans.drain(..) {
                    // SAFETY: a plan SPI_keepplan kept above, no longer named anywhere.
                    unsafe { pg_sys::SPI_freeplan(old as pg_sys::SPIPlanPtr) };
                }
            }
            plans.push((shard, p as usize, types.to_vec()));
        });
        Ok(p)
    }

    fn prepare_and_run<'spi>(
        &self,
        types: &[Oid],
        args: &[Option<Datum>],
        read_only: bool,
        limit: i64,
        latest: bool,
    ) -> Result<Rows<'spi>> {
        if types.len() != args.len() {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                "pg_labels: statement called with the wrong number of arguments",
            ));
        }
        let plan = self.plan(types)?;
        let mut values: Vec<Datum> = args
            .iter()
            .map(|a| a.unwrap_or(Datum::from(0usize)))
            .collect();
        let nulls: Vec<std::ffi::c_char> = args
            .iter()
            .map(|a| if a.is_some() { b' ' } else { b'n' } as std::ffi::c_char)
            .collect();
        let (values_ptr, nulls_ptr) = (values.as_mut_ptr(), nulls.as_ptr());
        // An ERROR inside (a trigger of ours refusing, a cancel) comes back whole.
        // SAFETY: the closure calls one unguarded C function and owns nothing; SPI pushes the
        // latest snapshot (copying it, as PushActiveSnapshot does) for the query, as
        // PostgreSQL's foreign-key checks do.
        let rc = unsafe {
            let snapshot = if latest {
                // the latest snapshot, seeing the running command's own earlier rows too: a
                // row it inserted has that command's id as its cmin, visible to a snapshot
                // whose curcid is past it. (GetLatestSnapshot's snapshot is static and
                // recomputed by the next call; SPI pushes a copy of it.)
                // (before the transaction's first snapshot, GetLatestSnapshot hands out the
                // transaction's snapshot itself, which must not change: never in a trigger)
                let first = pg_sys::FirstSnapshotSet;
                let s = pg_sys::GetLatestSnapshot();
                if first {
                    (*s).curcid = pg_sys::GetCurrentCommandId(false).wrapping_add(1);
                }
                s
            } else {
                std::ptr::null_mut()
            };
            crate::pg::catch::catch(|| {
                if latest {
                    crate::pg::catch::spi_execute_snapshot(
                        plan,
                        values_ptr,
                        nulls_ptr,
                        snapshot,
                        std::ptr::null_mut(),
                        read_only,
                        false,
                        limit as _,
                    )
                } else {
                    crate::pg::catch::spi_execute_plan(
                        plan, values_ptr, nulls_ptr, read_only, limit as _,
                    )
                }
            })
        }?;
        if rc < 0 {
            return Err(spi_error("execute", rc));
        }
        // SAFETY: SPI_execute_plan just set these globals.
        unsafe {
            Ok(Rows {
                table: pg_sys::SPI_tuptable,
                processed: pg_sys::SPI_processed,
                _spi: PhantomData,
            })
        }
    }
}

/// Run `f` with the settings every statement of the extension runs under, whatever the
/// session set: `search_path = pg_catalog, pg_temp`, so that the caller's search_path does not
/// choose their operators, functions or casts (they are parsed, and parsed again when the plan
/// cache re-plans, under it). Restored afterwards (on an error, by the transaction's abort).
fn pinned<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: NewGUCNestLevel/AtEOXact_GUC bracket the setting.
    unsafe {
        let nest = pg_sys::NewGUCNestLevel();
        pg_sys::set_config_option(
            c"search_path".as_ptr(),
            c"pg_catalog, pg_temp".as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        let out = f();
        pg_sys::AtEOXact_GUC(true, nest);
        out
    }
}

/// Run one statement built at run time ([`Sql`]), under the settings of the saved plans.
pub fn run<'spi>(spi: &'spi Spi, sql: &Sql, read_only: bool) -> Result<Rows<'spi>> {
    run_with(spi, sql, &[], &[], read_only)
}

/// [`run`] with parameters (`$1` ...: types and values, `None` is SQL NULL).
pub fn run_with<'spi>(
    _spi: &'spi Spi,
    sql: &Sql,
    types: &[Oid],
    args: &[Option<Datum>],
    read_only: bool,
) -> Result<Rows<'spi>> {
    let c = CString::new(sql.text()).map_err(|_| spi_error("build a statement", 0))?;
    if types.len() != args.len() {
        return Err(spi_error("build a statement", args.len() as i32));
    }
    let mut values: Vec<Datum> = args
        .iter()
        .map(|a| a.unwrap_or(Datum::from(0usize)))
        .collect();
    let nulls: Vec<std::ffi::c_char> = args
        .iter()
        .map(|a| if a.is_some() { b' ' } else { b'n' } as std::ffi::c_char)
        .collect();
    let rc = pinned(|| {
        let (ptr, values_ptr, nulls_ptr) = (c.as_ptr(), values.as_mut_ptr(), nulls.as_ptr());
        let (n, types_ptr) = (types.len() as i32, types.as_ptr() as *mut Oid);
        // SAFETY: the closure calls one unguarded C function and owns nothing (c, values,
        // nulls and types outlive it).
        unsafe {
            crate::pg::catch::catch(|| {
                crate::pg::catch::spi_execute_with_args(
                    ptr, n, types_ptr, values_ptr, nulls_ptr, read_only, 0,
                )
            })
        }
    })?;
    if rc < 0 {
        return Err(spi_error("execute", rc));
    }
    // SAFETY: SPI just set these globals.
    unsafe {
        Ok(Rows {
            table: pg_sys::SPI_tuptable,
            processed: pg_sys::SPI_processed,
            _spi: PhantomData,
        })
    }
}

impl Rows<'_> {
    /// Rows returned (or changed, for a statement without RETURNING).
    pub fn len(&self) -> u64 {
        self.processed
    }

    pub fn is_empty(&self) -> bool {
        self.processed == 0
    }

    /// The value of column `col` (1-based) of row `row` as `T`, `None` when NULL (or when there
    /// is no such row: a statement without rows).
    pub fn get<'a, T: FromDatum<'a>>(&'a self, row: u64, col: i32) -> Result<Option<T>> {
        if self.table.is_null() || row >= self.processed {
            return Ok(None);
        }
        // SAFETY: the table is SPI's result, alive while the connection is open ('spi); row and
        // col are in range (col checked by SPI_gettypeid, which returns InvalidOid otherwise).
        unsafe {
            let desc = (*self.table).tupdesc;
            if col < 1 || col > (*desc).natts {
                return Err(spi_error("read a column", col));
            }
            let tuple = *(*self.table).vals.add(row as usize);
            let mut isnull = false;
            let d = pg_sys::SPI_getbinval(tuple, desc, col, &mut isnull);
            let oid = pg_sys::SPI_gettypeid(desc, col);
            datum::read((!isnull).then_some(d), oid, || {
                format!("result column {col}")
            })
        }
    }

    /// Like [`Rows::get`], for a column that is never NULL.
    pub fn must<'a, T: FromDatum<'a>>(&'a self, row: u64, col: i32) -> Result<T> {
        self.get(row, col)?
            .ok_or_else(|| spi_error("read a NULL where none can be", col))
    }
}

fn spi_error(what: &str, rc: i32) -> Error {
    Error::new(
        NOT_IN_PREREQUISITE_STATE,
        format!("pg_labels: SPI {what} failed with code {rc}"),
    )
}

/// Is a transaction in progress (not aborted, not ended): may the catalog be read, may a
/// lock be taken?
pub fn in_transaction() -> bool {
    // SAFETY: reads the transaction state.
    unsafe { pg_sys::IsTransactionState() }
}
