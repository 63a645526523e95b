//! A queue from one backend to a background worker that writes what it receives in
//! transactions of its own: for what must outlive the transaction that made it (a refusal's
//! record survives the rollback of the refused statement).
//!
//! No `shared_preload_libraries` entry is needed. A backend that sends makes, on its first
//! record, a dynamic shared memory segment of its own: a header, [`COUNTERS`] counters and a
//! ring of messages, written by this backend only and read by one worker at a time. The
//! segment is pinned, so it outlives the backend until the queue is drained. When a message is
//! queued and no worker is running for the queue, the backend registers a dynamic background
//! worker (from `max_worker_processes`, as `pg_background` does) with the segment's handle;
//! the worker drains the ring, lingers a little for more, and exits when it stays empty.
//!
//! - A **message** is a record's bytes, written by the worker as they are.
//! - A **counter** is a record and how many times it happened: the backend opens it with the
//!   record and counts into it (an atomic add) while its second lasts; the worker takes it
//!   once the second is over (or the backend exits) and writes it once, with its count. So a
//!   count reaches the worker even when its backend does nothing more, or dies.
//!
//! Nothing queued is dropped without a word: a message the worker cannot write, or that no
//! worker will take (the backend exits and none could be started, the worker dies after its
//! backend has gone), is written to the server log as a `WARNING` with its bytes. A backend
//! that exits waits (up to five seconds, its transaction ended first) until its queue is
//! written; the last of the two to leave unpins the segment.
//!
//! What a worker does with the records is its caller's ([`Consumer`]); this module knows
//! nothing of what they mean.

use crate::pg::error::{warning, Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::local::BackendLocal;
use pgrx::pg_sys::{self, Oid};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::SeqCst};

const MAGIC: u32 = 0x706c_6371; // "plcq"
const VERSION: u32 = 2;
/// The ring's size: records are small (a refusal's, a few hundred bytes).
const RING: u64 = 256 * 1024;
/// How many counters a queue has, and the largest record one holds.
pub const COUNTERS: usize = 16;
const COUNTER_BYTES: usize = 8 * 1024 - 40;
/// A ring entry: the record's length, its count (0: a message) and last time, then its bytes.
const ENTRY_HEAD: u64 = 4 + 8 + 8;

const IDLE: u32 = 0;
const RUNNING: u32 = 1;

// a counter's states: FREE (the backend may open it), OPEN (counting), TAKEN (a worker is
// writing it), MOVING (the exiting backend puts it into the ring)
const FREE: u32 = 0;
const OPEN: u32 = 1;
const TAKEN: u32 = 2;
const MOVING: u32 = 3;
/// In a counter's word, over its count: no more may be added.
const CLOSED: u64 = 1 << 63;

#[repr(C)]
struct Counter {
    state: AtomicU32,
    len: u32,
    /// The second it counts (the clock's microseconds / 1e6).
    second: i64,
    /// The count, and [`CLOSED`].
    word: AtomicU64,
    last: AtomicI64,
    bytes: [u8; COUNTER_BYTES],
}

/// At the start of the segment, shared by the backend and its worker.
#[repr(C)]
struct Header {
    magic: u32,
    version: u32,
    /// The database the worker connects to, and the role it writes as.
    database: u32,
    role: u32,
    /// The sending backend's pid, 0 once it has exited.
    producer: AtomicI32,
    /// IDLE, or RUNNING while a worker is registered for the queue.
    worker: AtomicU32,
    /// Set by whichever of the two unpins the segment (once).
    unpinned: AtomicU32,
    _pad: u32,
    /// Bytes ever written and ever read: the ring holds `write - read` of them.
    write: AtomicU64,
    read: AtomicU64,
    /// Records a worker could not write (each named in a `WARNING`).
    lost: AtomicU64,
    /// The running worker's latch (in its PGPROC, in the main shared memory: the same address
    /// in every process), set when a message is queued; 0 when none runs.
    latch: AtomicU64,
    counters: [Counter; COUNTERS],
}

/// A record as the worker receives it: its bytes, and, for a counter, how many times it
/// happened and when last (`count` 0 for a message).
pub struct Message {
    pub bytes: Vec<u8>,
    pub count: u64,
    pub last: i64,
}

