//! Retention: the one deliberate way rows leave the trail.
//!
//! `pg_labels.purge(older_than)`:
//! 1. empties every month of the trail's ring (`pg_labels.steps_00` .. `steps_23`) whose rows
//!    are all older than the month the cutoff falls in (by their `created_at`, read from the
//!    partition's index: its newest row): `TRUNCATE` of the partition, in constant time
//!    whatever it holds (no row deleted one by one, no WAL per row). A partition that also holds
//!    later rows (purge was not run for two years, or a row restored with an old time into the
//!    present's partition) has its older rows deleted instead.
//!    First, every run with steps that go records where its hash chain is cut (`chain_cut`,
//!    `chain_cut_length`, and `chain_head` when its checkpoint goes): one read of what goes,
//!    grouped by run, and one write per such run;
//! 2. deletes whole runs opened before the cutoff with nothing at or after it (no step, no
//!    artifact made, no share of their artifacts or to them), with their remaining steps (in
//!    the month the cutoff falls in), artifacts and shares. Only this part deletes row by row,
//!    and only the rows of such runs.
//!
//! It never removes the present: a cutoff later than the start of the month
//! [`retention::MIN_RETENTION_MONTHS`] before the current one (UTC), an infinite one or none
//! is refused first (`pg_labels_core::retention`). What it removed goes to the server log, with
//! counts. Every statement takes the cutoff as a parameter; the partitions' names, found in
//! the catalog, are quoted identifiers ([`Sql`]).

use crate::pg::datum::Timestamp;
use crate::pg::error::{log, Error, Result, LOCK_NOT_AVAILABLE};
use crate::pg::role::{as_owner, current_user_name};
use crate::pg::spi::{run, run_with, with_spi, SavedPlan, Spi, Sql};
use crate::pg::sys::Datum;
use crate::platform::context::trail_time;
use crate::platform::relations::platform_owner;
use crate::platform::state::PURGING;
use crate::sql_function;
use pg_labels_core::retention;

/// Whole runs opened before the cutoff with nothing at or after it (no step, no artifact made,
/// no share of its artifacts or to it): their shares, artifacts and steps, then them; how many
/// of each. Steps of other runs that read a purged artifact keep its id, origin run and digest
/// (copied into the step when it was read). Crossings are the audit record of authorizations
/// and are kept.
static PURGE: SavedPlan = SavedPlan::new(
    c"WITH doomed AS (
          SELECT r.id FROM pg_labels.runs r
           WHERE r.opened_at < $1
             AND NOT EXISTS (SELECT FROM pg_labels.steps s WHERE s.run_id = r.id AND s.created_at >= $1)
             AND NOT EXISTS (SELECT FROM pg_labels.artifacts a WHERE a.origin_run = r.id AND a.created_at >= $1)
             AND NOT EXISTS (SELECT FROM pg_labels.shares sh JOIN pg_labels.artifacts a ON a.id = sh.artifact_id
                              WHERE a.origin_run = r.id AND sh.created_at >= $1)
             AND NOT EXISTS (SELECT FROM pg_labels.shares sh WHERE sh.to_run = r.id AND sh.created_at >= $1)
             FOR UPDATE OF r
      ), gone_shares AS (
          DELETE FROM pg_labels.shares sh
           WHERE sh.to_run IN (SELECT id FROM doomed)
              OR sh.artifact_id IN (SELECT a.id FROM pg_labels.artifacts a JOIN doomed d ON a.origin_run = d.id)
          RETURNING 1
      ), gone_artifacts AS (
          DELETE FROM pg_labels.artifacts a USING doomed d WHERE a.origin_run = d.id RETURNING 1
      ), gone_steps AS (
          DELETE FROM pg_labels.steps s USING doomed d WHERE s.run_id = d.id RETURNING 1
      ), gone_runs AS (
          DELETE FROM pg_labels.runs r USING doomed d WHERE r.id = d.id RETURNING 1
      )
      SELECT (SELECT count(*) FROM gone_runs), (SELECT count(*) FROM gone_steps),
             (SELECT count(*) FROM gone_artifacts), (SELECT count(*) FROM gone_shares)",
);

