//! Citus: where a platform table is, for a trigger that fired on a shard.
//!
//! On a Citus cluster (after `pg_labels.distribute()`) a row is written into a shard, a table
//! named `<table>_<shard id>` in the platform schema of the node that holds it, and the
//! trigger fires there. The logical table of that name on the node is an empty shell, so what
//! the trigger reads must be the shards next to its own: the co-located shard of a distributed
//! table (same hash range), or this node's placement of a reference table. [`SHARD`] says which
//! shard the running trigger fired on ([`crate::pg::trigger::Trigger`] raises it for the
//! call); [`local_name`] and [`rewrite`] turn a table's name into the one to read. Nothing here
//! knows which tables the platform has: Citus' metadata says which it manages.
//! Citus' metadata (`pg_dist_shard`) is on every node; without Citus nothing here is used.

use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::inval;
use crate::pg::local::{BackendLocal, Scoped};
use crate::pg::sql::Sql;
use pgrx::pg_sys::{self, Datum, Oid};
use std::collections::HashMap;
use std::ffi::{CStr, CString};

/// The shard the running trigger fired on, while it runs.
pub static SHARD: Scoped<i64> = Scoped::new();

/// `runs_102008` → (`runs`, 102008): the name of a shard split into its table's and its id
/// (whether it is one, Citus' metadata says: [`is_shard_of`]).
pub fn split(name: &str) -> Option<(&str, i64)> {
    let (base, digits) = name.rsplit_once('_')?;
    if base.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, digits.parse().ok()?))
}

/// What this backend found in Citus' metadata, while no invalidation arrived.
struct Found {
    generation: u64,
    /// (shard, table) → the local relation's name, `None` if the table is not distributed
    names: HashMap<(i64, String), Option<String>>,
    /// (table, shard) → is it a shard of that table
    shards: HashMap<(String, i64), bool>,
}

static FOUND: BackendLocal<Option<Found>> = BackendLocal::new(None);

fn cached<R>(f: impl FnOnce(&mut Found) -> R) -> R {
    let generation = inval::generation();
    FOUND.with(|slot| {
        let found = match slot {
            Some(f) if f.generation == generation => f,
            other => other.insert(Found {
                generation,
                names: HashMap::new(),
                shards: HashMap::new(),
            }),
        };
        f(found)
    })
}

/// Is Citus' metadata here at all?
fn has_metadata() -> bool {
    // SAFETY: a syscache lookup by name.
    unsafe {
        pg_sys::get_relname_relid(
            c"pg_dist_shard".as_ptr(),
            Oid::from(pg_sys::PG_CATALOG_NAMESPACE),
        ) != Oid::INVALID
    }
}

/// One bigint from a query on Citus' catalogs (the first column of the first row), run through
/// SPI with the given int8/oid arguments.
fn query_i64(sql: &CStr, types: &[Oid], args: &[Datum]) -> Result<Option<i64>> {
    // SAFETY: SPI_connect/SPI_finish bracket one read-only statement; its result is read before
    // SPI_finish frees it; a PostgreSQL error inside propagates through pgrx's guard.
    unsafe {
        if pg_sys::SPI_connect() < 0 {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                "pg_labels: SPI_connect failed",
            ));
        }
        let rc = pg_sys::SPI_execute_with_args(
            sql.as_ptr(),
            types.len() as i32,
            types.as_ptr() as *mut Oid,
            args.as_ptr() as *mut Datum,
            std::ptr::null(),
            true,
            1,
        );
        let mut out = None;
        if rc >= 0 && pg_sys::SPI_processed > 0 && !pg_sys::SPI_tuptable.is_null() {
            let t = &*pg_sys::SPI_tuptable;
            let mut isnull = false;
            let d = pg_sys::SPI_getbinval(*t.vals, t.tupdesc, 1, &mut isnull);
            if !isnull {
                out = Some(d.value() as i64);
            }
        }
        pg_sys::SPI_finish();
        if rc < 0 {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                format!("pg_labels: reading Citus' metadata failed ({rc})"),
            ));
        }
        Ok(out)
    }
}

/// The logical platform table of that name (its OID), `INVALID` if there is none.
fn logical(namespace: Oid, table: &str) -> Oid {
    let Ok(name) = CString::new(table) else {
        return Oid::INVALID;
    };
    // SAFETY: a syscache lookup by name.
    unsafe { pg_sys::get_relname_relid(name.as_ptr(), namespace) }
}

