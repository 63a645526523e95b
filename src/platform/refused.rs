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

use crate::pg::channel::{self, Sent, Worker};
use crate::pg::datum::Uuid;
use crate::pg::error::{log_line, warning, Error, Result};
use crate::pg::local::BackendLocal;
use crate::pg::spi::{run_with, with_spi, SavedPlan, Sql};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::pg_sys::{self, Datum};
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
    pub kind: String,
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
pub fn guarded(kind: &str, body: impl FnOnce() -> Result<Datum>) -> Result<Datum> {
    ABOUT.with(|a| {
        a.push(About {
            kind: kind.to_string(),
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
    // SAFETY: reads of the backend's transaction state and identity.
    let (xid, pid, session) = unsafe {
        let x = pg_sys::GetTopFullTransactionIdIfAny().value;
        (
            (x != 0).then_some(x),
            pg_sys::MyProcPid,
            crate::pg::spi::role_name(pg_sys::GetSessionUserId()).unwrap_or_default(),
        )
    };
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
        "actor": cut(&crate::pg::spi::role_name(crate::pg::spi::acting_for()).unwrap_or_default(), NAME_CHARS),
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

/// What makes refusals alike, to be counted in one record past the budget: who (the role
/// acting, the session's), the run, what was refused, the tool, the rule and SQLSTATE.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    actor: pg_sys::Oid,
    session: pg_sys::Oid,
    run: Option<[u8; 16]>,
    kind: String,
    tool: Option<String>,
    rule: Option<String>,
    sqlstate: crate::pg::error::SqlState,
}

impl Key {
    fn of(e: &Error, about: &About) -> Key {
        let d = e.data();
        Key {
            actor: crate::pg::spi::acting_for(),
            // SAFETY: reads the backend's identity.
            session: unsafe { pg_sys::GetSessionUserId() },
            run: about.run.as_ref().map(|u| u.0),
            kind: about.kind.clone(),
            tool: about.tool.clone(),
            rule: d.constraint.clone(),
            sqlstate: d.sqlstate,
        }
    }

    /// The key of refusals alike but for their runs (`level` 1), and their tools too (2): see
    /// [`KEYS_PER_SECOND`].
    fn coarse(mut self, level: usize) -> Key {
        self.run = None;
        if level >= 2 {
            self.tool = None;
        }
        self
    }
}

/// How many different keys a backend counts in a second at each level; past that (a flood over
/// many runs or tools, each refusal its own key, so that none would be counted with another),
/// refusals are counted by who, what, which tool and which rule ([`Key::coarse`], level 1),
/// then past as many of those by who, what and which rule alone (level 2), in a record that
/// names no run and is read in the writer's own scope.
const KEYS_PER_SECOND: usize = 8;

/// A record held back and the refusals it counts.
struct Counted {
    key: Key,
    /// The first refusal's record.
    rec: Value,
    count: i64,
    /// How many of them had no `LOG` line yet (one held because the queue was full had its own).
    unlogged: i64,
    /// The last one's time.
    last: i64,
}

/// Counted refusals of this backend (past the budget, or with the queue full), in the order
/// they came.
#[derive(Default)]
struct Held {
    /// The second (of the clock, in microseconds / 1e6) the budget counts, and how many went
    /// one by one in it.
    second: i64,
    sent: u32,
    counted: Vec<Counted>,
    index: HashMap<Key, usize>,
    /// The queue's counters this backend counts into in this second, by what they count.
    counters: HashMap<Key, channel::CounterRef>,
    /// The keys counted in this second at each level (up to [`KEYS_PER_SECOND`] each), and
    /// the keys seen in it.
    keys: [usize; 2],
    seen: std::collections::HashSet<Key>,
}

static HELD_SLOT: BackendLocal<Option<Held>> = BackendLocal::new(None);

/// What this backend holds back.
struct HeldAccess;
static HELD: HeldAccess = HeldAccess;
impl HeldAccess {
    fn with<R>(&self, f: impl FnOnce(&mut Held) -> R) -> R {
        HELD_SLOT.with(|h| f(h.get_or_insert_with(Held::default)))
    }
}

/// A run's scope, for the record of a refusal made before the trigger read the run.
static RUN_SCOPE: SavedPlan = SavedPlan::new(c"SELECT scope FROM pg_labels.runs WHERE id = $1");

fn run_scope(run: &Uuid) -> Option<Vec<u8>> {
    let owner = crate::platform::relations::platform_owner().ok()?;
    crate::pg::spi::as_owner(owner, || {
        with_spi(|spi| {
            let rows = RUN_SCOPE.execute(spi, &[pg_sys::UUIDOID], &[Some(run.datum())], true, 1)?;
            Ok(rows
                .get::<crate::types::datum::ScopeBuf>(0, 1)?
                .map(|s| s.0))
        })
    })
    .ok()
    .flatten()
}

/// The `LOG` line of a record (its fields but the DETAIL, on one line), counting `count`
/// refusals.
fn log_record(rec: &Value, count: i64) {
    if !LOG_REFUSALS.get() {
        return;
    }
    let mut line = rec.clone();
    if let Some(o) = line.as_object_mut() {
        o.remove("detail");
        if count == 1 {
            o.remove("last");
            o.remove("count");
        } else {
            o.insert("count".into(), json!(count));
        }
    }
    log_line(&format!("pg_labels: refused {line}"));
}

fn record(e: &Error, mut about: About) {
    // SAFETY: reads the clock.
    let at = unsafe { pg_sys::GetCurrentTimestamp() };
    if crate::platform::context::on_shard() {
        log_record(&record_of(e, &about, at), 1);
        return;
    }
    let second = at.div_euclid(1_000_000);
    let over = HELD.with(|h| {
        if h.second != second {
            h.second = second;
            h.sent = 0;
            // (the last second's counters are the worker's to close)
            h.counters.clear();
            h.keys = [0, 0];
            h.seen.clear();
        }
        h.sent += 1;
        h.sent > BUDGET
    });
    if over {
        count(e, about, at);
        return;
    }
    fill_run_scope(&mut about);
    let rec = record_of(e, &about, at);
    log_record(&rec, 1);
    flush(false, true);
    match send(&rec, true) {
        Ok(Sent::Queued) | Ok(Sent::QueuedWithoutWorker) => {}
        Ok(Sent::Full) => hold(Key::of(e, &about), rec, at, 0),
        Err(why) => not_recorded(&rec, &why),
    }
}

/// A record that cannot be queued: named whole in the server log, and counted (this session's
/// `refusals_recorded()` answers false from now on).
fn not_recorded(rec: &Value, why: &Error) {
    channel::count_lost();
    warning(&format!(
        "pg_labels: not recorded ({}): {rec}",
        why.data().message
    ));
}

/// Past the budget: counted with the others alike in this second, in a counter of the queue
/// (the worker writes it, with its `LOG` line, once the second is over, whatever this backend
/// does next), or, with no counter free for it, held here and handed over as one record with
/// its count (at its next refusal once the second is over, at the end of its transaction,
/// before it exits). A flood costs a count each, not a record or a line.
fn count(e: &Error, mut about: About, at: i64) {
    let mut key = Key::of(e, &about);
    for level in 1..=2 {
        if HELD.with(|h| h.seen.contains(&key)) {
            break;
        }
        if HELD.with(|h| h.keys[level - 1] < KEYS_PER_SECOND) {
            HELD.with(|h| h.keys[level - 1] += 1);
            break;
        }
        key = key.coarse(level);
        about.run = None;
        about.run_scope = None;
        about.labels = None;
        about.attempted = None;
        about.scope = None;
        about.coarse = true;
        if level >= 2 {
            about.tool = None;
        }
    }
    HELD.with(|h| h.seen.insert(key.clone()));
    if let Some(c) = HELD.with(|h| h.counters.get(&key).copied()) {
        if channel::count(c, at) {
            return;
        }
        HELD.with(|h| h.counters.remove(&key));
    }
    let held = HELD.with(|h| match h.index.get(&key) {
        Some(&i) => {
            let c = &mut h.counted[i];
            c.count += 1;
            c.unlogged += 1;
            c.last = at;
            true
        }
        None => false,
    });
    if held {
        return;
    }
    fill_run_scope(&mut about);
    let rec = record_of(e, &about, at);
    let opened = channel::open_counter(
        rec.to_string().as_bytes(),
        at,
        crate::pg::spi::acting_for().to_u32(),
        WORKER,
        before_exit,
    );
    match opened {
        Ok(Some(c)) => HELD.with(|h| {
            h.counters.insert(key, c);
        }),
        // (said when it is handed over, if it cannot be queued then either)
        Ok(None) | Err(_) => hold(key, rec, at, 1),
    }
}

/// The run's scope as the database holds it, when the trigger refused before it read the run
/// (a run not opened: the one of that id, if any; none when there is no such run, or when the
/// writer's grants do not reach it); and where
/// the record is read when it names no run of the database's: in the writer's own scope (the
/// scope its grants reach, `*` when it has none).
fn fill_run_scope(about: &mut About) {
    if about.run_scope.is_none() {
        if let Some(run) = &about.run {
            about.run_scope = run_scope(run);
        }
    }
    // a run the writer's grants do not reach is one that does not exist, for its record too
    // (filed under that run's scope, the record would tell the writer's analysts it exists)
    if let Some(scope) = &about.run_scope {
        let writer = crate::pg::spi::acting_for();
        if !crate::platform::grants::reaches(writer, scope).unwrap_or(false) {
            about.run_scope = None;
        }
    }
    if about.run_scope.is_none() && about.scope.is_none() {
        about.scope = writer_scope();
    }
}

/// The writer's own scope: the deepest scope that reaches every scope its grants (its own, or
/// a role's it is a member of) give it; `None` when it has none.
fn writer_scope() -> Option<Vec<u8>> {
    crate::platform::grants::reach(crate::pg::spi::acting_for())
        .ok()?
        .common()
}

/// Count a record with the others of its kind this backend holds back (`unlogged` of it
/// without a `LOG` line yet).
fn hold(key: Key, rec: Value, at: i64, unlogged: i64) {
    HELD.with(|h| match h.index.get(&key) {
        Some(&i) => {
            let c = &mut h.counted[i];
            c.count += 1;
            c.unlogged += unlogged;
            c.last = at;
        }
        None => {
            h.index.insert(key.clone(), h.counted.len());
            h.counted.push(Counted {
                key,
                rec,
                count: 1,
                unlogged,
                last: at,
            });
        }
    });
}

/// Hand over what this backend held back (one record per kind, with its count, and a `LOG`
/// line for those that had none): when its second is over, and (`all`) at the end of a
/// transaction and before the backend exits. `may_make`: inside a transaction, where the
/// database's queue may be made if there is none.
pub fn flush(all: bool, may_make: bool) {
    let counted = HELD.with(|h| {
        // SAFETY: reads the clock.
        let second = unsafe { pg_sys::GetCurrentTimestamp() }.div_euclid(1_000_000);
        if h.counted.is_empty() || (!all && h.second == second && h.sent > BUDGET) {
            return Vec::new();
        }
        h.index.clear();
        std::mem::take(&mut h.counted)
    });
    let mut rest = counted.into_iter();
    while let Some(mut c) = rest.next() {
        c.rec["count"] = json!(c.count);
        c.rec["last"] = json!(pg_labels_core::retention::utc_text_micros(c.last));
        if c.unlogged > 0 {
            log_record(&c.rec, c.unlogged);
            c.unlogged = 0;
        }
        match send(&c.rec, may_make) {
            Ok(Sent::Full) => {
                // this and the rest go back, to the next try
                HELD.with(|h| {
                    for c in std::iter::once(c).chain(rest) {
                        h.index.insert(c.key.clone(), h.counted.len());
                        h.counted.push(c);
                    }
                });
                return;
            }
            Ok(_) => {}
            Err(why) => not_recorded(&c.rec, &why),
        }
    }
}

/// Everything this backend held back, into the queue (when asked whether its refusals are
/// recorded, and before it exits): `true` while some is still held (the ring full).
fn flush_all() -> bool {
    flush(true, crate::pg::spi::in_transaction());
    HELD.with(|h| !h.counted.is_empty())
}

/// Before this backend exits ([`channel::BeforeExit`]): what it held back into the queue; the
/// last time, what it still holds named in the server log.
fn before_exit(last: bool) -> bool {
    if !last {
        return flush_all();
    }
    let counted = HELD.with(|h| {
        h.index.clear();
        std::mem::take(&mut h.counted)
    });
    for c in counted {
        let mut rec = c.rec;
        rec["count"] = json!(c.count);
        rec["last"] = json!(pg_labels_core::retention::utc_text_micros(c.last));
        channel::count_lost();
        warning(&format!(
            "pg_labels: not recorded (the queue stayed full): {rec}"
        ));
    }
    false
}

const WORKER: Worker = Worker {
    library: "$libdir/pg_labels",
    function: "pgl_refusal_worker",
    name: "pg_labels refusal recorder",
};

/// Queue a record as the role it is about (its share of the queue is that role's).
fn send(rec: &Value, may_make: bool) -> Result<Sent> {
    channel::send(
        rec.to_string().as_bytes(),
        crate::pg::spi::acting_for().to_u32(),
        WORKER,
        before_exit,
        may_make,
    )
}

crate::sql_function! {
    /// `pg_labels.refusals_recorded(timeout interval DEFAULT '10 seconds') → boolean`: true once
    /// every refusal this session made has been written to `pg_labels.refused_writes` (those
    /// counted together included), false if that did not happen within the timeout.
    fn pgl_refusals_recorded(call) {
        let timeout_ms = if call.is_null(0) {
            10_000
        } else {
            interval_ms(call.datum(0))
        };
        let timeout_ms = timeout_ms.clamp(0, 3_600_000);
        // SAFETY: reads the clock.
        let now = || unsafe { pg_sys::GetCurrentTimestamp() } / 1000;
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

/// An `interval` argument in milliseconds (months as 30 days).
fn interval_ms(d: Datum) -> i64 {
    // SAFETY: the argument is an interval (the function is declared so): a pointer to it.
    let i = unsafe { &*(d.cast_mut_ptr::<pg_sys::Interval>()) };
    i.time / 1000 + (i.day as i64 + i.month as i64 * 30) * 86_400_000
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
    // SAFETY: registers a callback that lives as long as the library.
    unsafe { pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut()) };
}

unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    if matches!(
        event,
        pg_sys::XactEvent::XACT_EVENT_COMMIT | pg_sys::XactEvent::XACT_EVENT_ABORT
    ) {
        ABOUT.with(|a| a.clear());
        crate::pg::spi::forget_callers();
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

/// Writes records (the worker's transaction is open).
fn write(spi: &crate::pg::spi::Spi, namespace: &str, records: &[Value]) -> Result<u64> {
    let array = crate::pg::datum::text_datum(&Value::Array(records.to_vec()).to_string())?;
    let sql = Sql::new(
        "INSERT INTO pg_labels.refused_writes
             (refused_at, last_at, count, kind, run_id, run_scope, carried_scope, tool, rule, sqlstate,
              labels, reason, detail, actor, session_actor, xid, backend_pid, attempted)
         SELECT r.at::timestamptz, r.last::timestamptz, r.count, r.kind, r.run, r.run_scope::",
    )
    .ident(namespace)
    .push(".scope, r.scope::")
    .ident(namespace)
    .push(".scope, r.tool, r.rule, r.sqlstate, r.labels::")
    .ident(namespace)
    .push(
        ".labelset, r.reason, r.detail, r.actor, r.session_actor, r.xid::xid8, r.pid, r.attempted
           FROM pg_catalog.jsonb_to_recordset($1::pg_catalog.jsonb)
             AS r (at text, last text, count bigint, kind text, run uuid, run_scope text, scope text,
                   tool text, rule text, sqlstate text, labels text, reason text, detail text,
                   actor text, session_actor text, xid text, pid int, attempted jsonb)",
    );
    Ok(run_with(spi, &sql, &[pg_sys::TEXTOID], &[Some(array)], false)?.len())
}

/// The extension's own schema (the types' names are qualified with it), and the tables' owner.
static EXTENSION_SCHEMA: SavedPlan = SavedPlan::new(
    c"SELECT n.nspname::text, c.relowner
        FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
        JOIN pg_catalog.pg_class c ON c.oid = 'pg_labels.refused_writes'::pg_catalog.regclass
       WHERE e.extname = 'pg_labels'",
);

/// The background worker that records refusals: attaches to its database's queue (as its one
/// worker), connects to the database (as the bootstrap superuser, so that an owner that cannot
/// log in, or a database closed to connections, does not stop it) and writes what it finds as
/// the tables' owner, a batch per transaction, until the queue stays empty for half a second.
/// A batch that fails is written again one record at a time; a record that still fails is
/// named in a `WARNING` and counted for its backend (whose `refusals_recorded()` says false).
///
/// # Safety
/// Called by PostgreSQL as a background worker's main function, with the handle of a queue's
/// segment as its argument.
#[pgrx::pg_guard]
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn pgl_refusal_worker(arg: pg_sys::Datum) {
    use pgrx::bgworkers::{BackgroundWorker, SignalWakeFlags};
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGTERM);
    let Some(queue) = channel::Consumer::attach(arg.value() as u32) else {
        return;
    };
    crate::pg::bgworker::connect(queue.database());
    let found = crate::pg::bgworker::in_transaction(pg_sys::Oid::INVALID, || {
        with_spi(|spi| {
            let rows = EXTENSION_SCHEMA.execute(spi, &[], &[], true, 1)?;
            Ok((rows.get::<String>(0, 1)?, rows.get::<pg_sys::Oid>(0, 2)?))
        })
    });
    let (namespace, role) = match found {
        Ok((Some(ns), Some(role))) => (ns, role),
        Ok(_) => {
            warning(
                "pg_labels: the refusal recorder cannot start: the extension is not installed here",
            );
            return;
        }
        Err(e) => {
            warning(&format!(
                "pg_labels: the refusal recorder cannot start: {}",
                e.data().message
            ));
            return;
        }
    };
    let store = |records: &[(Value, &channel::Message)]| {
        let values: Vec<Value> = records.iter().map(|(v, _)| v.clone()).collect();
        let all = crate::pg::bgworker::in_transaction(role, || {
            with_spi(|spi| write(spi, &namespace, &values))
        });
        if all.is_ok() {
            return;
        }
        // one at a time, to lose none but what cannot be written
        for (v, m) in records {
            let one = std::slice::from_ref(v);
            let out = crate::pg::bgworker::in_transaction(role, || {
                with_spi(|spi| write(spi, &namespace, one))
            });
            if let Err(e) = out {
                channel::warn_lost(m, &e.data().message);
                queue.lost(m);
            }
        }
    };
    let mut idle = 0;
    loop {
        let batch = queue.peek(256);
        let mut busy = false;
        if !batch.messages.is_empty() {
            let records = readable(&queue, &batch.messages);
            store(&records);
            queue.done(&batch);
            busy = true;
        }
        // SAFETY: reads the clock.
        let second = unsafe { pg_sys::GetCurrentTimestamp() }.div_euclid(1_000_000);
        let due = queue.due(second);
        if !due.is_empty() {
            let (taken, messages): (Vec<usize>, Vec<channel::Message>) = due.into_iter().unzip();
            let records = readable(&queue, &messages);
            store(&records);
            for i in taken {
                queue.release(i);
            }
            busy = true;
        }
        if busy {
            idle = 0;
            continue;
        }
        if BackgroundWorker::sigterm_received() {
            return;
        }
        if !BackgroundWorker::wait_latch(Some(std::time::Duration::from_millis(100))) {
            return;
        }
        idle += 1;
        if idle >= 5 {
            if queue.leave() {
                return;
            }
            idle = 0;
        }
    }
}

/// The worker's messages as records to write (a message that is not a record, which no
/// backend sends, is said in the server log too).
fn readable<'a>(
    queue: &channel::Consumer,
    messages: &'a [channel::Message],
) -> Vec<(Value, &'a channel::Message)> {
    let mut out = Vec::new();
    for m in messages {
        match serde_json::from_slice::<Value>(&m.bytes) {
            Ok(mut v) => {
                // a counter's count and last time put in, and its LOG line written (no one
                // wrote one for a counter)
                if m.count > 0 {
                    v["count"] = json!(m.count);
                    v["last"] = json!(pg_labels_core::retention::utc_text_micros(m.last));
                    log_record(&v, m.count as i64);
                }
                out.push((v, m))
            }
            Err(_) => {
                channel::warn_lost(m, "not a record");
                queue.lost(m);
            }
        }
    }
    out
}
