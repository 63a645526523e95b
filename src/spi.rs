//! What the triggers and platform functions need from the backend: saved SPI plans, running as
//! the platform tables' owner, backend-local flags, and tuple access.
//!
//! Plain `pg_sys` SPI rather than pgrx's wrapper: one prepared plan per query, kept for the life
//! of the backend (the plan cache re-plans it if the tables are recreated), executed with
//! datums straight from the trigger's tuple.

use crate::error::{Error, Result};
use crate::fmgr::varlena_bytes;
use pgrx::pg_sys::{self, Datum, Oid};
use std::cell::UnsafeCell;
use std::ffi::CStr;

/// State private to this backend (a backend is one thread).
pub struct BackendLocal<T>(UnsafeCell<T>);

// SAFETY: PostgreSQL runs every backend's SQL on one thread; these are only touched there.
unsafe impl<T> Sync for BackendLocal<T> {}

impl<T> BackendLocal<T> {
    pub const fn new(v: T) -> Self {
        BackendLocal(UnsafeCell::new(v))
    }

    /// # Safety
    /// No other reference to the value may be live (the backend is single-threaded and the
    /// callers never hold the reference across a call that could come back here).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self) -> &mut T {
        unsafe { &mut *self.0.get() }
    }
}

/// A query prepared once per backend (again if its argument types change: a type of the
/// extension gets a new OID when the extension is created again).
pub struct SavedPlan {
    sql: &'static CStr,
    plan: BackendLocal<(pg_sys::SPIPlanPtr, Vec<Oid>)>,
}

impl SavedPlan {
    pub const fn new(sql: &'static CStr) -> Self {
        SavedPlan {
            sql,
            plan: BackendLocal::new((std::ptr::null_mut(), Vec::new())),
        }
    }

    /// Execute with the given argument types and values (`None` is SQL NULL). Must be called
    /// between [`connect`] and [`finish`]. `limit` 0 means all rows.
    ///
    /// These statements run as the tables' owner, so the caller's search_path must not choose
    /// their operators, functions or casts: they are parsed and run (and parsed again when the
    /// plan cache re-plans, which PostgreSQL 15 does under the current search_path) with
    /// `search_path = pg_catalog, pg_temp`, restored afterwards.
    pub unsafe fn execute(
        &self,
        types: &[Oid],
        args: &[Option<Datum>],
        read_only: bool,
        limit: i64,
    ) -> Result<u64> {
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
            let out = self.prepare_and_run(types, args, read_only, limit);
            pg_sys::AtEOXact_GUC(true, nest);
            out
        }
    }

    unsafe fn prepare_and_run(
        &self,
        types: &[Oid],
        args: &[Option<Datum>],
        read_only: bool,
        limit: i64,
    ) -> Result<u64> {
        unsafe {
            let (plan, planned_types) = self.plan.get();
            if plan.is_null() || planned_types.as_slice() != types {
                if !plan.is_null() {
                    pg_sys::SPI_freeplan(*plan);
                    *plan = std::ptr::null_mut();
                }
                // A generic plan, planned once: these are small key lookups whose custom plans
                // would look cheaper every time and be planned again on every execution.
                let p = pg_sys::SPI_prepare_cursor(
                    self.sql.as_ptr(),
                    types.len() as i32,
                    types.as_ptr() as *mut Oid,
                    pg_sys::CURSOR_OPT_GENERIC_PLAN as i32,
                );
                if p.is_null() {
                    return Err(spi_error("prepare", pg_sys::SPI_result));
                }
                pg_sys::SPI_keepplan(p);
                *plan = p;
                *planned_types = types.to_vec();
            }
            let mut values: Vec<Datum> = args
                .iter()
                .map(|a| a.unwrap_or(Datum::from(0usize)))
                .collect();
            let nulls: Vec<std::ffi::c_char> = args
                .iter()
                .map(|a| if a.is_some() { b' ' } else { b'n' } as std::ffi::c_char)
                .collect();
            // An ERROR inside (a trigger of ours refusing, a cancel) comes back whole.
            let (plan, values_ptr, nulls_ptr) = (*plan, values.as_mut_ptr(), nulls.as_ptr());
            let rc = crate::catch::catch(|| {
                crate::catch::spi_execute_plan(plan, values_ptr, nulls_ptr, read_only, limit as _)
            })?;
            if rc < 0 {
                return Err(spi_error("execute", rc));
            }
            Ok(pg_sys::SPI_processed)
        }
    }
}

