//! The stored rows a chain is checked from: runs and their steps, read run by run and in
//! batches of steps (memory stays bounded whatever the size of a run or of the trail).

use super::*;

/// A run as its chain needs it.
#[derive(Clone)]
pub(super) struct RunRow {
    pub(super) id: Uuid,
    pub(super) agent: Option<String>,
    pub(super) agent_version: Option<i64>,
    pub(super) scope: Vec<u8>,
    pub(super) opened_labels: Option<Vec<u8>>,
    pub(super) listener_id: Option<i64>,
    pub(super) opened_at: i64,
    /// Its row's checkpoint: the chain passes through it.
    pub(super) head: Option<Hash>,
    /// Where the chain continues from after a purge, and how many steps it removed.
    pub(super) cut: Option<Hash>,
    pub(super) cut_length: i64,
    pub(super) labels: Vec<u8>,
}

pub(super) static RUN: SavedPlan = SavedPlan::new(
    c"SELECT id, agent, agent_version, scope, opened_labels, listener_id, opened_at,
             chain_head, chain_cut, chain_cut_length, labels
        FROM pg_labels.runs WHERE id = $1",
);
pub(super) static RUNS_FIRST: SavedPlan = SavedPlan::new(
    c"SELECT id, agent, agent_version, scope, opened_labels, listener_id, opened_at,
             chain_head, chain_cut, chain_cut_length, labels
        FROM pg_labels.runs ORDER BY id LIMIT 1000",
);
pub(super) static RUNS_NEXT: SavedPlan = SavedPlan::new(
    c"SELECT id, agent, agent_version, scope, opened_labels, listener_id, opened_at,
             chain_head, chain_cut, chain_cut_length, labels
        FROM pg_labels.runs WHERE id > $1 ORDER BY id LIMIT 1000",
);

/// A stored step, as its chain needs it.
pub(super) struct StepRow {
    pub(super) id: i64,
    pub(super) kind: String,
    pub(super) tool: Option<String>,
    pub(super) labels: Vec<u8>,
    pub(super) args: Option<String>,
    pub(super) decision: Option<String>,
    pub(super) rule: Option<String>,
    pub(super) reason: Option<String>,
    pub(super) request_id: Option<i64>,
    pub(super) origin_run: Option<Uuid>,
    pub(super) artifact_id: Option<Uuid>,
    pub(super) digest: Option<String>,
    pub(super) share_id: Option<i64>,
    pub(super) crossing_ids: Option<Vec<i64>>,
    pub(super) actor: String,
    pub(super) created_at: i64,
    pub(super) prev: Option<Hash>,
    pub(super) hash: Option<Hash>,
    pub(super) slot: i16,
    /// An approval request's expiry (release 0.3.1).
    pub(super) expires_at: Option<i64>,
}

/// Steps are read this many at a time.
pub(super) const BATCH: i64 = 5000;

pub(super) static STEPS: SavedPlan = SavedPlan::new(
    c"SELECT id, kind, tool, labels, args::text, decision, rule, reason, request_id, origin_run,
             artifact_id, digest, share_id, crossing_ids, actor, created_at, prev_hash, hash, slot,
             expires_at
        FROM pg_labels.steps WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT 5000",
);

/// The same, in a trail of a release before 0.3.1 (until ALTER EXTENSION UPDATE): no step
/// expires.
pub(super) static STEPS_BEFORE_0_3_1: SavedPlan = SavedPlan::new(
    c"SELECT id, kind, tool, labels, args::text, decision, rule, reason, request_id, origin_run,
             artifact_id, digest, share_id, crossing_ids, actor, created_at, prev_hash, hash, slot,
             NULL::timestamptz
        FROM pg_labels.steps WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT 5000",
);

pub(super) fn hash_of(b: Option<Bytea>) -> Option<Hash> {
    b.and_then(|b| b.0.try_into().ok())
}