/// What starts a worker: the library and function it runs, and its name.
#[derive(Clone, Copy)]
pub struct Worker {
    pub library: &'static str,
    pub function: &'static str,
    pub name: &'static str,
}

/// This backend's end of its queue.
struct Producer {
    handle: u32,
    header: *mut Header,
    ring: *mut u8,
    worker: Worker,
    /// The handle of the worker last registered (palloc'd in TopMemoryContext), to tell a
    /// worker that died before draining, or never started.
    started: *mut pg_sys::BackgroundWorkerHandle,
}

static PRODUCER: BackendLocal<Option<Producer>> = BackendLocal::new(None);

/// What became of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// In the queue, and a worker is (or will be) there to write it.
    Queued,
    /// In the queue, but no worker could be started now (none free): another try is made
    /// with the next record, at the end of every transaction and when this backend exits.
    QueuedWithoutWorker,
    /// The ring is full: not queued.
    Full,
}

/// What this backend does before it exits: queue what it holds back (`true` while some is
/// still held); called with `true` the last time, when what is still held is to be said in
/// the server log. Then the queue's own leaving: see [`on_exit`].
pub type BeforeExit = fn(last: bool) -> bool;
static BEFORE_EXIT: BackendLocal<Option<BeforeExit>> = BackendLocal::new(None);

/// Has this backend a queue?
pub fn exists() -> bool {
    PRODUCER.with(|p| p.is_some())
}

/// This backend's queue, made (with the worker that writes as `role`, asked only now: it may
/// read the catalog, which a queue that exists never needs, so that records can be queued
/// where the catalog cannot be read: at the end of a transaction, before the backend exits).
fn producer<R>(
    role: impl FnOnce() -> Result<Oid>,
    worker: Worker,
    before_exit: BeforeExit,
    f: impl FnOnce(&mut Producer) -> Result<R>,
) -> Result<R> {
    if PRODUCER.with(|p| p.is_none()) {
        let p = create(role()?, worker)?;
        PRODUCER.with(|slot| *slot = Some(p));
        BEFORE_EXIT.set(Some(before_exit));
    }
    PRODUCER.with(|p| f(p.as_mut().expect("made above")))
}

/// Queue one record as a message, making the queue and starting the worker as needed.
pub fn send(
    record: &[u8],
    role: impl FnOnce() -> Result<Oid>,
    worker: Worker,
    before_exit: BeforeExit,
) -> Result<Sent> {
    if ENTRY_HEAD + record.len() as u64 > RING / 4 {
        return Err(Error::new(
            NOT_IN_PREREQUISITE_STATE,
            "pg_labels: a record too large for its queue",
        ));
    }
    producer(role, worker, before_exit, |p| {
        if !put(p, record, 0, 0) {
            return Ok(Sent::Full);
        }
        Ok(if ensure_worker(p) {
            Sent::Queued
        } else {
            Sent::QueuedWithoutWorker
        })
    })
}

/// Into the ring: one entry (false when it has no room).
fn put(p: &Producer, record: &[u8], count: u64, last: i64) -> bool {
    // SAFETY: the header and ring are this backend's pinned mapping of the segment.
    let h = unsafe { &*p.header };
    let len = ENTRY_HEAD + record.len() as u64;
    let (write, read) = (h.write.load(SeqCst), h.read.load(SeqCst));
    if RING - (write - read) < len {
        return false;
    }
    let mut at = write;
    let head = [
        &(record.len() as u32).to_le_bytes()[..],
        &count.to_le_bytes()[..],
        &last.to_le_bytes()[..],
    ];
    for chunk in head.into_iter().chain([record]) {
        for &b in chunk {
            // SAFETY: at % RING is inside the ring.
            unsafe { *p.ring.add((at % RING) as usize) = b };
            at += 1;
        }
    }
    // (published whole: the worker reads up to `write` only)
    h.write.store(at, SeqCst);
    wake(h);
    true
}

