//! Retention: the one deliberate way rows leave the trail.

use crate::pg::spi::{as_owner, with_spi, SavedPlan};
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

sql_function! {
    /// `pg_labels.purge(older_than timestamptz) → bigint`: the number of runs deleted.
    fn pgl_purge(call) {
        let cutoff = call.datum(0);
        let owner = platform_owner()?;
        let n = as_owner(owner, || with_spi(|spi| {
            let _purging = PURGING.enter(());
            Ok(PURGE.execute(spi, &[pg_sys::TIMESTAMPTZOID], &[Some(cutoff)], false, 0)?.len())
        }))?;
        Ok(Datum::from(n as i64))
    }
}
