//! A queue from every backend of a database to one background worker that writes what it
//! receives in transactions of its own: for what must outlive the transaction that made it (a
//! refusal's record survives the rollback of the refused statement).
//!
//! No `shared_preload_libraries` entry is needed, and PostgreSQL 15 and 16 have no named shared
//! memory to find a queue by, so the queue of a database is a dynamic shared memory segment
//! whose handle is published in a file of the data directory ([`directory`]):
//! `pg_stat_tmp/pg_labels_queue.<database oid>` (a base backup leaves that directory out). The
//! first backend that sends makes it, pinned; the others find it there and map it. One
//! background worker at a time (from `max_worker_processes`, as `pg_background` registers
//! them) drains it: a backend that queues a record and finds none running registers one. So a
//! database's refusals take one worker slot however many sessions refuse, and parallel query
//! keeps the others. The worker lingers half a second for more, then, the ring empty, closes
//! the queue and unpins it; the next sender makes a new one.
//!
//! - **Bounded**: the ring holds [`segment::RING`] bytes; a role's records at most a quarter of
//!   it ([`segment::ROLE_SHARE`]), so one role's flood leaves room for every other's. A record
//!   that finds no room is [`Sent::Full`]: its sender keeps it and sends it again (at the end
//!   of its transaction, at its next record, before it exits).
//! - **Nothing lost without a word**: a record the worker cannot write is named whole in the
//!   server log and counted in its sender's slot ([`lost`]); a backend that exits waits (up to
//!   five seconds) until its records are written, and names in the server log those still
//!   queued then (they stay queued for the worker).
//! - **Memory**: one segment per database (about 1.6 MB), shared by every backend that maps
//!   it; a backend lets go of it at the end of a transaction once its records are written and
//!   the worker closed the queue. No backend keeps shared memory of its own.
//!
//! What a worker does with the records is its caller's ([`Consumer`]); this module knows nothing
//! of what they mean.

mod consumer;
mod counter;
mod directory;
mod segment;

pub use consumer::Consumer;
pub use counter::{count, open_counter, CounterRef};
pub use segment::{Message, COUNTERS, MAX_RECORD};

use crate::pg::error::{warning, Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::local::BackendLocal;
use counter::counters_into_ring;
use pgrx::pg_sys;
use segment::{NotQueued, Segment, COUNT_MASK, IDLE, OPEN, RUNNING, STARTING};
use std::sync::atomic::Ordering::SeqCst;

pub use crate::pg::bgworker::Worker;

/// What became of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// In the queue, and a worker is (or will be) there to write it.
    Queued,
    /// In the queue, but no worker could be started now (none free): another try is made at
    /// the next record, at the end of every transaction and when this backend exits.
    QueuedWithoutWorker,
    /// No room (the ring, or the role's share of it), or no queue could be made here (the end
    /// of a transaction): not queued; its sender keeps it.
    Full,
}

/// This backend's end of its database's queue, while it maps it.
struct Producer {
    seg: *mut pg_sys::dsm_segment,
    handle: u32,
    segment: Segment,
    /// This backend's slot (its `PGPROC`'s number).
    slot: u32,
    /// Where the last entry this backend queued in this segment ends.
    upto: u64,
    /// The handle of the worker this backend registered last (in TopMemoryContext).
    started: *mut pg_sys::BackgroundWorkerHandle,
}

static PRODUCER: BackendLocal<Option<Producer>> = BackendLocal::new(None);
/// This backend's records that no worker wrote: counted when it let go of a queue, or could
/// not queue them at all.
static LOST: BackendLocal<u64> = BackendLocal::new(0);
/// The worker to start, and what this backend does before it exits: queue what it holds back
/// (`true` while some is still held); called with `true` the last time, when what is still held
/// is to be said in the server log.
static CALLER: BackendLocal<Option<(Worker, BeforeExit)>> = BackendLocal::new(None);
pub type BeforeExit = fn(last: bool) -> bool;

/// Does this backend map a queue now?
pub fn exists() -> bool {
    PRODUCER.with(|p| p.is_some())
}