/// Wake the worker, if one runs, to read what was queued.
fn wake(h: &Header) {
    let latch = h.latch.load(SeqCst);
    if latch != 0 {
        // SAFETY: a latch in a PGPROC (shared memory that lives as long as the server): at
        // worst, that of a process that has since taken the worker's place, woken for nothing.
        unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
    }
}

/// Open a counter for a record first seen at `at` (microseconds), counting in its second:
/// its index, or `None` when every counter is in use or the record is too large for one.
pub fn open_counter(
    record: &[u8],
    at: i64,
    role: impl FnOnce() -> Result<Oid>,
    worker: Worker,
    before_exit: BeforeExit,
) -> Result<Option<usize>> {
    if record.len() > COUNTER_BYTES {
        return Ok(None);
    }
    producer(role, worker, before_exit, |p| {
        // SAFETY: the header of this backend's mapping.
        let h = unsafe { &*p.header };
        // (only this backend makes a counter OPEN: a FREE one is no one else's)
        let Some(i) = h.counters.iter().position(|c| c.state.load(SeqCst) == FREE) else {
            return Ok(None);
        };
        // SAFETY: counter i is FREE: no other process reads its fields until it is OPEN.
        let c = unsafe { &mut (*p.header).counters[i] };
        c.bytes[..record.len()].copy_from_slice(record);
        c.len = record.len() as u32;
        c.second = at.div_euclid(1_000_000);
        c.last.store(at, SeqCst);
        c.word.store(1, SeqCst);
        c.state.store(OPEN, SeqCst);
        ensure_worker(p);
        Ok(Some(i))
    })
}

/// Count one more into an open counter of this backend's: `false` when it is closed (its
/// second is over and a worker took it): open another.
pub fn count(counter: usize, at: i64) -> bool {
    PRODUCER.with(|p| {
        let Some(p) = p.as_ref() else { return false };
        // SAFETY: the header of this backend's mapping.
        let c = unsafe { &(*p.header).counters[counter] };
        let mut w = c.word.load(SeqCst);
        loop {
            if w & CLOSED != 0 {
                return false;
            }
            match c.word.compare_exchange(w, w + 1, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(now) => w = now,
            }
        }
        c.last.fetch_max(at, SeqCst);
        true
    })
}

/// Is anything of this queue not yet written: a message, or a counter open or being taken?
fn pending(h: &Header) -> bool {
    h.write.load(SeqCst) != h.read.load(SeqCst)
        || h.counters.iter().any(|c| c.state.load(SeqCst) != FREE)
}

/// Records of this backend a worker could not write (each said in a `WARNING`).
pub fn lost() -> u64 {
    PRODUCER.with(|p| {
        p.as_ref()
            // SAFETY: the header of this backend's mapping.
            .map_or(0, |p| unsafe { &*p.header }.lost.load(SeqCst))
    })
}

/// Wait, up to `timeout_ms`, until a worker has written everything this backend queued or
/// counted (`true` at once when it queued nothing). Interruptible (a cancel ends the wait).
pub fn drained(timeout_ms: i64) -> bool {
    let mut waited = 0;
    loop {
        let done = PRODUCER.with(|p| match p.as_mut() {
            None => true,
            Some(p) => {
                // SAFETY: the header of this backend's mapping.
                let h = unsafe { &*p.header };
                let done = !pending(h);
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
        // SAFETY: waits on this backend's latch with a timeout; interrupts are checked after.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                10,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
            if pg_sys::InterruptPending != 0 {
                pg_sys::ProcessInterrupts();
            }
        }
        waited += 10;
    }
}

fn create(role: Oid, worker: Worker) -> Result<Producer> {
    let size = std::mem::size_of::<Header>() + RING as usize;
    // SAFETY: a segment made outside any resource owner (it outlives transactions), its
    // mapping and the segment pinned; the header written before anyone else can see it. A
    // failure of dsm_create (no room for it) comes back as an Err, not in place of the error
    // the caller is raising.
    let seg = crate::pg::error::catch(|| unsafe {
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::CurrentResourceOwner = std::ptr::null_mut();
        let seg = pg_sys::dsm_create(size, pg_sys::DSM_CREATE_NULL_IF_MAXSEGMENTS as i32);
        pg_sys::CurrentResourceOwner = owner;
        Ok(seg)
    });
    let seg = match seg {
        Ok(seg) if !seg.is_null() => seg,
        Ok(_) => {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                "pg_labels: no dynamic shared memory segment for a record's queue",
            ))
        }
        Err(e) => return Err(e),
    };
    // SAFETY: as above: the segment is this backend's, mapped, `size` bytes.
    unsafe {
        pg_sys::dsm_pin_mapping(seg);
        pg_sys::dsm_pin_segment(seg);
        let base = pg_sys::dsm_segment_address(seg) as *mut u8;
        // zeroes are a valid header (atomics at 0, counters FREE), then its fields
        std::ptr::write_bytes(base, 0, std::mem::size_of::<Header>());
        let header = base as *mut Header;
        (*header).magic = MAGIC;
        (*header).version = VERSION;
        (*header).database = pg_sys::MyDatabaseId.to_u32();
        (*header).role = role.to_u32();
        (*header).producer.store(pg_sys::MyProcPid, SeqCst);
        let handle = pg_sys::dsm_segment_handle(seg);
        pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0usize));
        Ok(Producer {
            handle,
            header,
            ring: base.add(std::mem::size_of::<Header>()),
            worker,
            started: std::ptr::null_mut(),
        })
    }
}