fn spi_error(what: &str, rc: i32) -> Error {
    Error::new(
        *b"55000",
        format!("pg_labels: SPI {what} failed with code {rc}"),
    )
}

/// Connect to SPI, run `f`, disconnect. If `f` raises a PostgreSQL error, the transaction's
/// abort cleans up the connection.
pub unsafe fn with_spi<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    unsafe {
        let rc = pg_sys::SPI_connect();
        if rc < 0 {
            return Err(spi_error("connect", rc));
        }
        let out = f();
        pg_sys::SPI_finish();
        out
    }
}

/// Value of column `col` (1-based) of result row `row`, or `None` for NULL.
pub unsafe fn result_datum(row: u64, col: i32) -> Option<Datum> {
    unsafe {
        let tt = pg_sys::SPI_tuptable;
        let mut isnull = false;
        let d = pg_sys::SPI_getbinval(
            *(*tt).vals.add(row as usize),
            (*tt).tupdesc,
            col,
            &mut isnull,
        );
        if isnull {
            None
        } else {
            Some(d)
        }
    }
}

/// Run `f` as `owner` (the platform tables' owner), with row-level security not forced on it,
/// the way PostgreSQL runs foreign-key checks. The caller's identity is restored afterwards,
/// also when `f` fails (a PostgreSQL error restores it through the transaction's abort).
pub unsafe fn as_owner<T>(owner: Oid, f: impl FnOnce() -> T) -> T {
    unsafe {
        let (mut saved_user, mut saved_ctx) = (Oid::INVALID, 0i32);
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_ctx);
        pg_sys::SetUserIdAndSecContext(
            owner,
            saved_ctx
                | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                | pg_sys::SECURITY_NOFORCE_RLS as i32,
        );
        struct Restore(Oid, i32);
        impl Drop for Restore {
            fn drop(&mut self) {
                unsafe { pg_sys::SetUserIdAndSecContext(self.0, self.1) }
            }
        }
        let _restore = Restore(saved_user, saved_ctx);
        f()
    }
}

/// The name of the current user (`current_user`).
pub unsafe fn current_user_name() -> String {
    unsafe {
        let p = pg_sys::GetUserNameFromId(pg_sys::GetUserId(), false);
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Bytes of a non-null varlena datum.
pub unsafe fn datum_bytes<'a>(d: Datum) -> &'a [u8] {
    unsafe { varlena_bytes(d.cast_mut_ptr()) }
}

/// A `text` datum in the current memory context.
pub fn text_datum(s: &str) -> Result<Datum> {
    crate::fmgr::ret_bytes(s.as_bytes())
}

/// A one-dimensional array datum of `elems` (of type `elem`, as `pg_type` describes it), in
/// the current memory context.
pub fn array_datum(mut elems: Vec<Datum>, elem: Oid, len: i32, byval: bool, align: u8) -> Datum {
    unsafe {
        let a = pg_sys::construct_array(
            elems.as_mut_ptr(),
            elems.len() as i32,
            elem,
            len,
            byval,
            align as std::ffi::c_char,
        );
        Datum::from(a)
    }
}

/// A `bigint[]` datum in the current memory context.
pub fn int8_array_datum(values: &[i64]) -> Datum {
    let elems = values.iter().map(|&v| Datum::from(v)).collect();
    array_datum(elems, pg_sys::INT8OID, 8, true, pg_sys::TYPALIGN_DOUBLE)
}

/// A `text[]` datum in the current memory context.
pub fn text_array_datum(values: &[String]) -> Result<Datum> {
    let elems = values
        .iter()
        .map(|v| text_datum(v))
        .collect::<Result<_>>()?;
    Ok(array_datum(
        elems,
        pg_sys::TEXTOID,
        -1,
        false,
        pg_sys::TYPALIGN_INT,
    ))
}

/// A uuid's 16 bytes.
pub type Uuid = [u8; 16];

/// The bytes of a `uuid` datum.
pub unsafe fn datum_uuid(d: Datum) -> Uuid {
    let mut u = [0u8; 16];
    unsafe {
        std::ptr::copy_nonoverlapping(d.cast_mut_ptr::<u8>() as *const u8, u.as_mut_ptr(), 16)
    };
    u
}

/// A `uuid` datum in the current memory context.
pub fn uuid_datum(u: &Uuid) -> Datum {
    unsafe {
        let p = pg_sys::palloc(16) as *mut u8;
        std::ptr::copy_nonoverlapping(u.as_ptr(), p, 16);
        Datum::from(p)
    }
}

/// The text form of a uuid.
pub fn uuid_string(u: &Uuid) -> String {
    let h: Vec<String> = u.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..].concat()
    )
}

