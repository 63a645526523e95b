//! Removing the extension: `pg_labels.on_drop_extension()`, an event trigger before every
//! `DROP EXTENSION`.
//!
//! `DROP EXTENSION pg_labels` would drop the trail with the extension's tables, and with
//! CASCADE the `labelset` columns of users' tables too, silently. So: while the trail holds
//! rows, the drop is refused, with or without CASCADE (`2BP01`, saying how to remove it on
//! purpose). When it holds none, any table or view left in the schema that is not a member
//! (one a DBA added) goes first (with CASCADE if the drop cascades), and the drop proceeds.
//!
//! Only a role that may drop the extension (its owner, or a superuser) gets this far: anyone
//! else is left to PostgreSQL's own ownership error, without the trigger counting the trail or
//! locking anything on their behalf.

use crate::pg::error::Result;
use crate::pg::fmgr::Call;
use crate::pg::role::as_owner;
use crate::pg::spi::{run, with_spi, SavedPlan, Sql};
use crate::pg::sys::{Datum, Oid};
use crate::pg::trigger::{drop_extension_event, platform_schema};
use crate::platform::relations::{platform_owner, relation};
use crate::sql_function;
use pg_labels_core::refusal;

/// The tables that hold the trail.
const TRAIL: [&std::ffi::CStr; 6] = [
    c"runs",
    c"steps",
    c"artifacts",
    c"shares",
    c"crossings",
    c"agent_versions",
];

/// The platform's relations: every table and view of schema pg_labels that is not a member of
/// the extension and not a partition (partitions go with their table).
static PLATFORM_RELATIONS: SavedPlan = SavedPlan::new(
    c"SELECT c.relname::text, c.relkind = 'v'
        FROM pg_catalog.pg_class c
       WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace
         AND c.relkind IN ('r', 'p', 'v') AND NOT c.relispartition
         AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                          WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                            AND d.deptype = 'e')
       ORDER BY c.relkind = 'v' DESC, c.relname",
);

/// The current role owns the extension (or is a superuser): it may drop it.
static MAY_DROP: SavedPlan = SavedPlan::new(
    c"SELECT pg_catalog.pg_has_role(e.extowner, 'USAGE') FROM pg_catalog.pg_extension e WHERE e.extname = 'pg_labels'",
);

fn may_drop() -> Result<bool> {
    with_spi(|spi| {
        Ok(MAY_DROP
            .execute(spi, &[], &[], true, 1)?
            .get::<bool>(0, 1)?
            .unwrap_or(false))
    })
}

sql_function! {
    /// Event trigger `ddl_command_start WHEN TAG IN ('DROP EXTENSION')`.
    fn pgl_on_drop_extension(call) {
        on_drop_extension(&call)
    }
}

fn on_drop_extension(call: &Call<'_>) -> Result<Datum> {
    let Some(drop) = drop_extension_event(call, "pg_labels.on_drop_extension()")? else {
        return Ok(Datum::from(0usize));
    };
    let Some(namespace) = platform_schema() else {
        return Ok(Datum::from(0usize));
    };
    if !drop.names.iter().any(|n| n == "pg_labels") {
        return Ok(Datum::from(0usize));
    }
    if !may_drop()? {
        return Ok(Datum::from(0usize));
    }
    // the schema may hold no platform tables (a restore that never brought them)
    let owner = match platform_owner() {
        Ok(o) => o,
        Err(_) => return Ok(Datum::from(0usize)),
    };
    as_owner(owner, || {
        with_spi(|spi| {
            // how many rows each trail table that exists holds
            let mut held = Vec::new();
            for t in TRAIL {
                if relation(namespace, t) == Oid::INVALID {
                    continue;
                }
                let t = t.to_str().unwrap_or_default();
                let rows = run(spi, &Sql::new("SELECT count(*) FROM ").platform(t), true)?;
                let n = rows.must::<i64>(0, 1)?;
                if n > 0 {
                    held.push((t, n));
                }
            }
            if !held.is_empty() {
                return Err(refusal::drop_refused(&held).into());
            }
            let rels = PLATFORM_RELATIONS.execute(spi, &[], &[], true, 0)?;
            let (mut views, mut tables) = (Vec::new(), Vec::new());
            for i in 0..rels.len() {
                let name: String = rels.must(i, 1)?;
                if rels.must::<bool>(i, 2)? {
                    views.push(name);
                } else {
                    tables.push(name);
                }
            }
            for (kind, names) in [
                (Sql::new("DROP VIEW "), views),
                (Sql::new("DROP TABLE "), tables),
            ] {
                if names.is_empty() {
                    continue;
                }
                let sql = kind.join(names.iter().map(|n| Sql::new("").platform(n)), ", ");
                let sql = if drop.cascade {
                    sql.push(" CASCADE")
                } else {
                    sql
                };
                run(spi, &sql, false)?;
            }
            Ok(Datum::from(0usize))
        })
    })
}