/// Is shard `id` (by Citus' metadata) a shard of the platform table `table`?
pub fn is_shard_of(namespace: Oid, table: &str, id: i64) -> Result<bool> {
    if let Some(known) = cached(|f| f.shards.get(&(table.to_owned(), id)).copied()) {
        return Ok(known);
    }
    let rel = logical(namespace, table);
    let yes = rel != Oid::INVALID
        && has_metadata()
        && query_i64(
            c"SELECT s.shardid FROM pg_catalog.pg_dist_shard s
               WHERE s.shardid OPERATOR(pg_catalog.=) $1
                 AND s.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $2",
            &[pg_sys::INT8OID, pg_sys::OIDOID],
            &[Datum::from(id), Datum::from(rel)],
        )?
        .is_some();
    cached(|f| f.shards.insert((table.to_owned(), id), yes));
    Ok(yes)
}

/// The name of the relation on this node that holds, for the shard group of `shard`, the rows
/// of the platform table `table`: its co-located shard (distributed), its placement (reference
/// table), or `None` when Citus does not manage the table (it is read as it is).
pub fn local_name(namespace: Oid, shard: i64, table: &str) -> Result<Option<String>> {
    if let Some(known) = cached(|f| f.names.get(&(shard, table.to_owned())).cloned()) {
        return Ok(known);
    }
    let rel = logical(namespace, table);
    let found = if rel == Oid::INVALID || !has_metadata() {
        None
    } else {
        query_i64(
            c"SELECT t.shardid FROM pg_catalog.pg_dist_shard t, pg_catalog.pg_dist_shard s
               WHERE s.shardid OPERATOR(pg_catalog.=) $1
                 AND t.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $2
                 AND (t.shardminvalue IS NULL OR t.shardminvalue OPERATOR(pg_catalog.=) s.shardminvalue)
               ORDER BY t.shardid LIMIT 1",
            &[pg_sys::INT8OID, pg_sys::OIDOID],
            &[Datum::from(shard), Datum::from(rel)],
        )?
    };
    // read here only if this node holds it (a reference table has no placement on a
    // coordinator that is not in Citus' metadata: the logical table is read there)
    let name = found.map(|id| format!("{table}_{id}")).filter(|n| {
        CString::new(n.as_str()).is_ok_and(|c| {
            // SAFETY: a syscache lookup by name.
            unsafe { pg_sys::get_relname_relid(c.as_ptr(), namespace) != Oid::INVALID }
        })
    });
    cached(|f| f.names.insert((shard, table.to_owned()), name.clone()));
    Ok(name)
}

/// The shard of the distributed platform table `table` that holds the rows whose distribution
/// column is this uuid (`None` if Citus does not distribute the table).
pub fn shard_for_uuid(namespace: Oid, table: &str, value: Datum) -> Result<Option<i64>> {
    let rel = logical(namespace, table);
    if rel == Oid::INVALID || !has_metadata() {
        return Ok(None);
    }
    query_i64(
        c"SELECT pg_catalog.get_shard_id_for_distribution_column($1::pg_catalog.regclass, $2)
           WHERE EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                          WHERE p.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1
                            AND p.partmethod OPERATOR(pg_catalog.=) 'h')",
        &[pg_sys::OIDOID, pg_sys::UUIDOID],
        &[Datum::from(rel), value],
    )
}

/// Does Citus manage this table of the platform schema (distributed or reference)?
pub fn manages(namespace: Oid, table: &str) -> Result<bool> {
    let rel = logical(namespace, table);
    if rel == Oid::INVALID || !has_metadata() {
        return Ok(false);
    }
    Ok(query_i64(
        c"SELECT 1::pg_catalog.int8 FROM pg_catalog.pg_dist_partition p
           WHERE p.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
        &[pg_sys::OIDOID],
        &[Datum::from(rel)],
    )?
    .is_some())
}

/// The shard of a reference table (any shard id stands for it in [`local_name`]).
pub fn reference_shard(namespace: Oid, table: &str) -> Result<Option<i64>> {
    let rel = logical(namespace, table);
    if rel == Oid::INVALID || !has_metadata() {
        return Ok(None);
    }
    query_i64(
        c"SELECT s.shardid FROM pg_catalog.pg_dist_shard s
           WHERE s.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 AND s.shardminvalue IS NULL",
        &[pg_sys::OIDOID],
        &[Datum::from(rel)],
    )
}

