//! Writing a decided step: what the database fills in (id, actor, labels, the scope it is
//! readable in, crossings, share, decision), its place in its run's hash chain, and the run's
//! row when the step brought new labels ([`LockedRun::advance`]).

use super::decide::Decided;
use super::gather::{Facts, Step};
use super::{release_0_1_0, Attempt};
use crate::pg::datum::{bytea_datum, Jsonb, Timestamp, Uuid};
use crate::pg::error::Result;
use crate::pg::role::as_owner;
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::Datum;
use crate::platform::ids;
use crate::platform::run_lock::{ChainState, LockedRun};
use crate::types::datum::{labelset_datum, scope_datum};
use pg_labels_core::chain;
use pg_labels_core::refusal;
use pg_labels_core::step;
use pg_labels_core::LabelSet;
use std::borrow::Cow;

/// Write the step: the row to return, or [`Attempt::Again`] when the run, read without its
/// lock, was written by another step first.
pub(super) fn write(
    step: &Step<'_>,
    facts: &Facts,
    decided: &Decided<'_>,
) -> Result<Attempt<Datum>> {
    let Step { row, c, .. } = step;
    let run = &facts.run;
    let mut changes = filled(step, facts, decided)?;
    // Labels accumulate: the run now carries what this step brought. The chain: the step's
    // hash links its content to its run's head, which moves on to it. The run's row is
    // written when its labels grow (and then keeps the head as its checkpoint), or when
    // the step is the run's first in another month of the ring (LockedRun::advance).
    let own_set = LabelSet::from_canonical(&decided.own);
    let carried = decided.grows.then(|| run.labels.set().union(own_set));
    match (c.chain, &run.chain) {
        (Some(columns), Some(state)) => {
            if !link(
                step,
                facts,
                decided,
                &mut changes,
                columns,
                state,
                carried.as_deref(),
            )? {
                return Ok(Attempt::Again);
            }
        }
        _ => {
            if let Some(carried) = &carried {
                release_0_1_0::grow_labels(step.owner, &step.run_id, row, c.labels, carried)?;
            }
        }
    }
    announce(step, &changes)?;
    Ok(Attempt::Done(row.modified(&changes)))
}

/// The channel on which a new approval request and each decision are announced (at commit),
/// with the request's id as the payload: listeners read what their role may read of it.
pub const APPROVALS_CHANNEL: &std::ffi::CStr = c"pg_labels_approvals";

/// Announce an approval request or its decision.
fn announce(step: &Step<'_>, changes: &[(i32, Option<Datum>)]) -> Result<()> {
    let Step { row, c, kind, .. } = step;
    let request = match kind {
        step::Kind::ApprovalRequested => match changes.iter().find(|(col, _)| *col == c.id) {
            Some((_, Some(d))) => Some(d.value() as i64),
            _ => row.get::<i64>(c.id)?,
        },
        step::Kind::ApprovalDecided => row.get::<i64>(c.request)?,
        _ => return Ok(()),
    };
    if let Some(request) = request {
        crate::pg::notify::notify(APPROVALS_CHANNEL, &request.to_string())?;
    }
    Ok(())
}

/// The crossings the step used: its verdict's, or its context read's.
#[inline]
fn crossings_used<'f>(facts: &'f Facts, decided: &'f Decided<'_>) -> &'f [i64] {
    match (&decided.verdict, &facts.read) {
        (Some(v), _) => &v.crossings,
        (None, Some(r)) => &r.outcome.crossings,
        _ => &[],
    }
}

