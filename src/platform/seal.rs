//! The sealed trail: a run's scope never changes and its labels only grow; steps, artifacts,
//! shares and published versions are never updated or deleted; none of them is truncated. Only
//! `pg_labels.purge()` deletes, for every role alike (superusers included, short of disabling
//! the triggers).

use crate::pg::datum::Uuid;
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::Call;
use crate::pg::sys::Datum;
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::pg::tuple::Tuple;
use crate::platform::state::PURGING;
use crate::sql_function;
use crate::types::datum::ScopeBuf;
use pg_labels_core::refusal;
use pg_labels_core::{scope, LabelSet};

const RUNS_SEAL: Spec = Spec {
    function: "pg_labels.runs_seal()",
    tables: &["runs"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Update, Op::Delete],
};

/// The append-only tables and their row-level guard.
const APPEND_ONLY_TABLES: &[&str] = &[
    "steps",
    "artifacts",
    "shares",
    "agent_versions",
    "refused_writes",
];

const APPEND_ONLY_ROW: Spec = Spec {
    function: "pg_labels.append_only()",
    tables: APPEND_ONLY_TABLES,
    timing: Timing::Before,
    row: true,
    ops: &[Op::Update, Op::Delete],
};

/// TRUNCATE is refused on every platform table that holds the trail or its record.
const NO_TRUNCATE: Spec = Spec {
    function: "pg_labels.append_only()",
    tables: &[
        "runs",
        "steps",
        "artifacts",
        "shares",
        "agent_versions",
        "crossings",
        "refused_writes",
    ],
    timing: Timing::Before,
    row: false,
    ops: &[Op::Truncate],
};

/// A short description of the row for a DETAIL line.
fn describe(table: &str, row: &Tuple<'_>) -> String {
    let col = |name: &str| {
        row.columns()
            .into_iter()
            .find(|(_, n)| n == name)
            .map(|(c, _)| c)
    };
    let uuid = |name: &str| -> String {
        col(name)
            .and_then(|c| row.get::<Uuid>(c).ok().flatten())
            .map(|u| u.to_string())
            .unwrap_or_default()
    };
    let int = |name: &str| -> i64 {
        col(name)
            .and_then(|c| {
                row.get::<i64>(c)
                    .ok()
                    .flatten()
                    .or_else(|| row.get::<i32>(c).ok().flatten().map(i64::from))
            })
            .unwrap_or_default()
    };
    match table {
        "steps" => format!("Step {} of run {}.", int("id"), uuid("run_id")),
        "runs" => format!("Run {}.", uuid("id")),
        "artifacts" => format!("Artifact {} of run {}.", uuid("id"), uuid("origin_run")),
        "shares" => format!("Share {} of artifact {}.", int("id"), uuid("artifact_id")),
        "refused_writes" => format!("The record {} of a refused write.", int("id")),
        "agent_versions" => format!(
            "Version {} of agent {} is published.",
            int("version"),
            col("agent")
                .and_then(|c| row.get::<String>(c).ok().flatten())
                .unwrap_or_default()
        ),
        t => format!("A row of pg_labels.{t}."),
    }
}

fn purging() -> bool {
    PURGING.current().is_some()
}

sql_function! {
    /// BEFORE UPDATE OR DELETE FOR EACH ROW on pg_labels.runs.
    fn pgl_runs_seal(call) {
        crate::platform::refused::guarded("run", || runs_seal(&call))
    }

    /// BEFORE UPDATE OR DELETE FOR EACH ROW, and BEFORE TRUNCATE, on the append-only tables.
    fn pgl_append_only(call) {
        crate::platform::refused::guarded("change", || append_only(&call))
    }
}

