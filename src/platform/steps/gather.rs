//! Gathering a step: the row, once ([`step`]), and on each attempt at deciding it the run it is
//! decided on, the tool's catalog entry and a context read's artifact ([`Facts::gather`]).

use super::release_0_1_0;
use crate::pg::columns::{col, Columns};
use crate::pg::datum::{Bytea, Jsonb, Timestamp, Uuid};
use crate::pg::error::{Error, Result};
use crate::pg::local::BackendLocal;
use crate::pg::role::{as_owner, current_user_name};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::{Datum, Oid};
use crate::pg::trigger::Trigger;
use crate::pg::tuple::Tuple;
use crate::platform::context::{self, refuse_given, trail_time};
use crate::platform::run_lock::{self, LockedRun};
use crate::platform::sharing;
use crate::platform::state::DECIDING;
use crate::platform::tools::{self, Tool};
use crate::platform::{ids, refused};
use crate::types::datum::{LabelSetBuf, ScopeBuf};
use pg_labels_core::refusal;
use pg_labels_core::step::{self, Column, Kind};
use pg_labels_core::LabelSet;
use std::ops::ControlFlow;

static COLUMNS: Columns<17> = Columns::new([
    col::<i64>(c"id"),
    col::<Uuid>(c"run_id"),
    col::<String>(c"kind"),
    col::<String>(c"tool"),
    col::<LabelSetBuf>(c"labels"),
    col::<Jsonb>(c"args"),
    col::<String>(c"decision"),
    col::<String>(c"rule"),
    col::<String>(c"reason"),
    col::<i64>(c"request_id"),
    col::<String>(c"actor"),
    col::<Uuid>(c"origin_run"),
    col::<Uuid>(c"artifact_id"),
    col::<String>(c"digest"),
    col::<i64>(c"share_id"),
    col::<Vec<i64>>(c"crossing_ids"),
    col::<Timestamp>(c"created_at"),
]);

/// The ring slot (a table of release 0.1.0, until ALTER EXTENSION UPDATE, has none).
static SLOT: Columns<1> = Columns::new([col::<i16>(c"slot")]);

/// The step's place in its run's hash chain (none either, in release 0.1.0).
static CHAIN: Columns<2> = Columns::new([col::<Bytea>(c"prev_hash"), col::<Bytea>(c"hash")]);

/// The scope the step is readable in (none before release 0.3.0).
static CARRIED: Columns<1> = Columns::new([col::<ScopeBuf>(c"carried_scope")]);
/// The run's scope, when the step is read in a wider one (release 0.3.1).
static RUN_SCOPE: Columns<1> = Columns::new([col::<ScopeBuf>(c"run_scope")]);
/// When an approval request expires (release 0.3.1).
static EXPIRES: Columns<1> = Columns::new([col::<Timestamp>(c"expires_at")]);

/// The columns of a step, by name.
#[derive(Clone, Copy)]
pub(super) struct Cols {
    pub(super) id: i32,
    pub(super) run: i32,
    pub(super) kind: i32,
    pub(super) tool: i32,
    pub(super) labels: i32,
    pub(super) args: i32,
    pub(super) decision: i32,
    pub(super) rule: i32,
    pub(super) reason: i32,
    pub(super) request: i32,
    pub(super) actor: i32,
    pub(super) origin_run: i32,
    pub(super) artifact: i32,
    pub(super) digest: i32,
    pub(super) share: i32,
    pub(super) crossings: i32,
    pub(super) created_at: i32,
    /// `None` in a table of release 0.1.0 ([`release_0_1_0`]).
    pub(super) slot: Option<i32>,
    /// `None` in a table of release 0.1.0 ([`release_0_1_0`]).
    pub(super) chain: Option<[i32; 2]>,
    /// `None` in a table of a release before 0.3.0 (0.1.0 and 0.2.0, until ALTER EXTENSION
    /// UPDATE: the option can go when both have left `sql/released/`).
    pub(super) carried: Option<i32>,
    /// `None` in a table of a release before 0.3.1.
    pub(super) run_scope: Option<i32>,
    /// `None` in a table of a release before 0.3.1.
    pub(super) expires_at: Option<i32>,
}

