//! Chaining the runs that have no chain (written by a release without chains, or loaded
//! around the triggers: `pg_labels.start_chains()`), and the scopes a restore of an old dump
//! left empty.

use super::*;

pub(super) static CHAIN_STEP: SavedPlan = SavedPlan::new(
    c"UPDATE pg_labels.steps SET prev_hash = $3, hash = $4 WHERE id = $1 AND slot = $2",
);
pub(super) static CHAIN_RUN: SavedPlan = SavedPlan::new(
    c"UPDATE pg_labels.runs SET opened_labels = labels, chain_head = $2, chain_slot = $3
       WHERE id = $1 AND chain_head IS NULL",
);

sql_function! {
    /// `pg_labels.start_chains() → bigint`: chains the runs that have none (written by a
    /// release without chains, or loaded around the triggers), from what they hold now.
    fn pgl_start_chains(call) {
        let _ = &call;
        let mut chained = 0i64;
        each_run(|run| {
            if run.head.is_some() {
                return Ok(());
            }
            // from here on: the run's opening is taken to be what it carries now
            let mut run = run.clone();
            run.opened_labels = Some(run.labels.clone());
            let Some(mut h) = genesis(&run) else {
                return Ok(());
            };
            let scope_text = scope::to_text(&run.scope);
            let mut slot: Option<i16> = None;
            each_step(&run.id, |s| {
                let after = chain::labels_next(&h, LabelSet::from_canonical(&s.labels));
                let next = chain::link(&h, &leaf(&run, &scope_text, &s, &after));
                with_spi(|spi| {
                    CHAIN_STEP.execute(
                        spi,
                        &[crate::pg::sys::types::INT8OID, crate::pg::sys::types::INT2OID, crate::pg::sys::types::BYTEAOID, crate::pg::sys::types::BYTEAOID],
                        &[
                            Some(Datum::from(s.id)),
                            Some(Datum::from(s.slot)),
                            Some(crate::pg::datum::bytea_datum(&h)?),
                            Some(crate::pg::datum::bytea_datum(&next)?),
                        ],
                        false,
                        0,
                    )
                    .map(|_| ())
                })?;
                h = next;
                slot = Some(s.slot);
                Ok(true)
            })?;
            with_spi(|spi| {
                CHAIN_RUN.execute(
                    spi,
                    &[crate::pg::sys::types::UUIDOID, crate::pg::sys::types::BYTEAOID, crate::pg::sys::types::INT2OID],
                    &[
                        Some(run.id.datum()),
                        Some(crate::pg::datum::bytea_datum(&h)?),
                        slot.map(Datum::from),
                    ],
                    false,
                    0,
                )
                .map(|_| ())
            })?;
            chained += 1;
            Ok(())
        })?;
        fill_carried_scopes()?;
        Ok(Datum::from(chained))
    }
}

/// The extension's own schema (where `scope` and `labelset` and their functions are), when
/// the trail has the column (not while the update from 0.1.0 chains the runs).
pub(super) static EXTENSION_SCHEMA: SavedPlan = SavedPlan::new(
    c"SELECT n.nspname::text FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
       WHERE e.extname = 'pg_labels'
         AND EXISTS (SELECT FROM pg_catalog.pg_attribute a
                      WHERE a.attrelid = 'pg_labels.steps'::pg_catalog.regclass
                        AND a.attname = 'carried_scope' AND NOT a.attisdropped)",
);

/// Do runs have the scope they are read in (release 0.3.1)?
pub(super) static RUNS_CARRIED: SavedPlan = SavedPlan::new(
    c"SELECT FROM pg_catalog.pg_attribute a
       WHERE a.attrelid = 'pg_labels.runs'::pg_catalog.regclass
         AND a.attname = 'carried_scope' AND NOT a.attisdropped",
);

/// Fill the scope steps and shares are read in where a release before 0.3.0 (a restore of its
/// dump) left none: for a step, the scope that can carry its run's labels now; for a share, its
/// artifact's (as the update from 0.2.0 does). The append-only triggers let a superuser
/// session fill that column, and only it, from NULL.
pub(super) fn fill_carried_scopes() -> Result<()> {
    with_spi(|spi| {
        let rows = EXTENSION_SCHEMA.execute(spi, &[], &[], true, 1)?;
        let Some(ns) = rows.get::<String>(0, 1)? else {
            return Ok(());
        };
        let steps = Sql::new("UPDATE pg_labels.steps s SET carried_scope = ")
            .ident(&ns)
            .push(".scope_lca(r.scope, coalesce(")
            .ident(&ns)
            .push(".labelset_scope(r.labels), r.scope)) FROM pg_labels.runs r WHERE r.id = s.run_id AND s.carried_scope IS NULL");
        let steps = run(spi, &steps, false)?.len();
        let shares = Sql::new("UPDATE pg_labels.shares sh SET carried_scope = coalesce(")
            .ident(&ns)
            .push(".labelset_scope(a.labels), '*') FROM pg_labels.artifacts a WHERE a.id = sh.artifact_id AND sh.carried_scope IS NULL");
        let shares = run(spi, &shares, false)?.len();
        // runs and artifacts (release 0.3.1): a run's follows its labels (runs_seal writes it
        // when its row is written), an artifact's is its labels'
        let (mut runs, mut artifacts) = (0, 0);
        if RUNS_CARRIED.execute(spi, &[], &[], true, 1)?.len() > 0 {
            let fill =
                Sql::new("UPDATE pg_labels.runs SET labels = labels WHERE carried_scope IS NULL");
            runs = run(spi, &fill, false)?.len();
            let fill = Sql::new("UPDATE pg_labels.artifacts SET carried_scope = ")
                .ident(&ns)
                .push(".labelset_scope(labels) WHERE carried_scope IS NULL AND ")
                .ident(&ns)
                .push(".labelset_scope(labels) IS NOT NULL");
            artifacts = run(spi, &fill, false)?.len();
        }
        if steps + shares + runs + artifacts > 0 {
            notice(&format!(
                "pg_labels.start_chains: the scope {runs} runs, {steps} steps, {artifacts} artifacts and {shares} shares are read in, filled from their labels"
            ));
        }
        Ok(())
    })
}
