//! Provenance: `pg_labels.lineage(run)`, every upstream run reached through context reads, and
//! `pg_labels.lineage_dot(run)`, the same as a Graphviz graph.
//!
//! A breadth-first walk: one statement per level reads the `context_read` steps of all the runs
//! of that level (`run_id = ANY ($1)`, served by `steps_context_read_idx`), and a run is
//! expanded once, at its shortest depth, so cycles (two runs reading each other's artifacts)
//! end the walk; one last statement reads the scope and agent of every run met. The statements
//! run as the caller: row-level security decides what lineage an analyst sees (a read step it
//! cannot see is not followed; a run it cannot see has no scope or agent).
//!
//! The statements are planned once, generically, with the plan fixed by the query's shape (an
//! index probe per run of the level), so a trail whose statistics are stale or missing plans
//! no worse than an analysed one.

use crate::pg::datum::{text_datum, uuid_array_datum, Timestamp, Uuid};
use crate::pg::error::Result;
use crate::pg::fmgr::ret_bytes;
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::srf;
use crate::pg::sys::Datum;
use crate::sql_function;
use crate::types::datum::{labelset_datum, scope_datum, LabelSetBuf, ScopeBuf};
use pg_labels_core::{scope, LabelSet};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The context reads of a level of the walk. A join against the level's ids (rather than
/// `run_id = ANY ($1)`) keeps the plan a nested loop of index probes whatever the statistics
/// say about the size of the steps table.
static READS_OF: SavedPlan = SavedPlan::new(
    c"SELECT s.origin_run, s.artifact_id, s.digest, s.labels, s.run_id, s.id, s.created_at
        FROM pg_catalog.unnest($1::pg_catalog.uuid[]) AS level(run)
        CROSS JOIN LATERAL (
          SELECT * FROM pg_labels.steps s
           WHERE s.run_id = level.run AND s.kind = 'context_read'
           OFFSET 0) s",
);

static RUNS: SavedPlan = SavedPlan::new(
    c"SELECT r.id, r.scope, r.agent
        FROM pg_catalog.unnest($1::pg_catalog.uuid[]) AS wanted(id)
        CROSS JOIN LATERAL (SELECT * FROM pg_labels.runs r WHERE r.id = wanted.id OFFSET 0) r",
);

/// The same, for a Citus cluster: it cannot run a lateral join against distributed tables;
/// `= ANY` is pruned to the shards of the level's runs.
static READS_OF_ANY: SavedPlan = SavedPlan::new(
    c"SELECT s.origin_run, s.artifact_id, s.digest, s.labels, s.run_id, s.id, s.created_at
        FROM pg_labels.steps s
       WHERE s.run_id = ANY ($1::pg_catalog.uuid[]) AND s.kind = 'context_read'",
);

static RUNS_ANY: SavedPlan = SavedPlan::new(
    c"SELECT r.id, r.scope, r.agent FROM pg_labels.runs r WHERE r.id = ANY ($1::pg_catalog.uuid[])",
);

/// The columns `lineage()` returns.
const COLUMNS: usize = 10;

/// A run's scope and agent, when the caller can see the run.
#[derive(Clone, Default)]
struct RunFacts {
    scope: Option<Vec<u8>>,
    agent: Option<String>,
}

/// One context read found by the walk, copied out of SPI's memory.
struct Read {
    depth: i32,
    upstream: Option<Uuid>,
    artifact: Option<Uuid>,
    digest: Option<String>,
    labels: Vec<u8>,
    reader: Uuid,
    step: i64,
    at: Timestamp,
}

/// The walk from `start`: the reads in order (depth, then step), and the scope and agent of the
/// start and of every upstream run the caller can see.
fn walk(start: Uuid) -> Result<(Vec<Read>, HashMap<Uuid, RunFacts>)> {
    let mut reads: Vec<Read> = Vec::new();
    let mut runs: HashMap<Uuid, RunFacts> = HashMap::new();
    with_spi(|spi| {
        let mut seen: HashSet<Uuid> = HashSet::from([start]);
        let mut frontier = vec![start];
        // the start is looked up too: a cycle leads back to it, and the graph names it
        let mut met = vec![start];
        let mut depth: i32 = 0;
        while !frontier.is_empty() {
            depth += 1;
            let plan = if crate::pg::citus::loaded() {
                &READS_OF_ANY
            } else {
                &READS_OF
            };
            let rows = plan.execute(
                spi,
                &[crate::pg::sys::types::UUIDARRAYOID],
                &[Some(uuid_array_datum(&frontier))],
                true,
                0,
            )?;
            let first = reads.len();
            for i in 0..rows.len() {
                reads.push(Read {
                    depth,
                    upstream: rows.get(i, 1)?,
                    artifact: rows.get(i, 2)?,
                    digest: rows.get(i, 3)?,
                    labels: rows
                        .get::<LabelSetBuf>(i, 4)?
                        .map(|l| l.0)
                        .unwrap_or_default(),
                    reader: rows.get(i, 5)?.unwrap_or_default(),
                    step: rows.get(i, 6)?.unwrap_or_default(),
                    at: rows.get(i, 7)?.unwrap_or(Timestamp(0)),
                });
            }
            reads[first..].sort_by_key(|r| r.step);
            frontier = reads[first..]
                .iter()
                .filter_map(|r| r.upstream)
                .filter(|u| seen.insert(*u))
                .collect();
            met.extend_from_slice(&frontier);
        }
        let plan = if crate::pg::citus::loaded() {
            &RUNS_ANY
        } else {
            &RUNS
        };
        let rows = plan.execute(
            spi,
            &[crate::pg::sys::types::UUIDARRAYOID],
            &[Some(uuid_array_datum(&met))],
            true,
            0,
        )?;
        for i in 0..rows.len() {
            let Some(id) = rows.get::<Uuid>(i, 1)? else {
                continue;
            };
            runs.insert(
                id,
                RunFacts {
                    scope: rows.get::<ScopeBuf>(i, 2)?.map(|s| s.0),
                    agent: rows.get::<String>(i, 3)?,
                },
            );
        }
        Ok(())
    })?;
    Ok((reads, runs))
}