/// The columns of the last relation resolved, and the count of invalidations they were resolved
/// at ([`crate::pg::inval`]: a column dropped, added or renamed is a relation's invalidation).
/// Every row of a statement, and every statement until the table changes, reads them here
/// instead of checking seven lists of names again.
static RESOLVED: BackendLocal<Option<(Oid, u64, Cols)>> = BackendLocal::new(None);

impl Cols {
    fn of(row: &Tuple<'_>) -> Result<Cols> {
        let generation = crate::pg::inval::generation();
        let relid = row.relid();
        if let Some((r, g, c)) = RESOLVED.get() {
            if r == relid && g == generation {
                return Ok(c);
            }
        }
        let c = Cols::resolve(row)?;
        RESOLVED.set(Some((relid, generation, c)));
        Ok(c)
    }

    fn resolve(row: &Tuple<'_>) -> Result<Cols> {
        let [id, run, kind, tool, labels, args, decision, rule, reason, request, actor, origin_run, artifact, digest, share, crossings, created_at] =
            COLUMNS.of(row)?;
        let slot = SLOT.of(row).ok().map(|[s]| s);
        let chain = CHAIN.of(row).ok();
        let carried = CARRIED.of(row).ok().map(|[c]| c);
        let run_scope = RUN_SCOPE.of(row).ok().map(|[c]| c);
        let expires_at = EXPIRES.of(row).ok().map(|[c]| c);
        Ok(Cols {
            id,
            run,
            kind,
            tool,
            labels,
            args,
            decision,
            rule,
            reason,
            request,
            actor,
            origin_run,
            artifact,
            digest,
            share,
            crossings,
            created_at,
            slot,
            chain,
            carried,
            run_scope,
            expires_at,
        })
    }

    /// The column, if the table has it.
    fn of_column(&self, c: Column) -> Option<i32> {
        Some(match c {
            Column::Tool => self.tool,
            Column::Args => self.args,
            Column::Reason => self.reason,
            Column::Decision => self.decision,
            Column::Rule => self.rule,
            Column::RequestId => self.request,
            Column::OriginRun => self.origin_run,
            Column::ArtifactId => self.artifact,
            Column::Digest => self.digest,
            Column::ShareId => self.share,
            Column::CrossingIds => self.crossings,
            Column::ExpiresAt => return self.expires_at,
        })
    }
}

/// What the row says, gathered once: the step is decided on it as many times as it takes.
pub(super) struct Step<'a> {
    pub(super) row: Tuple<'a>,
    pub(super) c: Cols,
    pub(super) run_id: Uuid,
    pub(super) kind: Kind,
    /// The time the trail records ([`trail_time`]).
    pub(super) now: Timestamp,
    /// On a Citus shard, where the row's time was filled where the statement entered the
    /// cluster: the trigger writes its own ([`context::on_shard`]).
    pub(super) on_shard: bool,
    /// The ids come from an identity column ([`release_0_1_0`]), not from `steps_id_seq`.
    pub(super) identity_ids: bool,
    /// Who writes the step: the role, or for an approval decision the person deciding.
    pub(super) actor: String,
    pub(super) tool: Option<&'a str>,
    /// The step's own labels, as written.
    pub(super) labels: LabelSet<'a>,
    /// An approval request's expiry, as written.
    pub(super) expires_at: Option<i64>,
    pub(super) namespace: Oid,
    pub(super) owner: Oid,
}