/// Queue one record for the worker, as role `role` (its share of the ring is counted), mapping
/// (or, `may_make`, making) the database's queue as needed and starting its worker if none
/// runs. Making a queue takes a lock of the lock manager: only inside a transaction.
pub fn send(
    record: &[u8],
    role: u32,
    worker: Worker,
    before_exit: BeforeExit,
    may_make: bool,
) -> Result<Sent> {
    if record.len() > MAX_RECORD {
        return Err(Error::new(
            NOT_IN_PREREQUISITE_STATE,
            format!(
                "pg_labels: a record of {} bytes, over the queue's {MAX_RECORD}",
                record.len()
            ),
        ));
    }
    if CALLER.with(|c| c.replace((worker, before_exit))).is_none() {
        // SAFETY: a callback for this process's exit, registered once.
        unsafe { pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0usize)) };
    }
    for _ in 0..2 {
        if !exists() {
            let Some(p) = directory::find(may_make)? else {
                return Ok(Sent::Full);
            };
            PRODUCER.with(|slot| *slot = Some(p));
        }
        let out = PRODUCER.with(|p| {
            let p = p.as_mut().expect("mapped above");
            let (slot, pid) = (p.slot, my_pid());
            match p
                .segment
                .locked(|l| l.put(record, (slot, pid, role), (0, 0)))
            {
                Ok(end) => {
                    p.upto = end;
                    p.segment.wake();
                    Some(if ensure_worker(p) {
                        Sent::Queued
                    } else {
                        Sent::QueuedWithoutWorker
                    })
                }
                Err(NotQueued::Full) => {
                    ensure_worker(p);
                    Some(Sent::Full)
                }
                Err(NotQueued::Closed) => None,
            }
        });
        match out {
            Some(sent) => return Ok(sent),
            // its worker closed it: a new one
            None => let_go(),
        }
    }
    Ok(Sent::Full)
}

/// Count a record of this backend's that will not be written (said in the server log by the
/// caller).
pub fn count_lost() {
    LOST.with(|l| *l += 1);
}

/// This backend's records no worker wrote (each said in a `WARNING`).
pub fn lost() -> u64 {
    let mapped = PRODUCER.with(|p| {
        p.as_ref()
            .and_then(|p| p.segment.slot(p.slot))
            .filter(|s| s.pid.load(SeqCst) == my_pid())
            .map_or(0, |s| s.lost.load(SeqCst))
    });
    LOST.with(|l| *l) + mapped
}

/// Are this backend's records in the queue written (or given up, [`lost`]), its counters too?
fn written(p: &Producer) -> bool {
    let h = p.segment.header();
    h.closed.load(SeqCst) != 0 || (h.read.load(SeqCst) >= p.upto && !p.segment.counting(my_pid()))
}

/// Wait, up to `timeout_ms`, until a worker has written everything this backend queued (`true`
/// at once when it queued nothing). Interruptible (a cancel ends the wait).
pub fn drained(timeout_ms: i64) -> bool {
    let mut waited = 0;
    loop {
        let done = PRODUCER.with(|p| match p.as_mut() {
            None => true,
            Some(p) => {
                let done = written(p);
                if !done {
                    ensure_worker(p);
                }
                done
            }
        });
        if done {
            return true;
        }
        if waited >= timeout_ms {
            return false;
        }
        crate::pg::bgworker::wait_interruptibly(10);
        waited += 10;
    }
}

/// At the end of a transaction of this backend's: start a worker if its records wait and none
/// runs (one may have been free since), or let go of the queue once they are written and its
/// worker has closed it (while the worker runs, the next refusal would map it again at once).
/// Reads no catalog, takes no lock.
pub fn nudge() {
    let done = PRODUCER.with(|p| match p.as_mut() {
        None => false,
        Some(p) => {
            if written(p) {
                p.segment.header().closed.load(SeqCst) != 0
            } else {
                ensure_worker(p);
                false
            }
        }
    });
    if done {
        let_go();
    }
}

/// Let go of the queue: what its worker could not write of this backend's is counted here.
fn let_go() {
    let Some(p) = PRODUCER.with(|p| p.take()) else {
        return;
    };
    if let Some(s) = p.segment.slot(p.slot) {
        if s.pid.load(SeqCst) == my_pid() {
            let n = s.lost.swap(0, SeqCst);
            LOST.with(|l| *l += n);
        }
    }
    // SAFETY: this backend's mapping, made by directory::find; nothing of it is used after.
    unsafe { pg_sys::dsm_detach(p.seg) };
}

fn my_pid() -> i32 {
    // SAFETY: reads the process id.
    unsafe { pg_sys::MyProcPid }
}