/// What the database fills in, but for the step's place in its run's hash chain.
fn filled(
    step: &Step<'_>,
    facts: &Facts,
    decided: &Decided<'_>,
) -> Result<Vec<(i32, Option<Datum>)>> {
    let Step { c, .. } = step;
    let run = &facts.run;
    // The id, taken under the run's lock: ids follow the order in which a run's steps were
    // decided.
    // (room for every column the trigger may fill: no reallocation per row)
    let mut changes: Vec<(i32, Option<Datum>)> = Vec::with_capacity(20);
    changes.push((c.actor, Some(crate::pg::datum::text_datum(&step.actor)?)));
    if step.on_shard {
        changes.push((c.created_at, Some(Datum::from(step.now.0))));
    }
    if !step.identity_ids {
        let id = ids::next_id(step.namespace, c"steps_id_seq", step.owner)?;
        changes.push((c.id, Some(Datum::from(id))));
    }
    if let Cow::Owned(body) = &decided.own {
        changes.push((c.labels, Some(labelset_datum(body)?)));
    }
    // where the step can be read: the deepest scope that can carry what the run carries
    // with it (row-level security decides from the row alone: pg_labels.readable_in)
    if let Some(carried) = c.carried {
        let scope = decided.summary.carried_scope(&run.scope);
        // and where its run's writers read it: the run's scope, kept only when it differs
        // (a run that carries data of a wider scope under a crossing)
        if let Some(run_scope) = c.run_scope.filter(|_| scope != run.scope) {
            changes.push((run_scope, Some(scope_datum(&run.scope)?)));
        }
        changes.push((carried, Some(scope_datum(&scope)?)));
    }
    let crossings_used = crossings_used(facts, decided);
    if !crossings_used.is_empty() {
        changes.push((
            c.crossings,
            Some(crate::pg::datum::int8_array_datum(crossings_used)),
        ));
    }
    if let Some(r) = &facts.read {
        changes.push((c.share, Some(Datum::from(r.outcome.share))));
        changes.push((c.origin_run, Some(r.origin_run.datum())));
        changes.push((c.digest, Some(crate::pg::datum::text_datum(&r.digest)?)));
    }
    if let Some(v) = &decided.verdict {
        changes.push((
            c.decision,
            Some(crate::pg::datum::text_datum(v.decision.name())?),
        ));
        changes.push((
            c.rule,
            v.rule
                .map(|r| crate::pg::datum::text_datum(r.name()))
                .transpose()?,
        ));
        changes.push((
            c.reason,
            v.reason
                .as_deref()
                .map(crate::pg::datum::text_datum)
                .transpose()?,
        ));
        if step.kind == step::Kind::ToolCalled {
            changes.push((c.request, v.approval.map(Datum::from)));
        }
    }
    Ok(changes)
}