/// Gather the row: its kind, its run, who writes it; refuse what the database writes if the
/// writer gave it, and a row that does not have its kind's shape. A step to decide, or (break)
/// the row to return, which needs no decision (a kind the table's CHECK constraint refuses).
pub(super) fn step<'a>(
    trigger: &Trigger<'a>,
    row: Tuple<'a>,
) -> Result<ControlFlow<Datum, Step<'a>>> {
    let c = Cols::of(&row)?;
    let run_id: Uuid = row.must(c.run, "steps")?;
    let Some(kind) = row.get::<&str>(c.kind)?.map(|k| (k, Kind::parse(k))) else {
        return Err(crate::pg::tuple::not_null("steps", "kind"));
    };
    // an unknown kind is refused by the table's CHECK constraint (steps_kind_check), once the
    // row is otherwise complete
    let (_, Some(kind)) = kind else {
        if release_0_1_0::identity_ids(&row, c.id) {
            return Ok(ControlFlow::Break(row.unchanged()));
        }
        let id = ids::next_id(trigger.namespace(), c"steps_id_seq", trigger.owner())?;
        return Ok(ControlFlow::Break(
            row.modified(&[(c.id, Some(Datum::from(id)))]),
        ));
    };
    // what a refusal's record names (platform::refused)
    refused::about(|a| {
        a.kind = kind.name().into();
        a.run = Some(run_id);
        a.tool = row.get::<String>(c.tool).ok().flatten();
    });
    let identity_ids = release_0_1_0::identity_ids(&row, c.id);
    if row.datum(c.id).is_some() && !identity_ids {
        return Err(refuse_given("steps", "id", "assigned in decision order"));
    }
    let now = trail_time();
    // on a Citus shard the row's time was filled where the statement entered the cluster:
    // the trigger writes its own (context::on_shard)
    let on_shard = context::on_shard();
    if !on_shard && row.get::<Timestamp>(c.created_at)? != Some(now) {
        return Err(refuse_given(
            "steps",
            "created_at",
            "the time the database recorded it",
        ));
    }
    if let Some(slot) = c.slot {
        if row.get::<i16>(slot)? != Some(step::trail_slot(now.0)) {
            return Err(refuse_given(
                "steps",
                "slot",
                "the month of the step's time",
            ));
        }
    }
    if let Some(chain) = c.chain {
        for (col, name) in chain.iter().zip(["prev_hash", "hash"]) {
            if row.datum(*col).is_some() {
                return Err(refuse_given(
                    "steps",
                    name,
                    "the step's place in its run's hash chain",
                ));
            }
        }
    }
    if let Some(carried) = c.carried {
        if row.datum(carried).is_some() {
            return Err(refuse_given(
                "steps",
                "carried_scope",
                "the scope of what the run carried once the step was written",
            ));
        }
    }
    if let Some(run_scope) = c.run_scope {
        if row.datum(run_scope).is_some() {
            return Err(refuse_given("steps", "run_scope", "its run's scope"));
        }
    }
    // (read once: the last column of a row with NULLs before it is found by walking them)
    let expires_at = match c.expires_at {
        Some(col) => row.get::<Timestamp>(col)?.map(|t| t.0),
        None => None,
    };
    let actor = actor(trigger, &row, &c, kind, expires_at.is_some())?;
    // a request's expiry: finite, and within a century of the request (a request that never
    // expires has none)
    if expires_at.is_some_and(|at| !step::expiry_in_range(now.0, at)) {
        return Err(refusal::expiry_out_of_range().into());
    }
    let tool = row.get::<&str>(c.tool)?;
    let labels = row.must::<LabelSet<'_>>(c.labels, "steps")?;
    Ok(ControlFlow::Continue(Step {
        c,
        run_id,
        kind,
        now,
        on_shard,
        identity_ids,
        actor,
        tool,
        labels,
        expires_at,
        namespace: trigger.namespace(),
        owner: trigger.owner(),
        row,
    }))
}

