//! From a refusal to the recorder's queue: the record made and logged, the per-second budget,
//! floods counted per (role, run, kind, tool, rule), records held when the queue has no room,
//! and handing them over (at a refusal, a transaction's end, the backend's exit).

use super::*;

/// What makes refusals alike, to be counted in one record past the budget: who (the role
/// acting, the session's), the run, what was refused, the tool, the rule and SQLSTATE.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) actor: Oid,
    pub(super) session: Oid,
    pub(super) run: Option<[u8; 16]>,
    pub(super) kind: String,
    pub(super) tool: Option<String>,
    pub(super) rule: Option<String>,
    pub(super) sqlstate: crate::pg::error::SqlState,
}

impl Key {
    fn of(e: &Error, about: &About) -> Key {
        let d = e.data();
        Key {
            actor: crate::pg::role::acting_for(),
            session: crate::pg::backend::session_user(),
            run: about.run.as_ref().map(|u| u.0),
            kind: about.kind.to_string(),
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
pub(super) const KEYS_PER_SECOND: usize = 8;

/// A record held back and the refusals it counts.
pub(super) struct Counted {
    pub(super) key: Key,
    /// The first refusal's record.
    pub(super) rec: Value,
    pub(super) count: i64,
    /// How many of them had no `LOG` line yet (one held because the queue was full had its own).
    pub(super) unlogged: i64,
    /// The last one's time.
    pub(super) last: i64,
}

/// Counted refusals of this backend (past the budget, or with the queue full), in the order
/// they came.
#[derive(Default)]
pub(super) struct Held {
    /// The second (of the clock, in microseconds / 1e6) the budget counts, and how many went
    /// one by one in it.
    pub(super) second: i64,
    pub(super) sent: u32,
    pub(super) counted: Vec<Counted>,
    pub(super) index: HashMap<Key, usize>,
    /// The queue's counters this backend counts into in this second, by what they count.
    pub(super) counters: HashMap<Key, channel::CounterRef>,
    /// The keys counted in this second at each level (up to [`KEYS_PER_SECOND`] each), and
    /// the keys seen in it.
    pub(super) keys: [usize; 2],
    pub(super) seen: std::collections::HashSet<Key>,
}

pub(super) static HELD_SLOT: BackendLocal<Option<Held>> = BackendLocal::new(None);

/// What this backend holds back.
pub(super) struct HeldAccess;
pub(super) static HELD: HeldAccess = HeldAccess;
impl HeldAccess {
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Held) -> R) -> R {
        HELD_SLOT.with(|h| f(h.get_or_insert_with(Held::default)))
    }
}

/// A run's scope, for the record of a refusal made before the trigger read the run.
pub(super) static RUN_SCOPE: SavedPlan =
    SavedPlan::new(c"SELECT scope FROM pg_labels.runs WHERE id = $1");

pub(super) fn run_scope(run: &Uuid) -> Option<Vec<u8>> {
    let owner = crate::platform::relations::platform_owner().ok()?;
    crate::pg::role::as_owner(owner, || {
        with_spi(|spi| {
            let rows = RUN_SCOPE.execute(
                spi,
                &[crate::pg::sys::types::UUIDOID],
                &[Some(run.datum())],
                true,
                1,
            )?;
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
pub(super) fn log_record(rec: &Value, count: i64) {
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

pub(super) fn record(e: &Error, mut about: About) {
    let at = crate::pg::backend::now();
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
pub(super) fn not_recorded(rec: &Value, why: &Error) {
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
pub(super) fn count(e: &Error, mut about: About, at: i64) {
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
        crate::pg::role::acting_for().to_u32(),
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
pub(super) fn fill_run_scope(about: &mut About) {
    if about.run_scope.is_none() {
        if let Some(run) = &about.run {
            about.run_scope = run_scope(run);
        }
    }
    // a run the writer's grants do not reach is one that does not exist, for its record too
    // (filed under that run's scope, the record would tell the writer's analysts it exists)
    if let Some(scope) = &about.run_scope {
        let writer = crate::pg::role::acting_for();
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
pub(super) fn writer_scope() -> Option<Vec<u8>> {
    crate::platform::grants::reach(crate::pg::role::acting_for())
        .ok()?
        .common()
}

/// Count a record with the others of its kind this backend holds back (`unlogged` of it
/// without a `LOG` line yet).
pub(super) fn hold(key: Key, rec: Value, at: i64, unlogged: i64) {
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
        let second = crate::pg::backend::now().div_euclid(1_000_000);
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
pub(super) fn flush_all() -> bool {
    flush(true, crate::pg::spi::in_transaction());
    HELD.with(|h| !h.counted.is_empty())
}

/// Before this backend exits ([`channel::BeforeExit`]): what it held back into the queue; the
/// last time, what it still holds named in the server log.
pub(super) fn before_exit(last: bool) -> bool {
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

pub(super) const WORKER: Worker = Worker {
    library: "$libdir/pg_labels",
    function: "pgl_refusal_worker",
    name: "pg_labels refusal recorder",
};

/// Queue a record as the role it is about (its share of the queue is that role's).
pub(super) fn send(rec: &Value, may_make: bool) -> Result<Sent> {
    channel::send(
        rec.to_string().as_bytes(),
        crate::pg::role::acting_for().to_u32(),
        WORKER,
        before_exit,
        may_make,
    )
}