/// The shard a relation of the platform schema is (a shard of a platform table or of one of
/// its partitions, by its name's suffix and Citus' metadata), `None` for any other relation.
pub fn shard_of_relation(namespace: Oid, relid: Oid) -> Result<Option<i64>> {
    // SAFETY: syscache lookups; get_rel_name returns NULL or a palloc'd cstring.
    let name = unsafe {
        if pg_sys::get_rel_namespace(relid) != namespace {
            return Ok(None);
        }
        let p = pg_sys::get_rel_name(relid);
        if p.is_null() {
            return Ok(None);
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    };
    let Some((_, id)) = split(&name) else {
        return Ok(None);
    };
    if !has_metadata() {
        return Ok(None);
    }
    let found = query_i64(
        c"SELECT s.shardid FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_class c
              ON c.oid OPERATOR(pg_catalog.=) s.logicalrelid::pg_catalog.oid
           WHERE s.shardid OPERATOR(pg_catalog.=) $1 AND c.relnamespace OPERATOR(pg_catalog.=) $2",
        &[pg_sys::INT8OID, pg_sys::OIDOID],
        &[Datum::from(id), Datum::from(namespace)],
    )?;
    Ok(found)
}

/// Is this backend one Citus opened to run part of a statement for another node (its
/// `application_name` says so)? Anyone can claim it: what such a backend is told is checked
/// as any other claim would be.
pub fn internal_backend() -> bool {
    loaded() && setting(c"application_name").is_some_and(|a| a.starts_with("citus_internal gpid="))
}

/// Is Citus loaded in this backend? Its own setting exists, not a placeholder anyone can make
/// with `SET citus.propagate_set_commands = ...` before (or without) Citus. Citus is loaded
/// only through `shared_preload_libraries` (it refuses `LOAD`), before any backend runs a
/// query, so the answer never changes in a backend: found at its first call, and kept.
pub fn loaded() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static LOADED: AtomicU8 = AtomicU8::new(0); // 0 not asked yet, 1 no, 2 yes
    match LOADED.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = real_setting(c"citus.propagate_set_commands");
            LOADED.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

/// Does a setting exist, defined by the code that owns it (not a placeholder)?
fn real_setting(name: &CStr) -> bool {
    // SAFETY: GetConfigOptionFlags with missing_ok returns 0 when there is no such setting.
    unsafe {
        !pg_sys::GetConfigOption(name.as_ptr(), true, false).is_null()
            && pg_sys::GetConfigOptionFlags(name.as_ptr(), true)
                & pg_sys::GUC_CUSTOM_PLACEHOLDER as i32
                == 0
    }
}

/// A setting's value, `None` when there is no such setting.
pub fn setting(name: &CStr) -> Option<String> {
    // SAFETY: GetConfigOption with missing_ok returns NULL or the setting's value, valid until
    // the setting changes; it is copied at once.
    unsafe {
        let p = pg_sys::GetConfigOption(name.as_ptr(), true, false);
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

/// `SET LOCAL name TO 'value'` as a statement Citus carries to every node this transaction
/// reaches (in a transaction block; `citus.propagate_set_commands` is set to `local` for the
/// transaction first). The value goes as a quoted literal ([`Sql::literal`]).
pub fn set_local_carried(name: &'static str, value: &str) -> Result<()> {
    let sql = Sql::new("SET LOCAL citus.propagate_set_commands TO 'local'; SET LOCAL ")
        .push(name)
        .push(" TO ")
        .literal(value);
    let sql = CString::new(sql.text()).map_err(|_| Error::corrupt("setting"))?;
    // SAFETY: SPI_connect/SPI_finish bracket two utility statements we made; a PostgreSQL
    // error inside propagates through pgrx's guard.
    unsafe {
        if pg_sys::SPI_connect() < 0 {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                "pg_labels: SPI_connect failed",
            ));
        }
        let rc = pg_sys::SPI_execute(sql.as_ptr(), false, 0);
        pg_sys::SPI_finish();
        if rc < 0 {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                format!("pg_labels: setting {name} for the transaction failed ({rc})"),
            ));
        }
    }
    Ok(())
}

/// A statement naming tables of the platform schema (`pg_labels.runs`), with each name of a
/// table Citus manages replaced by the relation that holds its rows for the shard group of
/// `shard` (other names, of functions or sequences, are left as they are).
pub fn rewrite(namespace: Oid, sql: &CStr, shard: i64) -> Result<CString> {
    const PREFIX: &str = "pg_labels.";
    let text = sql.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text.as_ref();
    while let Some(at) = rest.find(PREFIX) {
        out.push_str(&rest[..at + PREFIX.len()]);
        rest = &rest[at + PREFIX.len()..];
        let len = rest
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
            .count();
        let name = &rest[..len];
        match local_name(namespace, shard, name)? {
            Some(local) => out.push_str(&local),
            None => out.push_str(name),
        }
        rest = &rest[len..];
    }
    out.push_str(rest);
    CString::new(out).map_err(|_| Error::corrupt("statement"))
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn names_of_shards() {
        assert_eq!(split("runs_102008"), Some(("runs", 102008)));
        assert_eq!(split("agent_versions_7"), Some(("agent_versions", 7)));
        assert_eq!(split("steps_05_102060"), Some(("steps_05", 102060)));
        assert_eq!(split("runs_"), None);
        assert_eq!(split("_12"), None);
        assert_eq!(split("runs"), None);
    }
}
