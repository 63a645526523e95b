//! The platform relations as the triggers reach them: found by name in the platform schema,
//! next to the trigger's table (on a Citus shard, the shard next to it), cached per backend and
//! checked on every use (a recreated table is noticed); the tables' owner; the labels of a row
//! of `runs` or `artifacts`, read directly. No SPI on this path.

use crate::pg::citus;
use crate::pg::columns::{col, Columns};
use crate::pg::datum::Uuid;
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::heap::Table;
use crate::pg::local::BackendLocal;
use crate::pg::sys::Oid;
use crate::pg::trigger::platform_schema;
use pg_labels_core::LabelSet as LabelSetCol;
use std::ffi::CStr;

/// The platform relations, found by name in the platform schema and cached per backend
/// (checked against the opened relation on every use, so a recreated table is noticed).
#[derive(Clone, Copy, Default)]
pub(super) struct Rels {
    pub(super) namespace: Oid,
    pub(super) runs: Oid,
    runs_pkey: Oid,
    pub(super) tools: Oid,
    tools_pkey: Oid,
}

pub(super) static RELS: BackendLocal<Rels> = BackendLocal::new(Rels {
    namespace: Oid::INVALID,
    runs: Oid::INVALID,
    runs_pkey: Oid::INVALID,
    tools: Oid::INVALID,
    tools_pkey: Oid::INVALID,
});

/// A platform relation that is not there.
pub(super) fn missing(what: &str) -> Error {
    Error::new(
        NOT_IN_PREREQUISITE_STATE,
        format!("pg_labels: relation pg_labels.{what} is missing"),
    )
    .hint("The platform tables are created by CREATE EXTENSION pg_labels (or restored from a dump); see docs/operations.md in pg_labels' source.")
}

/// A platform table by its name (`INVALID` if there is none).
pub fn relation_named(namespace: Oid, table: &str) -> Oid {
    std::ffi::CString::new(table)
        .map(|c| relation(namespace, &c))
        .unwrap_or(Oid::INVALID)
}

/// A relation of the platform schema by name.
pub fn relation(namespace: Oid, name: &CStr) -> Oid {
    crate::pg::catalog::relation_oid(namespace, name)
}

fn lookup(namespace: Oid) -> Result<Rels> {
    let pkey = |rel: Oid, what: &str| -> Result<Oid> {
        let t = Table::open(rel, crate::pg::sys::locks::AccessShareLock)?
            .ok_or_else(|| missing(what))?;
        Ok(t.primary_key())
    };
    let runs = relation(namespace, c"runs");
    let tools = relation(namespace, c"tools");
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

/// Open one of the platform tables (and know its primary key), refreshing the cache if needed.
pub(super) fn open(namespace: Oid, which: &CStr, lock: u32) -> Result<(Table, Oid)> {
    if citus::SHARD.current().is_some() {
        // a trigger on a Citus shard: the shard of this table next to it (crate::pg::citus)
        let table = if which == c"runs" { "runs" } else { "tools" };
        let t = open_next_to_shard(namespace, table, lock)?;
        let pk = t.primary_key();
        return Ok((t, pk));
    }
    let pick = |r: &Rels| {
        if which == c"runs" {
            (r.runs, r.runs_pkey)
        } else {
            (r.tools, r.tools_pkey)
        }
    };
    let cached = RELS.get();
    if cached.namespace == namespace {
        let (oid, pk) = pick(&cached);
        if let Some(t) = Table::open(oid, lock)?.filter(|t| t.is(which, namespace)) {
            return Ok((t, pk));
        }
    }
    let fresh = lookup(namespace)?;
    RELS.set(fresh);
    let (oid, pk) = pick(&fresh);
    match Table::open(oid, lock)?.filter(|t| t.is(which, namespace)) {
        Some(t) => Ok((t, pk)),
        None => Err(missing(&which.to_string_lossy())),
    }
}

/// The owner of the platform tables (of `pg_labels.steps`), who runs the statements the
/// triggers and platform functions make.
pub fn platform_owner() -> Result<Oid> {
    let steps = platform_schema()
        .map(|ns| relation(ns, c"steps"))
        .unwrap_or(Oid::INVALID);
    if steps == Oid::INVALID {
        return Err(missing("steps"));
    }
    crate::pg::catalog::relation_owner(steps).ok_or_else(|| missing("steps"))
}

/// A platform table by name: on a Citus shard (see [`citus::SHARD`]) the relation next to it
/// that holds the table's rows, otherwise (or when Citus does not manage the table) the table.
fn open_next_to_shard(namespace: Oid, table: &str, lock: u32) -> Result<Table> {
    let local = match citus::SHARD.current() {
        Some(shard) => citus::local_name(namespace, shard, table)?,
        None => None,
    };
    let name = local.as_deref().unwrap_or(table);
    let c = std::ffi::CString::new(name).map_err(|_| missing(name))?;
    Table::open(relation(namespace, &c), lock)?
        .filter(|t| t.is(&c, namespace))
        .ok_or_else(|| missing(name))
}

static LABELS_COLUMN: Columns<1> =
    Columns::new([col::<crate::types::datum::LabelSetBuf>(c"labels")]);

/// The labels stored in a row of `runs` or `artifacts` (by id), as the statement's snapshot
/// sees it, read directly (no row-level security: for the policies' own checks). On a Citus
/// shard (see [`citus::SHARD`]) the table next to it is read.
pub fn labels_of(namespace: Oid, table: &'static str, id: &Uuid) -> Result<Option<Vec<u8>>> {
    let rel = open_next_to_shard(namespace, table, crate::pg::sys::locks::AccessShareLock)?;
    let [c_labels] = rel.columns(&LABELS_COLUMN)?;
    let pkey = rel.primary_key();
    let found = rel.probe(
        pkey,
        id.datum(),
        crate::pg::sys::funcs::F_UUID_EQ,
        false,
        |found| {
            Ok(found
                .get::<LabelSetCol<'_>>(c_labels)?
                .map(|l| l.body().to_vec())
                .unwrap_or_default())
        },
    )?;
    Ok(found)
}
