//! The sealed trail: a run's scope never changes and its labels only grow; steps are never
//! updated or deleted; neither table is truncated. Only `pg_labels.purge()` deletes, for every
//! role alike (superusers included, short of disabling the triggers).

use crate::error::Error;
use crate::fmgr::datum_labelset;
use crate::refusal;
use crate::retention::PURGING;
use crate::spi::same_image;
use crate::spi::{datum_text, uuid_text};
use crate::sql_function;
use crate::trail::{Row, TRIGGER_PROTOCOL};
use pg_labels_core::{scope, LabelSet};
use pgrx::pg_sys::{self, Datum};
use std::ffi::CStr;

unsafe fn table_name(row: &Row) -> String {
    unsafe {
        let rel = (*row.td).tg_relation;
        CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

/// A short description of the row for a DETAIL line.
unsafe fn describe(row: &Row, tuple: pg_sys::HeapTuple) -> String {
    unsafe {
        let value = |name: &CStr| row.col(name).ok().and_then(|c| row.get_in(tuple, c));
        match table_name(row).as_str() {
            "steps" => format!(
                "Step {} of run {}.",
                value(c"id").map(|d| d.value() as i64).unwrap_or_default(),
                value(c"run_id").map(|d| uuid_text(d)).unwrap_or_default()
            ),
            "runs" => format!(
                "Run {}.",
                value(c"id").map(|d| uuid_text(d)).unwrap_or_default()
            ),
            "artifacts" => format!(
                "Artifact {} of run {}.",
                value(c"id").map(|d| uuid_text(d)).unwrap_or_default(),
                value(c"origin_run")
                    .map(|d| uuid_text(d))
                    .unwrap_or_default()
            ),
            "shares" => format!(
                "Share {} of artifact {}.",
                value(c"id").map(|d| d.value() as i64).unwrap_or_default(),
                value(c"artifact_id")
                    .map(|d| uuid_text(d))
                    .unwrap_or_default()
            ),
            "agent_versions" => format!(
                "Version {} of agent {} is published.",
                value(c"version")
                    .map(|d| d.value() as i32)
                    .unwrap_or_default(),
                value(c"agent").map(|d| datum_text(d)).unwrap_or_default()
            ),
            t => format!("A row of pg_labels.{t}."),
        }
    }
}

fn purging() -> bool {
    unsafe { *PURGING.get() }
}

sql_function! {
    /// BEFORE UPDATE OR DELETE FOR EACH ROW on pg_labels.runs.
    fn pgl_runs_seal(fc) {
        let row = Row::of(fc, "pg_labels.runs_seal()")?;
        if !row.is_before_row() {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.runs_seal() must fire BEFORE ... FOR EACH ROW"));
        }
        let old = row.tuple;
        if row.op() == pg_sys::TRIGGER_EVENT_DELETE {
            if purging() {
                return Ok(Datum::from(old));
            }
            return Err(refusal::sealed("runs", "runs are never deleted".into(), describe(&row, old)));
        }
        if row.op() != pg_sys::TRIGGER_EVENT_UPDATE {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.runs_seal() must fire on UPDATE or DELETE"));
        }
        let new = (*row.td).tg_newtuple;
        let run = describe(&row, old);
        for col in 1..=(*row.desc).natts {
            let attr = row.attr(col);
            if attr.attisdropped {
                continue;
            }
            let name = CStr::from_ptr(attr.attname.data.as_ptr()).to_string_lossy().into_owned();
            let (a, b) = (row.get_in(old, col), row.get_in(new, col));
            if name == "labels" {
                let before = datum_labelset(a.ok_or_else(|| Error::corrupt("labelset"))?)?;
                let after = match b {
                    Some(d) => datum_labelset(d)?,
                    None => LabelSet::EMPTY,
                };
                if !after.is_superset(before) {
                    let lost = before.filter(|l| !after.contains(l.0));
                    return Err(refusal::sealed(
                        "runs",
                        "a run's labels only grow".into(),
                        format!("{run} It carries {} and would lose {}.", before.to_text(), LabelSet::from_canonical(&lost).to_text()),
                    ));
                }
                continue;
            }
            let same = match (a, b) {
                (None, None) => true,
                (Some(x), Some(y)) => same_image(x, y, attr),
                _ => false,
            };
            if !same {
                if name == "scope" {
                    let from = a.map(scope_text).unwrap_or_default();
                    let to = b.map(scope_text).unwrap_or_else(|| "NULL".into());
                    return Err(refusal::sealed(
                        "runs",
                        "a run's scope never changes".into(),
                        format!("{run} It was opened in scope {from} and cannot move to {to}."),
                    ));
                }
                return Err(refusal::sealed(
                    "runs",
                    format!("column {name} of a run never changes"),
                    format!("{run} Only labels may change, and only by growing."),
                ));
            }
        }
        Ok(Datum::from(new))
    }

    /// BEFORE UPDATE OR DELETE FOR EACH ROW, and BEFORE TRUNCATE, on the append-only tables.
    fn pgl_append_only(fc) {
        let row = Row::of(fc, "pg_labels.append_only()")?;
        let table = table_name(&row);
        match row.op() {
            op if table == "agent_versions" => Err(refusal::sealed(
                &table,
                format!("a published version never changes: {} of pg_labels.agent_versions is refused",
                    match op { pg_sys::TRIGGER_EVENT_TRUNCATE => "TRUNCATE", pg_sys::TRIGGER_EVENT_DELETE => "DELETE", _ => "UPDATE" }),
                if op == pg_sys::TRIGGER_EVENT_TRUNCATE { "Runs name the versions they were opened for.".to_string() } else { describe(&row, row.tuple) },
            )
            .hint("Publish a new version (the same agent, a higher version); runs keep naming the version they were opened for.")),
            pg_sys::TRIGGER_EVENT_TRUNCATE if table == "crossings" => Err(refusal::sealed(
                &table,
                "TRUNCATE of pg_labels.crossings is refused".into(),
                "pg_labels.crossings is the audited record of boundary-crossing authorizations.".into(),
            )
            .hint(crate::crossing::SEALED_HINT)),
            pg_sys::TRIGGER_EVENT_TRUNCATE => Err(refusal::sealed(
                &table,
                format!("TRUNCATE of pg_labels.{table} is refused"),
                format!("pg_labels.{table} is part of the append-only trail."),
            )),
            pg_sys::TRIGGER_EVENT_DELETE if purging() => Ok(Datum::from(row.tuple)),
            op => {
                let verb = if op == pg_sys::TRIGGER_EVENT_DELETE { "DELETE" } else { "UPDATE" };
                Err(refusal::sealed(
                    &table,
                    format!("the trail is append-only: {verb} of pg_labels.{table} is refused"),
                    describe(&row, row.tuple),
                ))
            }
        }
    }
}

fn scope_text(d: Datum) -> String {
    unsafe { crate::fmgr::datum_scope(d) }
        .map(scope::to_text)
        .unwrap_or_default()
}