/// A string for a double-quoted DOT id or label: `"` and `\` escaped, line breaks as `\n`,
/// other control characters dropped. Nothing the caller puts in can end the string or add
/// graph syntax.
pub fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

sql_function! {
    /// `pg_labels.lineage(run uuid) → TABLE (depth, run_id, scope, agent, artifact_id, digest,
    /// labels, read_by, read_step, read_at)`
    fn pgl_lineage(call) {
        let out = srf::materialize(&call, "pg_labels.lineage()", COLUMNS)?;
        if call.is_null(0) {
            return Ok(Datum::from(0usize));
        }
        let start = crate::pg::datum::uuid_arg(&call, 0);
        let (reads, runs) = walk(start)?;
        for r in &reads {
            let run = r.upstream.and_then(|u| runs.get(&u));
            out.push(&[
                Some(Datum::from(r.depth)),
                r.upstream.as_ref().map(Uuid::datum),
                run.and_then(|x| x.scope.as_deref()).map(scope_datum).transpose()?,
                run.and_then(|x| x.agent.as_deref()).map(text_datum).transpose()?,
                r.artifact.as_ref().map(Uuid::datum),
                r.digest.as_deref().map(text_datum).transpose()?,
                Some(labelset_datum(&r.labels)?),
                Some(r.reader.datum()),
                Some(Datum::from(r.step)),
                Some(r.at.datum()),
            ]);
        }
        Ok(Datum::from(0usize))
    }

    /// `pg_labels.lineage_dot(run uuid) → text`: the lineage as a Graphviz DOT graph.
    fn pgl_lineage_dot(call) {
        let start = crate::pg::datum::uuid_arg(&call, 0);
        let (reads, runs) = walk(start)?;
        let node = |id: &Uuid, root: bool| {
            let facts = runs.get(id).cloned().unwrap_or_default();
            let id_text = id.to_string();
            format!(
                "  \"{id_text}\" [label=\"{}\\n{}\\n{}\"{}];",
                dot_escape(facts.agent.as_deref().unwrap_or("?")),
                dot_escape(&facts.scope.as_deref().map(scope::to_text).unwrap_or_else(|| "(not visible)".into())),
                &id_text[..8],
                if root { ", style=bold" } else { "" }
            )
        };
        let mut upstream: Vec<Uuid> = reads.iter().filter_map(|r| r.upstream).filter(|u| *u != start).collect();
        upstream.sort_by_key(|u| u.to_string());
        upstream.dedup();
        let mut g = String::from("digraph lineage {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n");
        g.push_str(&node(&start, true));
        for u in &upstream {
            g.push('\n');
            g.push_str(&node(u, false));
        }
        g.push('\n');
        let edges: Vec<String> = reads
            .iter()
            .filter_map(|r| {
                let from = r.upstream?;
                let digest = r.digest.as_deref().unwrap_or("");
                Some(format!(
                    "  \"{from}\" -> \"{}\" [label=\"{}\\n{}\"];",
                    r.reader,
                    dot_escape(&digest.chars().take(12).collect::<String>()),
                    dot_escape(&LabelSet::from_canonical(&r.labels).to_text())
                ))
            })
            .collect();
        let _ = write!(g, "{}\n}}", edges.join("\n"));
        ret_bytes(g.as_bytes())
    }
}

/// The `uuid` argument 0 of a call.

#[cfg(any(test, feature = "pg_test"))]
pub mod tests {
    #[test]
    fn escapes() {
        assert_eq!(super::dot_escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(super::dot_escape("x\ny\u{1}"), "x\\ny");
    }
}