/// The records of refused writes of the months that go.
static PURGE_REFUSED: SavedPlan =
    SavedPlan::new(c"DELETE FROM pg_labels.refused_writes WHERE refused_at < $1");

/// The partitions of the trail's ring that exist (none on a table of release 0.1.0).
static RING: SavedPlan = SavedPlan::new(
    c"SELECT c.relname::text FROM pg_catalog.pg_inherits i
        JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'pg_labels.steps'::pg_catalog.regclass
       ORDER BY 1",
);

sql_function! {
    /// `pg_labels.purge(older_than timestamptz) → bigint`: the number of runs deleted.
    fn pgl_purge(call) {
        let now = trail_time();
        let given = (!call.is_null(0)).then(|| call.datum(0).value() as i64);
        let cut = retention::cut(now.0, given).map_err(Error::from)?;
        let owner = platform_owner()?;
        // its statements join and lock across runs, shares and artifacts, which Citus cannot
        // run over distributed tables
        if crate::pg::citus::loaded() {
            if let Some(ns) = crate::pg::trigger::platform_schema() {
                if crate::pg::citus::manages(ns, "runs")? {
                    return Err(Error::new(
                        crate::pg::error::FEATURE_NOT_SUPPORTED,
                        "pg_labels.purge() does not run on a Citus cluster yet",
                    )
                    .hint("See docs/citus.md (Scaling out with Citus) in pg_labels' source."));
                }
            }
        }
        let who = current_user_name();
        let n = as_owner(owner, || with_spi(|spi| purge(spi, &cut, &who)))?;
        Ok(Datum::from(n))
    }
}