pub(super) fn read_runs(rows: &crate::pg::spi::Rows<'_>) -> Result<Vec<RunRow>> {
    (0..rows.len())
        .map(|i| {
            Ok(RunRow {
                id: rows.must::<Uuid>(i, 1)?,
                agent: rows.get::<String>(i, 2)?,
                agent_version: rows.get::<i32>(i, 3)?.map(i64::from),
                scope: rows.must::<ScopeBuf>(i, 4)?.0,
                opened_labels: rows.get::<LabelSetBuf>(i, 5)?.map(|l| l.0),
                listener_id: rows.get::<i64>(i, 6)?,
                opened_at: rows.must::<Timestamp>(i, 7)?.0,
                head: hash_of(rows.get::<Bytea>(i, 8)?),
                cut: hash_of(rows.get::<Bytea>(i, 9)?),
                cut_length: rows.get::<i64>(i, 10)?.unwrap_or_default(),
                labels: rows.must::<LabelSetBuf>(i, 11)?.0,
            })
        })
        .collect()
}

/// One run by id (`None` when there is none the caller can see).
pub(super) fn run_row(id: &Uuid) -> Result<Option<RunRow>> {
    with_spi(|spi| {
        let rows = RUN.execute(
            spi,
            &[crate::pg::sys::types::UUIDOID],
            &[Some(id.datum())],
            true,
            1,
        )?;
        Ok(read_runs(&rows)?.pop())
    })
}

/// Every run, in id order, a batch at a time.
pub(super) fn each_run(mut f: impl FnMut(RunRow) -> Result<()>) -> Result<()> {
    let mut after: Option<Uuid> = None;
    loop {
        let batch = with_spi(|spi| {
            let rows = match &after {
                None => RUNS_FIRST.execute(spi, &[], &[], true, 0)?,
                Some(a) => RUNS_NEXT.execute(
                    spi,
                    &[crate::pg::sys::types::UUIDOID],
                    &[Some(a.datum())],
                    true,
                    0,
                )?,
            };
            read_runs(&rows)
        })?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = Some(last.id);
        for r in batch {
            f(r)?;
        }
    }
}

/// The steps of a run in id order, a batch at a time, until `f` says stop.
pub(super) fn each_step(run: &Uuid, mut f: impl FnMut(StepRow) -> Result<bool>) -> Result<()> {
    let mut after = i64::MIN;
    let expire = with_spi(crate::platform::approvals::trail_expires)?;
    let plan = if expire { &STEPS } else { &STEPS_BEFORE_0_3_1 };
    loop {
        let batch: Vec<StepRow> = with_spi(|spi| {
            let rows = plan.execute(
                spi,
                &[
                    crate::pg::sys::types::UUIDOID,
                    crate::pg::sys::types::INT8OID,
                ],
                &[Some(run.datum()), Some(Datum::from(after))],
                true,
                0,
            )?;
            (0..rows.len())
                .map(|i| {
                    Ok(StepRow {
                        id: rows.must::<i64>(i, 1)?,
                        kind: rows.must::<String>(i, 2)?,
                        tool: rows.get::<String>(i, 3)?,
                        labels: rows.must::<LabelSetBuf>(i, 4)?.0,
                        args: rows.get::<String>(i, 5)?,
                        decision: rows.get::<String>(i, 6)?,
                        rule: rows.get::<String>(i, 7)?,
                        reason: rows.get::<String>(i, 8)?,
                        request_id: rows.get::<i64>(i, 9)?,
                        origin_run: rows.get::<Uuid>(i, 10)?,
                        artifact_id: rows.get::<Uuid>(i, 11)?,
                        digest: rows.get::<String>(i, 12)?,
                        share_id: rows.get::<i64>(i, 13)?,
                        crossing_ids: rows.get::<Vec<i64>>(i, 14)?,
                        actor: rows.get::<String>(i, 15)?.unwrap_or_default(),
                        created_at: rows.must::<Timestamp>(i, 16)?.0,
                        prev: hash_of(rows.get::<Bytea>(i, 17)?),
                        hash: hash_of(rows.get::<Bytea>(i, 18)?),
                        slot: rows.get::<i16>(i, 19)?.unwrap_or_default(),
                        expires_at: rows.get::<Timestamp>(i, 20)?.map(|t| t.0),
                    })
                })
                .collect()
        })?;
        let full = batch.len() as i64 == BATCH;
        for s in batch {
            after = s.id;
            if !f(s)? {
                return Ok(());
            }
        }
        if !full {
            return Ok(());
        }
    }
}
