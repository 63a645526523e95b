//! Every refusal on the record, even when its statement rolls back: `pg_labels.refused_writes`.
//!
//! A refusal rolls its statement back, and with it anything the statement wrote. So the
//! record of a refused write is written elsewhere: each trigger (and each function that writes
//! as the tables' owner) runs its body in [`guarded`], which, when the body refuses, hands the
//! refusal, with what the trigger knew of the write ([`about`]), to a background worker that
//! writes it in a transaction of its own (`pg::channel`), and writes one `LOG` line of it
//! (unless `pg_labels.log_refusals` is off). The refusal itself is raised as always, whether
//! or not the record could be made: a failure to record is a `WARNING` naming the refusal.
//!
//! - Only refusals of pg_labels' own rules and checks are recorded, once: in the trigger (or
//!   function) that made it, not again in a function whose statement fired that trigger, and
//!   not a serialization failure (`40001`, to be retried). A gate decision is not a refusal:
//!   it is a row of the trail.
//! - A flood does not flood: past [`BUDGET`] records in a second, a backend's refusals are
//!   counted per (role, run, kind, tool, rule) and handed over as one record, and one `LOG`
//!   line, with its count when the second is over (in a counter of the queue, which the worker
//!   writes then; with none free, held in the backend until its first refusal or transaction
//!   end after that second, or its exit), never dropped. So are those that find no room in the
//!   queue (their lines written already). One worker per database writes every backend's
//!   records, and a role's records hold at most a quarter of the queue (`pg::channel`): one
//!   role's flood neither starves the server's worker slots nor another role's record.
//! - A record always fits: every text in it is cut (with a marker and its original length,
//!   [`cut`]) well under the queue's entry. What still cannot be queued or written is named
//!   whole in the server log and counted, and `refusals_recorded()` then answers false.
//! - A record states facts: the run it names and that run's scope are read from the database
//!   (none when there is no such run), and it is read in that scope (a share's, in the scope
//!   its artifact can be read in). What the writer claimed (a run's scope and labels, a share's
//!   target, a crossing's scopes) is kept apart, in `attempted`.
//! - On a Citus shard the refusal is in the `LOG` line of the node that decided only.
mod queue;
mod worker;

use crate::pg::channel::{self, Sent, Worker};
use crate::pg::datum::Uuid;
use crate::pg::error::{log_line, warning, Error, Result};
use crate::pg::local::BackendLocal;
use crate::pg::spi::{run_with, with_spi, SavedPlan, Sql};
use crate::pg::sys::{Datum, Oid};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use queue::*;
use serde_json::{json, Value};
use std::collections::HashMap;

/// `pg_labels.log_refusals`: one `LOG` line per record (on by default). Set in the server's
/// configuration only (`PGC_SIGHUP`): a session cannot turn it off, nor a placeholder made
/// before the library loads.
pub static LOG_REFUSALS: GucSetting<bool> = GucSetting::<bool>::new(true);

/// Records a backend hands over one by one in a second; past that, counted (see the module).
pub const BUDGET: u32 = 200;

/// What a trigger knows of the write it judges, for the record of its refusal.
#[derive(Clone, Debug, Default)]
pub struct About {
    /// What was refused: a step's kind, or `run`, `share`, `artifact`, `crossing`,
    /// `agent_version`, `approval`, or `update`/`delete`/`truncate` of a table.
    pub kind: std::borrow::Cow<'static, str>,
    pub run: Option<Uuid>,
    pub run_scope: Option<Vec<u8>>,
    pub tool: Option<String>,
    /// The labels that escaped, or the origins, or what the refusal is about (a labelset).
    pub labels: Option<Vec<u8>>,
    /// The scope the record is read in (an analyst sees it when its entered scope reaches
    /// it), when it is not the run's: a share's artifact's. Never one the writer named; `*`
    /// when none is known.
    pub scope: Option<Vec<u8>>,
    /// What the writer claimed (a run's scope, labels and agent; a share's target; a
    /// crossing's scopes): recorded apart from the facts.
    pub attempted: Option<serde_json::Map<String, Value>>,
    /// Counted with refusals of other runs and tools ([`KEYS_PER_SECOND`]).
    pub coarse: bool,
}

/// Tell the innermost running trigger's record what the writer claimed: `key` is `value`.
pub fn attempted(key: &str, value: Option<Value>) {
    if let Some(v) = value {
        about(|a| {
            a.attempted
                .get_or_insert_with(serde_json::Map::new)
                .insert(key.to_string(), v);
        });
    }
}

/// What the running triggers know, innermost last.
static ABOUT: BackendLocal<Vec<About>> = BackendLocal::new(Vec::new());

/// Run a trigger's (or an owner-writing function's) body, and record its refusal if it
/// refuses: see the module.
pub fn guarded(kind: &'static str, body: impl FnOnce() -> Result<Datum>) -> Result<Datum> {
    ABOUT.with(|a| {
        a.push(About {
            kind: kind.into(),
            ..About::default()
        })
    });
    let out = body();
    let about = ABOUT.with(|a| a.pop()).unwrap_or_default();
    if let Err(e) = &out {
        let d = e.data();
        if d.refusal && !d.nested && &d.sqlstate[..2] != b"40" {
            record(e, about);
        }
    }
    out
}

/// Tell the innermost running trigger's record what it knows.
pub fn about(f: impl FnOnce(&mut About)) {
    ABOUT.with(|a| {
        if let Some(last) = a.last_mut() {
            f(last);
        }
    });
}

/// The most characters a record keeps of a message or DETAIL, and of a name (a tool, a kind,
/// an agent): JSON writes a character in six bytes at most, so a record is always well under
/// the queue's entry ([`channel::MAX_RECORD`]).
const TEXT_CHARS: usize = 2000;
const NAME_CHARS: usize = 500;