/// The purge itself, as the owner: see the module's documentation. Returns the runs removed.
fn purge(spi: &Spi, cut: &retention::Cut, who: &str) -> Result<i64> {
    let _purging = PURGING.enter(());
    // no step is written meanwhile: a step's lock on its run may be one of the lock
    // manager's (run_lock::RunLock), which this purge's writes of runs' rows would not
    // wait for; steps wait for the purge instead, and then read their runs as it left
    // them
    run(
        spi,
        &Sql::new("LOCK TABLE pg_labels.runs IN EXCLUSIVE MODE"),
        false,
    )?;
    let start = Some(Timestamp(cut.month_start).datum());
    let ts = [crate::pg::sys::types::TIMESTAMPTZOID];
    let ring = RING.execute(spi, &[], &[], true, 0)?;
    let parts: Vec<String> = (0..ring.len())
        .map(|i| ring.must::<String>(i, 1))
        .collect::<Result<_>>()?;
    // what goes: whole partitions, and the older rows of one that holds a later month too
    // (purge was not run for two years, or a row was restored or written around the triggers
    // with an old time into the present's partition). Decided by the rows' times, read from
    // the partition's index on created_at (its newest and its oldest), never by their ids: a
    // partition is emptied whole only when every row it holds is older than the cutoff's month.
    let mut whole: Vec<&str> = Vec::new();
    let mut older: Vec<&str> = Vec::new();
    for part in &parts {
        let at = |order: &'static str| -> Result<Option<Timestamp>> {
            run(
                spi,
                &Sql::new("SELECT created_at FROM ")
                    .platform(part)
                    .push(" ORDER BY created_at ")
                    .push(order)
                    .push(" LIMIT 1"),
                true,
            )?
            .get::<Timestamp>(0, 1)
        };
        let Some(newest) = at("DESC")? else { continue };
        if newest.0 < cut.month_start {
            whole.push(part);
            continue;
        }
        if at("ASC")?.is_some_and(|o| o.0 < cut.month_start) {
            older.push(part);
        }
    }
    // The months that go are locked now, without waiting: a transaction that reads one (an
    // analyst's, left open) would otherwise keep this purge waiting with the runs locked,
    // and every writer of the platform queued behind it. Refused instead, to be run again.
    for (parts, mode) in [
        (&whole, " IN ACCESS EXCLUSIVE MODE NOWAIT"),
        (&older, " IN ROW EXCLUSIVE MODE NOWAIT"),
    ] {
        for part in parts.iter() {
            run(spi, &Sql::new("LOCK TABLE ").platform(part).push(mode), false).map_err(|e| {
                if e.is_sqlstate(LOCK_NOT_AVAILABLE) {
                    e.hint("A transaction holds a lock on that month of the trail (an open transaction reading it, say): purge() does not wait for it, so that no writer queues behind; run it again later.")
                } else {
                    e
                }
            })?;
        }
    }
    // every run that keeps going records where its hash chain is cut: the hash of its
    // last step that goes, and how many go (verify() goes on from there); a run whose
    // row's checkpoint goes takes the cut as its checkpoint. The run's row lock orders
    // this with its steps: a step waits for it and then reads the checkpoint and
    // partition as they are after the purge
    let mut steps_gone = 0i64;
    if !whole.is_empty() || !older.is_empty() {
        let going = whole
            .iter()
            .map(|p| Sql::new("SELECT run_id, id, hash FROM ").platform(p))
            .chain(older.iter().map(|p| {
                Sql::new("SELECT run_id, id, hash FROM ")
                    .platform(p)
                    .push(" WHERE created_at < $1")
            }));
        let sql = Sql::new(
            "WITH going AS (
                 SELECT run_id, count(*) AS n, (pg_catalog.array_agg(hash ORDER BY id DESC))[1] AS hash
                   FROM (",
        )
        .join(going, " UNION ALL ")
        .push(
            ") g GROUP BY run_id
             ), cut AS (
                 UPDATE pg_labels.runs r
                    SET chain_cut = c.hash, chain_cut_length = coalesce(r.chain_cut_length, 0) + c.n,
                        chain_head = CASE WHEN EXISTS (SELECT FROM pg_labels.steps s
                                                        WHERE s.run_id = r.id AND s.hash = r.chain_head
                                                          AND s.created_at >= $1)
                                          THEN r.chain_head ELSE c.hash END
                   FROM going c
                  WHERE r.id = c.run_id AND r.chain_head IS NOT NULL
                 RETURNING 1
             )
             SELECT coalesce(sum(n), 0)::bigint, (SELECT count(*) FROM cut) FROM going",
        );
        steps_gone = run_with(spi, &sql, &ts, &[start], false)?.must::<i64>(0, 1)?;
    }
    for part in &whole {
        run(spi, &Sql::new("TRUNCATE ").platform(part), false)?;
    }
    for part in &older {
        run_with(
            spi,
            &Sql::new("DELETE FROM ")
                .platform(part)
                .push(" WHERE created_at < $1"),
            &ts,
            &[start],
            false,
        )?;
    }
    let gone = PURGE.execute(spi, &ts, &[Some(Timestamp(cut.cutoff).datum())], false, 1)?;
    // the record of refused writes, with the trail's months (none before release 0.3.0)
    let refusals = match crate::platform::relations::relation(
        crate::pg::trigger::platform_schema().unwrap_or(crate::pg::sys::Oid::INVALID),
        c"refused_writes",
    ) {
        crate::pg::sys::Oid::INVALID => 0,
        _ => PURGE_REFUSED.execute(spi, &ts, &[start], false, 0)?.len(),
    };
    let [runs, steps, artifacts, shares] = [1, 2, 3, 4].map(|c| gone.must::<i64>(0, c));
    let (runs, steps, artifacts, shares) = (runs?, steps?, artifacts?, shares?);
    let listed = |ps: &[&str]| {
        if ps.is_empty() {
            "none".to_string()
        } else {
            ps.join(", ")
        }
    };
    log(&format!(
        "pg_labels: purge by {who}, cutoff {cutoff} (the months before {month} go): {total} steps removed, \
         {steps_gone} with their months ({months_gone} emptied: {whole_list}; cut: {older_list}) \
         and {steps} with {runs} whole runs, their {artifacts} artifacts and {shares} shares; \
         {refusals} records of refused writes",
        cutoff = retention::utc_text(cut.cutoff),
        month = retention::utc_text(cut.month_start),
        total = steps_gone + steps,
        months_gone = whole.len(),
        whole_list = listed(&whole),
        older_list = listed(&older),
    ));
    Ok(runs)
}