/// Who writes the step, and the step's shape. An approval decision is written by
/// pg_labels.decide_approval() on behalf of the person deciding, and only by it.
fn actor(
    trigger: &Trigger<'_>,
    row: &Tuple<'_>,
    c: &Cols,
    kind: Kind,
    expires: bool,
) -> Result<String> {
    let writer = current_user_name();
    if kind == Kind::ApprovalDecided {
        let request = row.get::<i64>(c.request)?;
        return match DECIDING.current() {
            Some((r, approver)) if Some(r) == request => Ok(approver),
            // On a Citus shard the decision comes from decide_approval() on the node the
            // statement entered, which writes it as the tables' owner and names the decider.
            None if context::owner_on_shard(trigger.owner()) => {
                match row.get::<String>(c.actor)? {
                    Some(approver) => Ok(approver),
                    None => Err(refusal::decision_not_through_function(&writer).into()),
                }
            }
            _ => Err(refusal::decision_not_through_function(&writer).into()),
        };
    }
    if row.get::<&str>(c.actor)?.is_some_and(|a| a != writer) {
        return Err(refuse_given(
            "steps",
            "actor",
            "the role that wrote the step",
        ));
    }
    step::check(kind, |col| match col {
        Column::ExpiresAt => expires,
        _ => c.of_column(col).is_some_and(|i| row.datum(i).is_some()),
    })
    .map_err(|e| {
        if e.fill == step::Fill::Required && e.column == Column::ArtifactId {
            return Error::from(refusal::read_without_artifact());
        }
        Error::from(refusal::step_shape(
            kind.name(),
            e.column.name(),
            e.to_string(),
            e.fill == step::Fill::Database,
        ))
    })?;
    Ok(writer)
}

/// What a step is decided on, gathered on each attempt: its run (read, or locked), the tool's
/// catalog entry, and for a context read the artifact, judged as it is gathered.
pub(super) struct Facts {
    pub(super) run: LockedRun,
    pub(super) tool: Option<Tool>,
    pub(super) read: Option<sharing::Read>,
}

impl Facts {
    /// Gather the run (locked if `lock`, else as [`run_lock::read_run`] does) and what the
    /// step needs of the database besides.
    pub(super) fn gather(step: &Step<'_>, lock: bool) -> Result<Facts> {
        let Step { row, c, run_id, .. } = step;
        let run = if lock {
            run_lock::lock_run(step.namespace, run_id)
        } else {
            run_lock::read_run(step.namespace, run_id)
        }?
        .ok_or_else(|| Error::from(refusal::no_run(&run_id.to_string(), "steps_run_id_fkey")))?;
        refused::about(|a| a.run_scope = Some(run.scope.clone()));
        // a writer writes steps only to runs its grants reach; another's run is answered as
        // one that does not exist
        if !crate::platform::grants::reaches(crate::platform::grants::acting(), &run.scope)? {
            return Err(refusal::no_run(&run_id.to_string(), "steps_run_id_fkey").into());
        }
        // one decision per request: checked under the run's lock, which orders the deciders (a
        // decision committed stays; one being written holds the run's row, which this step's
        // write then waits for)
        if step.kind == Kind::ApprovalDecided {
            let request = row.get::<i64>(c.request)?.unwrap_or_default();
            if decided(step.owner, run_id, request)? {
                return Err(refusal::already_decided(request).into());
            }
        }
        let tool = match step.tool {
            Some(name) if step.kind.reads_tool() => tools::tool(step.namespace, name)?,
            _ => None,
        };
        let read = if step.kind == Kind::ContextRead {
            let artifact: Uuid = row.must(c.artifact, "steps")?;
            Some(sharing::read(
                step.owner,
                run_id,
                &run.scope,
                &artifact,
                row.get::<Uuid>(c.origin_run)?,
                row.get::<&str>(c.digest)?,
                step.labels,
            )?)
        } else {
            None
        };
        Ok(Facts { run, tool, read })
    }
}

/// Has the request been decided already (as committed now)? Called under the run's lock.
fn decided(owner: crate::pg::sys::Oid, run: &Uuid, request: i64) -> Result<bool> {
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = DECIDED.execute_latest(
                spi,
                &[
                    crate::pg::sys::types::UUIDOID,
                    crate::pg::sys::types::INT8OID,
                ],
                &[Some(run.datum()), Some(Datum::from(request))],
                1,
            )?;
            Ok(!rows.is_empty())
        })
    })
}

static DECIDED: SavedPlan = SavedPlan::new(
    c"SELECT FROM pg_labels.steps d
       WHERE d.run_id = $1 AND d.request_id = $2 AND d.kind = 'approval_decided'",
);