/// `s`, or its first `max` characters and a marker with its length when it is longer.
pub fn cut(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let kept: String = s.chars().take(max).collect();
    format!("{kept}... [cut: {n} characters, {} bytes]", s.len())
}

/// A claim's value as the record keeps it: texts cut, at most [`NAME_CHARS`] of each.
fn cut_claims(claims: &serde_json::Map<String, Value>) -> Value {
    let mut out = serde_json::Map::new();
    for (k, v) in claims {
        let v = match v {
            Value::String(t) => Value::String(cut(t, NAME_CHARS)),
            other => other.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

/// One record, as it travels to the worker (JSON).
fn record_of(e: &Error, about: &About, at: i64) -> Value {
    let d = e.data();
    let x = crate::pg::xact::top_full_xid();
    let (xid, pid, session) = (
        (x != 0).then_some(x),
        crate::pg::backend::pid(),
        crate::pg::role::role_name(crate::pg::backend::session_user()).unwrap_or_default(),
    );
    let scope_text = |s: &Option<Vec<u8>>| s.as_deref().map(pg_labels_core::scope::to_text);
    json!({
        "at": pg_labels_core::retention::utc_text_micros(at),
        "last": pg_labels_core::retention::utc_text_micros(at),
        "count": 1,
        "kind": cut(&about.kind, NAME_CHARS),
        "run": about.run.map(|u| u.to_string()),
        "run_scope": scope_text(&about.run_scope),
        "scope": scope_text(&about.scope.clone().or_else(|| about.run_scope.clone())).unwrap_or_else(|| "*".into()),
        "tool": about.tool.as_deref().map(|t| cut(t, NAME_CHARS)),
        "rule": d.constraint.as_deref().map(|t| cut(t, NAME_CHARS)),
        "sqlstate": pg_labels_core::sqlstate::text(&d.sqlstate),
        "labels": about.labels.as_deref().map(first_labels),
        "reason": if about.coarse {
            cut(&format!("(counted with refusals of other runs) {}", d.message), TEXT_CHARS)
        } else {
            cut(&d.message, TEXT_CHARS)
        },
        "detail": d.detail.as_deref().filter(|_| !about.coarse).map(|t| cut(t, TEXT_CHARS)),
        "actor": cut(&crate::pg::role::role_name(crate::pg::role::acting_for()).unwrap_or_default(), NAME_CHARS),
        "session_actor": cut(&session, NAME_CHARS),
        "xid": xid.map(|x| x.to_string()),
        "pid": pid,
        "attempted": about.attempted.as_ref().map(cut_claims),
    })
}

/// How many labels a record keeps, and how many bytes of their text at most (a run carrying
/// 100,000 would not fit its queue, nor 200 labels of a kilobyte each; the refusal's DETAIL
/// says how many there were).
const LABELS_KEPT: usize = 200;
const LABELS_BYTES: usize = 4096;

/// The first labels of a labelset (at most [`LABELS_KEPT`], [`LABELS_BYTES`]), as a
/// labelset's text.
fn first_labels(body: &[u8]) -> String {
    let set = pg_labels_core::LabelSet::from_canonical(body);
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for l in set.iter().take(LABELS_KEPT) {
        let t = l.to_text();
        bytes += t.len() + 1;
        if bytes > LABELS_BYTES {
            break;
        }
        kept.push(t);
    }
    format!("{{{}}}", kept.join(","))
}

crate::sql_function! {
    /// `pg_labels.refusals_recorded(timeout interval DEFAULT '10 seconds') → boolean`: true once
    /// every refusal this session made has been written to `pg_labels.refused_writes` (those
    /// counted together included), false if that did not happen within the timeout.
    fn pgl_refusals_recorded(call) {
        let timeout_ms = call.interval_ms(0).unwrap_or(10_000);
        let timeout_ms = timeout_ms.clamp(0, 3_600_000);
        let now = || crate::pg::backend::now() / 1000;
        let start = now();
        // what had no room in the queue goes in as the worker makes room; false when a
        // record of this session could not be written (named in a WARNING)
        let done = loop {
            let held = flush_all();
            let left = (timeout_ms - (now() - start)).max(0);
            let drained = channel::drained(left);
            if !held && drained {
                break true;
            }
            if now() - start >= timeout_ms {
                break false;
            }
        };
        crate::pg::fmgr::ret_bool(done && channel::lost() == 0)
    }
}

/// Called from `_PG_init`.
pub fn init() {
    GucRegistry::define_bool_guc(
        c"pg_labels.log_refusals",
        c"Write one LOG line for every refusal of pg_labels' rules and checks (past the budget, for refusals counted together).",
        c"Set in the server's configuration; the refusals are recorded in pg_labels.refused_writes whatever it says.",
        &LOG_REFUSALS,
        GucContext::Sighup,
        GucFlags::default(),
    );
    crate::pg::xact::on_end(transaction_end);
}

fn transaction_end(end: crate::pg::xact::End) {
    if end != crate::pg::xact::End::Prepare {
        ABOUT.with(|a| a.clear());
        crate::pg::role::forget_callers();
        // (the transaction is over: no catalog may be read, so only into a queue that exists;
        // a failure here is a WARNING, not an error at the end of a transaction)
        if channel::exists() {
            let out = crate::pg::error::catch(|| {
                // (counted ones once their second is over: a flood of one refusal a
                // transaction would otherwise hand over a record a transaction)
                if HELD.with(|h| !h.counted.is_empty()) {
                    flush(false, false);
                }
                channel::nudge();
                Ok(())
            });
            if let Err(e) = out {
                warning(&format!(
                    "pg_labels: refusals could not be handed over at the end of the transaction: {}",
                    e.data().message
                ));
            }
        }
    }
}