/// A worker for the queue: running already, registered and starting, or registered now.
/// `false` when none could be.
fn ensure_worker(p: &mut Producer) -> bool {
    let h = p.segment.header();
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    match h.worker.load(SeqCst) {
        RUNNING => return true,
        STARTING => {
            // a registration of this backend's that stopped before it attached, or one of
            // anyone's that has not started in ten seconds, is taken back
            let ours_stopped = !p.started.is_null() && crate::pg::bgworker::stopped(p.started);
            let stale = now - h.worker_since.load(SeqCst) > 10_000_000;
            if !(ours_stopped || stale)
                || h.worker
                    .compare_exchange(STARTING, IDLE, SeqCst, SeqCst)
                    .is_err()
            {
                return true;
            }
        }
        _ => {}
    }
    if h.worker
        .compare_exchange(IDLE, STARTING, SeqCst, SeqCst)
        .is_err()
    {
        return true; // another backend registered one just now
    }
    h.worker_since.store(now, SeqCst);
    let worker = CALLER.with(|c| c.map(|c| c.0));
    match worker.and_then(|w| crate::pg::bgworker::register(&w, p.handle)) {
        Some(started) => {
            p.started = started;
            true
        }
        None => {
            h.worker.store(IDLE, SeqCst);
            false
        }
    }
}

/// How long a backend that exits waits for its records to be written.
const EXIT_WAIT_MS: u64 = 5_000;

/// Before this backend exits: its transaction ends (its locks are released before any wait);
/// what it held back goes into the queue; and it waits (up to [`EXIT_WAIT_MS`]) until a worker
/// has written its records. Those still queued then stay queued, and are named in the server
/// log.
///
/// # Safety
/// Called by PostgreSQL before the process detaches from shared memory.
unsafe extern "C-unwind" fn on_exit(_code: i32, _arg: pg_sys::Datum) {
    let out = crate::pg::error::catch(|| {
        // SAFETY: what ShutdownPostgres does first (it runs after this callback): the
        // transaction's locks must not be held while this backend waits.
        unsafe { pg_sys::AbortOutOfAnyTransaction() };
        leave();
        Ok(())
    });
    if let Err(e) = out {
        warning(&format!(
            "pg_labels: a record's queue at exit: {}",
            e.data().message
        ));
    }
}

fn leave() {
    let before = CALLER.with(|c| c.map(|c| c.1));
    let mut waited = 0;
    loop {
        // what the caller held back, into the queue (it says whether some is still held)
        let held = before.is_some_and(|f| f(false));
        let pending = PRODUCER.with(|p| match p.as_mut() {
            None => false,
            Some(p) => {
                counters_into_ring(p);
                let pending = !written(p);
                if pending {
                    ensure_worker(p);
                }
                pending
            }
        });
        if (!held && !pending) || waited >= EXIT_WAIT_MS {
            break;
        }
        // SAFETY: a plain sleep of this process.
        unsafe { pg_sys::pg_usleep(50_000) };
        waited += 50;
    }
    PRODUCER.with(|p| {
        let Some(p) = p.as_ref() else { return };
        if written(p) {
            return;
        }
        let h = p.segment.header();
        let why = if h.worker.load(SeqCst) == IDLE {
            "no background worker was free (max_worker_processes): still queued"
        } else {
            "the recorder has not written it yet: still queued"
        };
        let (mut at, write) = (h.read.load(SeqCst), h.write.load(SeqCst));
        while let Some((m, next)) = p.segment.entry(at, write) {
            if m.pid == my_pid() {
                warn_lost(&m, why);
            }
            at = next;
        }
        for i in 0..COUNTERS {
            let c = p.segment.counter(i);
            if c.pid == my_pid() && c.state.load(SeqCst) == OPEN {
                let m = Message {
                    bytes: c.bytes[..c.len as usize].to_vec(),
                    slot: c.slot,
                    pid: c.pid,
                    role: c.role,
                    count: c.word.load(SeqCst) & COUNT_MASK,
                    last: c.last.load(SeqCst),
                };
                warn_lost(&m, why);
            }
        }
    });
    let_go();
    if let Some(f) = before {
        f(true);
    }
}

/// One record that is not (or not yet) written, named in the server log.
pub fn warn_lost(m: &Message, why: &str) {
    let counted = if m.count > 0 {
        format!(
            " ({} alike, the last at {})",
            m.count,
            pg_labels_core::retention::utc_text_micros(m.last)
        )
    } else {
        String::new()
    };
    warning(&format!(
        "pg_labels: not recorded ({why}): {}{counted}",
        String::from_utf8_lossy(&m.bytes)
    ));
}