fn runs_seal(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &RUNS_SEAL)?;
    let old = trigger.row();
    // a statement changes a run: what this transaction knew of its runs is read again
    crate::platform::run_lock::forget_runs();
    if trigger.op() == Op::Delete {
        if purging() {
            return Ok(old.unchanged());
        }
        return Err(refusal::sealed(
            "runs",
            "runs are never deleted".into(),
            describe("runs", &old),
        )
        .into());
    }
    let new = trigger.new_row();
    let run = describe("runs", &old);
    // where the run can be read follows its labels, whatever the statement set (none before
    // release 0.3.1): an update that grows the labels (or fills it, after a restore of an
    // older dump) writes it
    let mut carried = None;
    for (c, name) in old.columns() {
        if name == "carried_scope" {
            carried = Some(c);
            continue;
        }
        if name == "labels" {
            let before = old
                .get::<LabelSet<'_>>(c)?
                .ok_or_else(|| Error::corrupt("labelset"))?;
            let after = new.get::<LabelSet<'_>>(c)?.unwrap_or(LabelSet::EMPTY);
            if !after.is_superset(before) {
                let lost = before.filter(|l| !after.contains(l.0));
                return Err(refusal::sealed(
                    "runs",
                    "a run's labels only grow".into(),
                    format!(
                        "{run} It carries {} and would lose {}.",
                        before.to_text_capped(refusal::LIST_LIMIT),
                        LabelSet::from_canonical(&lost).to_text_capped(refusal::LIST_LIMIT)
                    ),
                )
                .into());
            }
            continue;
        }
        if old.same(&new, c) {
            continue;
        }
        // purge() records where it cut the run's hash chain (and moves the run's checkpoint
        // to the cut when the checkpoint goes)
        if purging() && (name == "chain_cut" || name == "chain_cut_length" || name == "chain_head")
        {
            continue;
        }
        if name == "scope" {
            let text = |t: &Tuple<'_>| {
                t.get::<ScopeBuf>(c)
                    .ok()
                    .flatten()
                    .map(|s| scope::to_text(&s.0))
            };
            let from = text(&old).unwrap_or_default();
            let to = text(&new).unwrap_or_else(|| "NULL".into());
            return Err(refusal::sealed(
                "runs",
                "a run's scope never changes".into(),
                format!("{run} It was opened in scope {from} and cannot move to {to}."),
            )
            .into());
        }
        return Err(refusal::sealed(
            "runs",
            format!("column {name} of a run never changes"),
            format!("{run} Only labels may change, and only by growing."),
        )
        .into());
    }
    match carried {
        Some(c) => {
            let labels_column = new.columns().into_iter().find(|(_, n)| n == "labels");
            let scope = match labels_column {
                Some((l, _)) => new
                    .get::<LabelSet<'_>>(l)?
                    .and_then(|set| set.scope().map(<[u8]>::to_vec)),
                None => None,
            };
            let datum = scope
                .as_deref()
                .map(crate::types::datum::scope_datum)
                .transpose()?;
            Ok(new.modified(&[(c, datum)]))
        }
        None => Ok(new.unchanged()),
    }
}

fn append_only(call: &Call<'_>) -> Result<Datum> {
    // the statement-level TRUNCATE guard, or the row-level UPDATE/DELETE guard
    let trigger = match Trigger::fired(call, &NO_TRUNCATE) {
        Ok(t) => t,
        Err(truncate_error) => match Trigger::fired(call, &APPEND_ONLY_ROW) {
            Ok(t) => t,
            Err(row_error) => {
                // name the guard that fits what fired it best
                return Err(if is_truncate(call) {
                    truncate_error
                } else {
                    row_error
                });
            }
        },
    };
    let table = trigger.table();
    let op = trigger.op();
    crate::platform::refused::about(|a| a.kind = format!("{} of {table}", op.verb()).into());
    if table == "agent_versions" {
        return Err(refusal::version_sealed(
            format!(
                "a published version never changes: {} of pg_labels.agent_versions is refused",
                op.verb()
            ),
            if op == Op::Truncate {
                "Runs name the versions they were opened for.".to_string()
            } else {
                describe(table, &trigger.row())
            },
        )
        .into());
    }
    match op {
        // purge() empties whole months of the trail's ring
        Op::Truncate if table == "steps" && purging() => Ok(trigger.unchanged()),
        Op::Truncate if table == "crossings" => Err(refusal::crossing_sealed(
            "TRUNCATE of pg_labels.crossings is refused".into(),
            "pg_labels.crossings is the audited record of boundary-crossing authorizations.".into(),
        )
        .into()),
        Op::Truncate => Err(refusal::sealed(
            table,
            format!("TRUNCATE of pg_labels.{table} is refused"),
            format!("pg_labels.{table} is part of the append-only trail."),
        )
        .into()),
        Op::Delete if purging() => Ok(trigger.row().unchanged()),
        // a superuser fills the scope a step, share or artifact of an earlier release is read in
        Op::Update if fills_carried_scope(&trigger) => Ok(trigger.new_row().unchanged()),
        op => Err(refusal::sealed(
            table,
            format!(
                "the trail is append-only: {} of pg_labels.{table} is refused",
                op.verb()
            ),
            describe(table, &trigger.row()),
        )
        .into()),
    }
}

/// Is this update of a step, a share or an artifact a superuser session's filling of
/// `carried_scope`, the scope a row of an earlier release is read in (the updates from 0.2.0
/// and 0.3.0, `start_chains()` after a restore of such a dump): that column from NULL to a
/// value, and nothing else changed?
fn fills_carried_scope(trigger: &Trigger<'_>) -> bool {
    if !matches!(trigger.table(), "steps" | "shares" | "artifacts")
        || !crate::pg::role::superuser_session()
    {
        return false;
    }
    let (old, new) = (trigger.row(), trigger.new_row());
    let mut filled = false;
    for (c, name) in old.columns() {
        // (carried_scope, and run_scope since release 0.3.1: where analysts and the run's
        // writers read the row)
        if name == "carried_scope" || name == "run_scope" {
            if old.same(&new, c) {
                continue;
            }
            if !(old.datum(c).is_none() && new.datum(c).is_some()) {
                return false;
            }
            filled = true;
        } else if !old.same(&new, c) {
            return false;
        }
    }
    filled
}

fn is_truncate(call: &Call<'_>) -> bool {
    crate::pg::trigger::fired_by_truncate(call)
}
