//! Retention: the one deliberate way rows leave the trail.
//!
//! `pg_labels.purge(older_than)`:
//! 1. empties every month of the trail's ring (`pg_labels.steps_00` .. `steps_23`) that ends
//!    at or before the month the cutoff falls in: `TRUNCATE` of the partition, in constant time
//!    whatever it holds (no row deleted one by one, no WAL per row). A partition that also holds
//!    a later month (purge was not run for two years) has its older rows deleted instead.
//!    First, every run with steps that go records where its hash chain is cut (`chain_cut`,
//!    `chain_cut_length`, and `chain_head` when its checkpoint goes): one read of what goes,
//!    grouped by run, and one write per such run;
//! 2. deletes whole runs opened before the cutoff with nothing at or after it (no step, no
//!    artifact made, no share of their artifacts or to them), with their remaining steps (in
//!    the month the cutoff falls in), artifacts and shares. Only this part deletes row by row,
//!    and only the rows of such runs.

use crate::pg::datum::Timestamp;
use crate::pg::spi::{as_owner, run, with_spi, SavedPlan};
use crate::platform::catalog::platform_owner;
use crate::platform::state::PURGING;
use crate::sql_function;
use pgrx::pg_sys::{self, Datum};

/// Whole runs opened before the cutoff with nothing at or after it (no step, no artifact made,
/// no share of its artifacts or to it): their shares, artifacts and steps, then them. Steps of
/// other runs that read a purged artifact keep its id, origin run and digest (copied into the
/// step when it was read). Crossings are the audit record of authorizations and are kept.
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
      ), gone_artifacts AS (
          DELETE FROM pg_labels.artifacts a USING doomed d WHERE a.origin_run = d.id
      ), gone_steps AS (
          DELETE FROM pg_labels.steps s USING doomed d WHERE s.run_id = d.id
      )
      DELETE FROM pg_labels.runs r USING doomed d WHERE r.id = d.id",
);

/// The start of the month (UTC) the cutoff falls in.
static MONTH_START: SavedPlan = SavedPlan::new(
    c"SELECT pg_catalog.date_trunc('month', $1 AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
);

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
        let cutoff = call.datum(0);
        let owner = platform_owner()?;
        // its statements join and lock across runs, shares and artifacts, which Citus cannot
        // run over distributed tables
        if crate::pg::citus::loaded() {
            if let Some(ns) = crate::pg::trigger::platform_schema() {
                if crate::pg::citus::manages(ns, "runs")? {
                    return Err(crate::pg::error::Error::new(
                        crate::pg::error::FEATURE_NOT_SUPPORTED,
                        "pg_labels.purge() does not run on a Citus cluster yet",
                    )
                    .hint("See the README, Scaling out with Citus."));
                }
            }
        }
        let n = as_owner(owner, || with_spi(|spi| {
            let _purging = PURGING.enter(());
            // no step is written meanwhile: a step's lock on its run may be one of the lock
            // manager's (catalog::RunLock), which this purge's writes of runs' rows would not
            // wait for; steps wait for the purge instead, and then read their runs as it left
            // them
            run(spi, "LOCK TABLE pg_labels.runs IN EXCLUSIVE MODE", false)?;
            let start = MONTH_START
                .execute(spi, &[pg_sys::TIMESTAMPTZOID], &[Some(cutoff)], true, 1)?
                .must::<Timestamp>(0, 1)?;
            let ring = RING.execute(spi, &[], &[], true, 0)?;
            let parts: Vec<String> = (0..ring.len()).map(|i| ring.must::<String>(i, 1)).collect::<Result<_, _>>()?;
            // what goes: whole partitions, and the older rows of one that holds a later month
            // too (purge was not run for two years)
            let mut whole: Vec<&str> = Vec::new();
            let mut older: Vec<&str> = Vec::new();
            for part in &parts {
                // (names of the ring, steps_00 .. steps_23: nothing to quote)
                let newest = run(spi, &format!("SELECT created_at FROM pg_labels.{part} ORDER BY id DESC LIMIT 1"), true)?
                    .get::<Timestamp>(0, 1)?;
                let Some(newest) = newest else { continue };
                if newest < start {
                    whole.push(part);
                    continue;
                }
                let oldest = run(spi, &format!("SELECT created_at FROM pg_labels.{part} ORDER BY id LIMIT 1"), true)?
                    .get::<Timestamp>(0, 1)?;
                if oldest.is_some_and(|o| o < start) {
                    older.push(part);
                }
            }
            // every run that keeps going records where its hash chain is cut: the hash of its
            // last step that goes, and how many go (verify() goes on from there); a run whose
            // row's checkpoint goes takes the cut as its checkpoint. The run's row lock orders
            // this with its steps: a step waits for it and then reads the checkpoint and
            // partition as they are after the purge
            let going: Vec<String> = whole
                .iter()
                .map(|p| format!("SELECT run_id, id, hash FROM pg_labels.{p}"))
                .chain(older.iter().map(|p| {
                    format!("SELECT run_id, id, hash FROM pg_labels.{p} WHERE created_at < '{}'", start.text())
                }))
                .collect();
            if !going.is_empty() {
                run(spi, &format!(
                    "UPDATE pg_labels.runs r
                        SET chain_cut = c.hash, chain_cut_length = coalesce(r.chain_cut_length, 0) + c.n,
                            chain_head = CASE WHEN EXISTS (SELECT FROM pg_labels.steps s
                                                            WHERE s.run_id = r.id AND s.hash = r.chain_head
                                                              AND s.created_at >= '{start}')
                                              THEN r.chain_head ELSE c.hash END
                       FROM (SELECT run_id, count(*) AS n, (array_agg(hash ORDER BY id DESC))[1] AS hash
                               FROM ({going}) g GROUP BY run_id) c
                      WHERE r.id = c.run_id AND r.chain_head IS NOT NULL",
                    going = going.join(" UNION ALL "),
                    start = start.text(),
                ), false)?;
            }
            for part in &whole {
                run(spi, &format!("TRUNCATE pg_labels.{part}"), false)?;
            }
            for part in &older {
                run(spi, &format!("DELETE FROM pg_labels.{part} WHERE created_at < '{}'", start.text()), false)?;
            }
            Ok(PURGE.execute(spi, &[pg_sys::TIMESTAMPTZOID], &[Some(cutoff)], false, 0)?.len())
        }))?;
        Ok(Datum::from(n as i64))
    }
}