/// A worker for the queue: running already, or registered now. `false` when none could be.
fn ensure_worker(p: &mut Producer) -> bool {
    // SAFETY: the header of this backend's mapping.
    let h = unsafe { &*p.header };
    if h.worker.load(SeqCst) == RUNNING {
        // a worker registered but gone before it drained (it failed to start, or died) left
        // the queue marked: taken back
        if p.started.is_null() || worker_status(p.started) != pg_sys::BgwHandleStatus::BGWH_STOPPED
        {
            return true;
        }
        let _ = h.worker.compare_exchange(RUNNING, IDLE, SeqCst, SeqCst);
    }
    if h.worker
        .compare_exchange(IDLE, RUNNING, SeqCst, SeqCst)
        .is_err()
    {
        return true;
    }
    match register(p) {
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

fn worker_status(handle: *mut pg_sys::BackgroundWorkerHandle) -> pg_sys::BgwHandleStatus::Type {
    let mut pid = 0;
    // SAFETY: a handle RegisterDynamicBackgroundWorker gave, kept in TopMemoryContext.
    unsafe { pg_sys::GetBackgroundWorkerPid(handle, &mut pid) }
}

fn register(p: &Producer) -> Option<*mut pg_sys::BackgroundWorkerHandle> {
    // SAFETY: a BackgroundWorker filled as RegisterDynamicBackgroundWorker wants it; the
    // handle it returns is allocated in TopMemoryContext, to outlive this transaction. A
    // failure (out of memory) is no worker, not an error.
    crate::pg::error::catch(|| unsafe {
        let mut w: pg_sys::BackgroundWorker = std::mem::zeroed();
        copy(&mut w.bgw_name, p.worker.name);
        copy(&mut w.bgw_type, p.worker.name);
        copy(&mut w.bgw_library_name, p.worker.library);
        copy(&mut w.bgw_function_name, p.worker.function);
        w.bgw_flags =
            (pg_sys::BGWORKER_SHMEM_ACCESS | pg_sys::BGWORKER_BACKEND_DATABASE_CONNECTION) as i32;
        w.bgw_start_time = pg_sys::BgWorkerStartTime::BgWorkerStart_RecoveryFinished;
        w.bgw_restart_time = pg_sys::BGW_NEVER_RESTART as i32;
        w.bgw_main_arg = pg_sys::Datum::from(p.handle as usize);
        w.bgw_notify_pid = 0;
        let context = pg_sys::MemoryContextSwitchTo(pg_sys::TopMemoryContext);
        let mut handle: *mut pg_sys::BackgroundWorkerHandle = std::ptr::null_mut();
        let ok = pg_sys::RegisterDynamicBackgroundWorker(&mut w, &mut handle);
        pg_sys::MemoryContextSwitchTo(context);
        Ok(ok.then_some(handle))
    })
    .ok()
    .flatten()
}

fn copy<const N: usize>(to: &mut [std::ffi::c_char; N], from: &str) {
    for (i, b) in from.bytes().take(N - 1).enumerate() {
        to[i] = b as std::ffi::c_char;
    }
}

/// Start a worker if records wait and none runs (a try of [`send`]'s, made again at the end
/// of every transaction of this backend while records wait: a worker may have been free
/// since). Reads no catalog.
pub fn nudge() {
    PRODUCER.with(|p| {
        if let Some(p) = p.as_mut() {
            // SAFETY: the header of this backend's mapping.
            if pending(unsafe { &*p.header }) {
                ensure_worker(p);
            }
        }
    });
}

/// How long a backend that exits waits for its queue to be written.
const EXIT_WAIT_MS: u64 = 5_000;

/// Before this backend exits: its transaction ends (its locks are released before any
/// wait); what it held back and its open counters go into the ring; and it waits (up to
/// [`EXIT_WAIT_MS`]) until a worker has written the queue. Then: written, the segment is
/// unpinned; a worker running, that worker finishes (and unpins); with none to drain it, each
/// record left is said in the server log and the segment unpinned.
unsafe extern "C-unwind" fn on_exit(_code: i32, _arg: pg_sys::Datum) {
    let out = crate::pg::error::catch(|| {
        // SAFETY: what ShutdownPostgres does first (it runs after this callback): the
        // transaction's locks must not be held while this backend waits.
        unsafe { pg_sys::AbortOutOfAnyTransaction() };
        leave_as_producer();
        Ok(())
    });
    if let Err(e) = out {
        warning(&format!(
            "pg_labels: a record's queue at exit: {}",
            e.data().message
        ));
    }
}

fn leave_as_producer() {
    let before = BEFORE_EXIT.with(|b| *b);
    let mut waited = 0;
    let done = loop {
        // what the caller held back, into the ring (it says whether some is still held)
        let held = before.is_some_and(|f| f(false));
        let pending = PRODUCER.with(|p| {
            let Some(p) = p.as_mut() else { return false };
            // SAFETY: the header of this backend's mapping, mapped until it exits.
            let h = unsafe { &*p.header };
            // no more counting: the open counters go as they are
            for c in h.counters.iter() {
                if c.state.load(SeqCst) == OPEN && !take_into_ring(p, c) {
                    break;
                }
            }
            let pending = pending(h);
            if pending {
                ensure_worker(p);
            }
            pending
        });
        if !held && !pending {
            break true;
        }
        if waited >= EXIT_WAIT_MS {
            break false;
        }
        // SAFETY: a plain sleep of this process.
        unsafe { pg_sys::pg_usleep(50_000) };
        waited += 50;
    };
    PRODUCER.with(|p| {
        let Some(p) = p.as_mut() else { return };
        // SAFETY: the header of this backend's mapping, mapped until it exits.
        let h = unsafe { &*p.header };
        h.producer.store(0, SeqCst);
        if !done
            && h.worker.load(SeqCst) == RUNNING
            && !p.started.is_null()
            && worker_status(p.started) == pg_sys::BgwHandleStatus::BGWH_STARTED
        {
            return; // the worker writes the rest, and unpins
        }
        if !done {
            let reason = if h.worker.load(SeqCst) == RUNNING {
                "no background worker started in time"
            } else {
                "no background worker was free: max_worker_processes"
            };
            say_lost(h, p.ring, reason);
        }
        unpin(h, p.handle);
    });
    if let Some(f) = before {
        f(true);
    }
}

/// A counter OPEN, taken by the exiting backend into the ring with its count (`false` when the
/// ring has no room: it stays open).
fn take_into_ring(p: &Producer, c: &Counter) -> bool {
    if c.state
        .compare_exchange(OPEN, MOVING, SeqCst, SeqCst)
        .is_err()
    {
        return true; // a worker has it
    }
    let count = c.word.fetch_or(CLOSED, SeqCst) & !CLOSED;
    if put(p, &c.bytes[..c.len as usize], count, c.last.load(SeqCst)) {
        c.state.store(FREE, SeqCst);
        true
    } else {
        c.state.store(OPEN, SeqCst);
        false
    }
}

/// Every record left in a queue no one will write, in the server log (a `WARNING` each).
fn say_lost(h: &Header, ring: *const u8, why: &str) {
    let (mut at, write) = (h.read.load(SeqCst), h.write.load(SeqCst));
    while let Some((m, next)) = entry(ring, at, write) {
        warn_lost(&m, why);
        at = next;
    }
    for c in h.counters.iter() {
        if c.state.load(SeqCst) != FREE {
            let m = Message {
                bytes: c.bytes[..c.len as usize].to_vec(),
                count: c.word.load(SeqCst) & !CLOSED,
                last: c.last.load(SeqCst),
            };
            warn_lost(&m, why);
        }
    }
}

/// One record that will not be written, named in the server log.
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

/// The ring's entry at `at` (below `write`), and where the next begins.
fn entry(ring: *const u8, at: u64, write: u64) -> Option<(Message, u64)> {
    let byte = |i: u64| -> u8 {
        // SAFETY: i % RING is inside the ring.
        unsafe { *ring.add((i % RING) as usize) }
    };
    let bytes = |from: u64, n: u64| -> Vec<u8> { (from..from + n).map(byte).collect() };
    if at + ENTRY_HEAD > write {
        return None;
    }
    let head = bytes(at, ENTRY_HEAD);
    let len = u32::from_le_bytes(head[0..4].try_into().ok()?) as u64;
    let count = u64::from_le_bytes(head[4..12].try_into().ok()?);
    let last = i64::from_le_bytes(head[12..20].try_into().ok()?);
    if at + ENTRY_HEAD + len > write {
        return None;
    }
    Some((
        Message {
            bytes: bytes(at + ENTRY_HEAD, len),
            count,
            last,
        },
        at + ENTRY_HEAD + len,
    ))
}

fn unpin(h: &Header, handle: u32) {
    if h.unpinned.compare_exchange(0, 1, SeqCst, SeqCst).is_ok() {
        // SAFETY: the segment pinned by its producer, unpinned once.
        unsafe { pg_sys::dsm_unpin_segment(handle) };
    }
}

/// A worker's end of a queue.
pub struct Consumer {
    handle: u32,
    header: *mut Header,
    ring: *const u8,
}

/// The queue this worker attached to, for its exit callback; `None` once it left in order.
static ATTACHED: BackendLocal<Option<(u32, usize, usize)>> = BackendLocal::new(None);

impl Consumer {
    /// Attach to the queue whose segment's handle the worker was started with (`None` when
    /// it is gone or not a queue). From now on, if this worker exits before it leaves in order
    /// ([`Consumer::leave`]): the queue is marked without a worker, and if its backend has
    /// exited, every record left is said in the server log and the segment unpinned.
    pub fn attach(handle: u32) -> Option<Consumer> {
        // SAFETY: attaching maps the segment for this process (no resource owner: until exit);
        // the header is checked before anything else is read.
        unsafe {
            let seg = pg_sys::dsm_attach(handle);
            if seg.is_null() {
                return None;
            }
            pg_sys::dsm_pin_mapping(seg);
            let base = pg_sys::dsm_segment_address(seg) as *mut u8;
            let header = base as *mut Header;
            if (*header).magic != MAGIC || (*header).version != VERSION {
                return None;
            }
            let ring = base.add(std::mem::size_of::<Header>());
            (*header).latch.store(my_latch(), SeqCst);
            ATTACHED.with(|a| *a = Some((handle, header as usize, ring as usize)));
            pg_sys::before_shmem_exit(Some(worker_exit), pg_sys::Datum::from(0usize));
            Some(Consumer {
                handle,
                header,
                ring,
            })
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the attached segment's header, mapped until this process exits.
        unsafe { &*self.header }
    }

    /// The database and role the records are to be written as.
    pub fn database(&self) -> Oid {
        Oid::from(self.header().database)
    }

    pub fn role(&self) -> Oid {
        Oid::from(self.header().role)
    }

    /// Up to `max` messages from the ring, and how far reading them takes it (for
    /// [`Consumer::done`]); nothing is taken off until then.
    pub fn peek(&self, max: usize) -> (Vec<Message>, u64) {
        let h = self.header();
        let (write, mut at) = (h.write.load(SeqCst), h.read.load(SeqCst));
        let mut out = Vec::new();
        while out.len() < max {
            let Some((m, next)) = entry(self.ring, at, write) else {
                break;
            };
            out.push(m);
            at = next;
        }
        (out, at)
    }

    /// Take the messages read up to `to` off the ring.
    pub fn done(&self, to: u64) {
        self.header().read.store(to, SeqCst);
    }

    /// The counters to write now: those whose second is before `second` (the clock's, now),
    /// or whose backend has exited, closed and taken (with any a worker before this one took
    /// and did not write). Each is [`Consumer::release`]d once written.
    pub fn due(&self, second: i64) -> Vec<(usize, Message)> {
        let h = self.header();
        let gone = h.producer.load(SeqCst) == 0;
        let mut out = Vec::new();
        for (i, c) in h.counters.iter().enumerate() {
            let state = c.state.load(SeqCst);
            let take = match state {
                OPEN if c.second < second || gone => c
                    .state
                    .compare_exchange(OPEN, TAKEN, SeqCst, SeqCst)
                    .is_ok(),
                // (one worker at a time: a counter TAKEN now was left by one that died)
                TAKEN => true,
                _ => false,
            };
            if take {
                let count = c.word.fetch_or(CLOSED, SeqCst) & !CLOSED;
                out.push((
                    i,
                    Message {
                        bytes: c.bytes[..c.len as usize].to_vec(),
                        count,
                        last: c.last.load(SeqCst),
                    },
                ));
            }
        }
        out
    }

    /// A counter written: free for its backend again.
    pub fn release(&self, counter: usize) {
        self.header().counters[counter].state.store(FREE, SeqCst);
    }

    /// Records this worker could not write (each said in a `WARNING`): for the backend's
    /// `lost()`.
    pub fn lost(&self, n: u64) {
        self.header().lost.fetch_add(n, SeqCst);
    }

    /// The queue is empty and stays so for this worker: it leaves (`true`), and unpins the
    /// segment if its backend has exited. `false` when records arrived meanwhile (or a counter
    /// is open) and this worker goes on.
    pub fn leave(&self) -> bool {
        let h = self.header();
        h.worker.store(IDLE, SeqCst);
        if pending(h)
            && h.worker
                .compare_exchange(IDLE, RUNNING, SeqCst, SeqCst)
                .is_ok()
        {
            return false;
        }
        ATTACHED.with(|a| *a = None);
        let _ = h.latch.compare_exchange(my_latch(), 0, SeqCst, SeqCst);
        if h.producer.load(SeqCst) == 0 && !pending(h) {
            unpin(h, self.handle);
        }
        true
    }
}

/// A worker exits without having left in order (a signal, an error, its connection refused):
/// the queue is marked without a worker (its backend starts another); if its backend has
/// exited, no one will, so every record left is said in the server log.
unsafe extern "C-unwind" fn worker_exit(_code: i32, _arg: pg_sys::Datum) {
    let Some((handle, header, ring)) = ATTACHED.with(|a| a.take()) else {
        return;
    };
    let _ = crate::pg::error::catch(|| {
        // SAFETY: the segment this worker attached and pinned the mapping of: mapped until
        // its shared memory is detached, after this callback.
        let h = unsafe { &*(header as *const Header) };
        let _ = h.latch.compare_exchange(my_latch(), 0, SeqCst, SeqCst);
        h.worker.store(IDLE, SeqCst);
        if h.producer.load(SeqCst) == 0 {
            say_lost(
                h,
                ring as *const u8,
                "the refusal recorder stopped after its backend had exited",
            );
            unpin(h, handle);
        }
        Ok(())
    });
}

/// This process's latch, as a queue's header keeps it.
fn my_latch() -> u64 {
    // SAFETY: reads the pointer PostgreSQL set when the process started.
    unsafe { pg_sys::MyLatch as u64 }
}