/// The text form of a `uuid` datum.
pub unsafe fn uuid_text(d: Datum) -> String {
    uuid_string(&unsafe { datum_uuid(d) })
}

/// A `text` datum's contents, owned.
pub unsafe fn datum_text(d: Datum) -> String {
    String::from_utf8_lossy(unsafe { datum_bytes(d) }).into_owned()
}

/// A `uuid[]` datum in the current memory context.
pub fn uuid_array_datum(ids: &[Uuid]) -> Datum {
    let elems = ids.iter().map(uuid_datum).collect();
    array_datum(elems, pg_sys::UUIDOID, 16, false, pg_sys::TYPALIGN_CHAR)
}

/// Do two non-null datums of a column hold the same image?
pub unsafe fn same_image(a: Datum, b: Datum, attr: &pg_sys::FormData_pg_attribute) -> bool {
    unsafe {
        if attr.attbyval {
            a == b
        } else if attr.attlen > 0 {
            let n = attr.attlen as usize;
            std::slice::from_raw_parts(a.cast_mut_ptr::<u8>() as *const u8, n)
                == std::slice::from_raw_parts(b.cast_mut_ptr::<u8>() as *const u8, n)
        } else if attr.attlen == -1 {
            datum_bytes(a) == datum_bytes(b)
        } else {
            let (x, y) = (
                CStr::from_ptr(a.cast_mut_ptr::<std::ffi::c_char>()),
                CStr::from_ptr(b.cast_mut_ptr::<std::ffi::c_char>()),
            );
            x == y
        }
    }
}

/// Run `f` with a backend-local flag raised, lowering it (back to its default) afterwards
/// whatever happens, an error included.
pub fn with_flag<F: Default, T>(flag: &BackendLocal<F>, raised: F, f: impl FnOnce() -> T) -> T {
    unsafe {
        *flag.get() = raised;
    }
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    unsafe {
        *flag.get() = F::default();
    }
    match out {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e),
    }
}

/// Column numbers of a relation, resolved by name once per backend and checked by name on every
/// use (a column dropped and added again moves; a cache keyed by relation alone would not see it).
pub struct Columns<const N: usize> {
    names: [&'static CStr; N],
    cache: BackendLocal<(Oid, [i32; N])>,
}

impl<const N: usize> Columns<N> {
    pub const fn new(names: [&'static CStr; N]) -> Self {
        Columns {
            names,
            cache: BackendLocal::new((Oid::INVALID, [0; N])),
        }
    }

    /// The 1-based numbers of the columns, in the order of `names`.
    pub unsafe fn of(&self, relid: Oid, desc: pg_sys::TupleDesc) -> Result<[i32; N]> {
        unsafe {
            let (cached_rel, cols) = *self.cache.get();
            let natts = (*desc).natts;
            let named = |n: i32, name: &CStr| {
                n >= 1 && n <= natts && {
                    let a = &*(*desc).attrs.as_ptr().add(n as usize - 1);
                    !a.attisdropped && CStr::from_ptr(a.attname.data.as_ptr()) == name
                }
            };
            if cached_rel == relid && cols.iter().zip(self.names).all(|(&n, name)| named(n, name)) {
                return Ok(cols);
            }
            let mut fresh = [0; N];
            for (slot, name) in fresh.iter_mut().zip(self.names) {
                let n = pg_sys::SPI_fnumber(desc, name.as_ptr());
                if n <= 0 {
                    return Err(Error::new(
                        *b"55000",
                        format!(
                            "pg_labels: the table has no column {}",
                            name.to_string_lossy()
                        ),
                    ));
                }
                *slot = n;
            }
            *self.cache.get() = (relid, fresh);
            Ok(fresh)
        }
    }
}