/// Link the step into its run's hash chain (its columns `prev_hash`, `hash`, in `changes`) and
/// move the run on to it (writing the run's row with what it carries now, `carried`, when its
/// labels grow): `false` when the run, read without its lock, was written by another step
/// first.
#[allow(clippy::too_many_arguments)]
fn link(
    step: &Step<'_>,
    facts: &Facts,
    decided: &Decided<'_>,
    changes: &mut Vec<(i32, Option<Datum>)>,
    [c_prev, c_hash]: [i32; 2],
    state: &ChainState,
    carried: Option<&[u8]>,
) -> Result<bool> {
    let Step {
        row,
        c,
        run_id,
        now,
        ..
    } = step;
    let run: &LockedRun = &facts.run;
    let own_set = LabelSet::from_canonical(&decided.own);
    let crossings_used = crossings_used(facts, decided);
    let id = match changes.iter().find(|(col, _)| *col == c.id) {
        Some((_, Some(d))) => d.value() as i64,
        _ => row.get::<i64>(c.id)?.unwrap_or_default(),
    };
    let text = |col: i32| -> Result<Option<&str>> {
        match changes.iter().find(|(c2, _)| *c2 == col) {
            // SAFETY: the trigger's own text datums, made above.
            Some((_, Some(d))) => unsafe {
                crate::pg::datum::read::<&str>(Some(*d), crate::pg::sys::types::TEXTOID, || {
                    String::new()
                })
            },
            Some((_, None)) => Ok(None),
            None => row.get::<&str>(col),
        }
    };
    let int = |col: i32| -> Result<Option<i64>> {
        match changes.iter().find(|(c2, _)| *c2 == col) {
            Some((_, d)) => Ok(d.map(|d| d.value() as i64)),
            None => row.get::<i64>(col),
        }
    };
    let args = row.get::<Jsonb>(c.args)?.map(|a| a.text());
    let crossing_ids: Option<Vec<i64>> = if crossings_used.is_empty() {
        row.get::<Vec<i64>>(c.crossings)?
    } else {
        Some(crossings_used.to_vec())
    };
    let scope = scope_text(&run.scope);
    let labels_after = chain::labels_next(&state.head, own_set);
    let leaf = chain::leaf(&chain::StepContent {
        id,
        run_id: run_id.0,
        kind: step.kind.name(),
        tool: step.tool,
        labels: own_set,
        args: args.as_deref(),
        decision: text(c.decision)?,
        rule: text(c.rule)?,
        reason: text(c.reason)?,
        request_id: int(c.request)?,
        origin_run: match &facts.read {
            Some(r) => Some(r.origin_run.0),
            None => row.get::<Uuid>(c.origin_run)?.map(|u| u.0),
        },
        artifact_id: row.get::<Uuid>(c.artifact)?.map(|u| u.0),
        digest: text(c.digest)?,
        share_id: int(c.share)?,
        crossing_ids: crossing_ids.as_deref(),
        actor: &step.actor,
        created_at: now.0,
        scope: &scope,
        labels_after,
        expires_at: step.expires_at,
    });
    let hash = chain::link(&state.head, &leaf);
    let slot = c.slot.map(|_| step::trail_slot(now.0));
    // A step's month is its transaction's: a transaction that began before the run's
    // last step, in an earlier month, would put a later decision into an earlier month
    // of the ring, which retention empties first (its approval's use gone, the request
    // kept: the approval usable again). Refused, to be retried in a new transaction.
    if let (Some(slot), Some(head_slot)) = (slot, state.slot) {
        if slot != head_slot && !step.on_shard {
            if let Some(last) = last_step_time(step.owner, run_id, head_slot)? {
                if step::year_month(last.0) > step::year_month(now.0) {
                    return Err(refusal::step_before_run(
                        &run_id.to_string(),
                        &pg_labels_core::retention::utc_text(now.0),
                        &pg_labels_core::retention::utc_text(last.0),
                    )
                    .into());
                }
            }
        }
    }
    if !run.advance(&hash, id, carried, slot)? {
        // another step of the run was written first: decide again on the run locked
        return Ok(false);
    }
    changes.push((c_prev, Some(bytea_datum(&state.head)?)));
    changes.push((c_hash, Some(bytea_datum(&hash)?)));
    Ok(true)
}

/// The text of a run's scope, as the chain hashes it: kept for the last scope seen, which every
/// step of a statement over one company's runs shares.
fn scope_text(scope: &[u8]) -> std::rc::Rc<str> {
    static LAST: crate::pg::local::BackendLocal<Option<(Vec<u8>, std::rc::Rc<str>)>> =
        crate::pg::local::BackendLocal::new(None);
    LAST.with(|last| match last {
        Some((bytes, text)) if bytes.as_slice() == scope => text.clone(),
        _ => {
            let text: std::rc::Rc<str> = pg_labels_core::scope::to_text(scope).into();
            *last = Some((scope.to_vec(), text.clone()));
            text
        }
    })
}

/// The time of the run's last step in a partition of the ring (with the latest snapshot: under
/// the run's lock, the steps of transactions that committed before it was granted count).
fn last_step_time(owner: crate::pg::sys::Oid, run: &Uuid, slot: i16) -> Result<Option<Timestamp>> {
    as_owner(owner, || {
        with_spi(|spi| {
            LAST_STEP_TIME
                .execute_latest(
                    spi,
                    &[
                        crate::pg::sys::types::UUIDOID,
                        crate::pg::sys::types::INT2OID,
                    ],
                    &[Some(run.datum()), Some(Datum::from(slot))],
                    1,
                )?
                .get::<Timestamp>(0, 1)
        })
    })
}

static LAST_STEP_TIME: SavedPlan = SavedPlan::new(
    c"SELECT created_at FROM pg_labels.steps WHERE run_id = $1 AND slot = $2 ORDER BY id DESC LIMIT 1",
);
