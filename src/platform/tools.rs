//! The tool catalog (`pg_labels.tools`) as decisions read it: a tool's effect and whether its
//! output is trusted, kept per backend until a change to the catalog commits; and
//! `tools_change()`, which orders those changes after the decisions in flight. No SPI on this
//! path.
//!
//! A decision reads the tool catalog with the latest snapshot (a tool made
//! `destructive` or removed by a committed change counts at once, in `REPEATABLE READ` too),
//! holding `ROW SHARE` on `pg_labels.tools` until it commits (a fast-path lock, like a
//! reader's: it does not touch the shared lock table). A change to a tool (`UPDATE`,
//! `DELETE`) first takes `EXCLUSIVE` (`tools_change()`, below), which conflicts with the
//! decisions' `ROW SHARE` and not with readers' `ACCESS SHARE`: it waits for the decisions in
//! flight, not for an analyst's open transaction, and a decision arriving meanwhile waits for it
//! and then sees it. Changes are rare and decisions are not, so the changes pay for the
//! ordering. A new tool needs no ordering: until it commits, a call to it is refused as unknown.

use crate::pg::citus;
use crate::pg::columns::{col, Columns};
use crate::pg::error::Result;
use crate::pg::heap::Table;
use crate::pg::local::BackendLocal;
use crate::pg::sys::{Datum, Oid};
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::relations::{open, RELS};
use crate::sql_function;
use pg_labels_core::rules::Effect;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// A tool's catalog entry.
#[derive(Clone, Copy)]
pub struct Tool {
    /// `None` when the catalog holds an effect this version does not know (never: a CHECK
    /// constraint keeps the four).
    pub effect: Option<Effect>,
    pub trusted_output: bool,
}

static TOOL_COLUMNS: Columns<2> =
    Columns::new([col::<String>(c"effect"), col::<bool>(c"trusted_output")]);

/// Tools found in the catalog, kept by this backend until the catalog changes: every change
/// to a tool fires `tools_change()` (enabled ALWAYS, so in replica mode too), which sends a
/// relation cache invalidation for `pg_labels.tools`; a decision takes its lock on the catalog
/// first, and taking a lock reads the invalidations committed until then. A tool absent from
/// the catalog is not kept (a new tool counts at once). Entries hold while the count of
/// invalidations seen stays the same (a catalog dropped and created again, another relation,
/// counts as one).
struct ToolCache {
    generation: u64,
    entries: HashMap<String, Tool>,
}
static TOOL_CACHE: BackendLocal<Option<ToolCache>> = BackendLocal::new(None);
/// Invalidations of the tool catalog (or of every relation) seen by this backend.
static TOOLS_GENERATION: AtomicU64 = AtomicU64::new(0);
static TOOLS_RELID: AtomicU32 = AtomicU32::new(0);
static TOOLS_CALLBACK: AtomicBool = AtomicBool::new(false);

/// A relation cache invalidation: one of the tool catalog, or of every relation, ends what
/// this backend kept.
///
/// Told of every relation's invalidation (`crate::pg::inval::on_relation_changed`): it only
/// bumps a counter (no allocation, no error).
fn tools_invalidated(relid: Oid) {
    let tools = TOOLS_RELID.load(Ordering::Relaxed);
    if relid == Oid::INVALID || u32::from(relid) == tools {
        TOOLS_GENERATION.fetch_add(1, Ordering::Relaxed);
    }
}

/// A tool's entry as this backend keeps it, if it was kept under `generation`.
fn kept_tool(generation: u64, name: &str) -> Option<Tool> {
    TOOL_CACHE.with(|c| {
        c.as_ref()
            .filter(|c| c.generation == generation)
            .and_then(|c| c.entries.get(name).copied())
    })
}

/// The catalog entry of a tool as committed now, `None` when the catalog does not list it.
/// Holds `ROW SHARE` on the catalog until the transaction ends (see the module's header).
pub fn tool(namespace: Oid, name: &str) -> Result<Option<Tool>> {
    // The catalog locked by this transaction already (the next step of a bulk write, or of the
    // transaction): taking the lock again would read no invalidation, so the entry kept is
    // read without opening the table.
    let rels = RELS.get();
    if rels.namespace == namespace
        && rels.tools != Oid::INVALID
        && TOOLS_RELID.load(Ordering::Relaxed) == u32::from(rels.tools)
        && citus::SHARD.current().is_none()
        && crate::pg::compat::relation_locked_by_me(
            rels.tools,
            &[crate::pg::sys::locks::RowShareLock],
        )
    {
        let generation = TOOLS_GENERATION.load(Ordering::Relaxed);
        if let Some(t) = kept_tool(generation, name) {
            return Ok(Some(t));
        }
    }
    // the lock first: it reads the invalidations of changes committed before it was granted
    let (rel, pkey) = open(namespace, c"tools", crate::pg::sys::locks::RowShareLock)?;
    let relid = rel.oid();
    if !TOOLS_CALLBACK.swap(true, Ordering::Relaxed) {
        crate::pg::inval::on_relation_changed(tools_invalidated);
    }
    if TOOLS_RELID.swap(u32::from(relid), Ordering::Relaxed) != u32::from(relid) {
        TOOLS_GENERATION.fetch_add(1, Ordering::Relaxed);
    }
    let generation = TOOLS_GENERATION.load(Ordering::Relaxed);
    if let Some(t) = kept_tool(generation, name) {
        return Ok(Some(t));
    }
    let [c_effect, c_trusted] = rel.columns(&TOOL_COLUMNS)?;
    let key = crate::pg::datum::text_datum(name)?;
    let found = rel.probe(pkey, key, crate::pg::sys::funcs::F_TEXTEQ, true, |found| {
        Ok(Tool {
            effect: found
                .get::<String>(c_effect)?
                .as_deref()
                .and_then(Effect::parse),
            trusted_output: found.get::<bool>(c_trusted)?.unwrap_or(false),
        })
    })?;
    if let Some(t) = found {
        // kept only if no invalidation arrived while the catalog was read
        if TOOLS_GENERATION.load(Ordering::Relaxed) == generation {
            TOOL_CACHE.with(|c| {
                let kept = match c {
                    Some(k) if k.generation == generation => k,
                    other => other.insert(ToolCache {
                        generation,
                        entries: HashMap::new(),
                    }),
                };
                if kept.entries.len() < TOOLS_KEPT {
                    kept.entries.insert(name.to_owned(), t);
                }
            });
        }
    }
    Ok(found)
}

/// How many tools a backend keeps.
const TOOLS_KEPT: usize = 1024;

/// `BEFORE UPDATE OR DELETE FOR EACH STATEMENT` on `pg_labels.tools`.
const TOOLS_CHANGE: Spec = Spec {
    function: "pg_labels.tools_change()",
    tables: &["tools"],
    timing: Timing::Before,
    row: false,
    ops: &[Op::Update, Op::Delete],
};

sql_function! {
    /// A change to the tool catalog waits for the decisions in flight (module header).
    fn pgl_tools_change(call) {
        let trigger = Trigger::fired(&call, &TOOLS_CHANGE)?;
        // the lock is kept to the end of the transaction (Table's drop keeps it)
        Table::open(trigger.relid(), crate::pg::sys::locks::ExclusiveLock)?;
        // every backend forgets the tools it kept once this change commits (and this one at
        // the end of the statement)
        crate::pg::inval::relation_changed_everywhere(trigger.relid());
        Ok(Datum::from(0usize))
    }
}
