//! A queue from one backend to a background worker that writes what it receives in
//! transactions of its own: for what must outlive the transaction that made it (a refusal's
//! record survives the rollback of the refused statement).
//!
//! No `shared_preload_libraries` entry is needed. A backend that sends makes, on its first
//! record, a dynamic shared memory segment of its own: a header and a ring of records (each a
//! length and its bytes), written by this backend only and read by one worker at a time. The
//! segment is pinned, so it outlives the backend until the queue is drained. When a record is
//! queued and no worker is running for the queue, the backend registers a dynamic background
//! worker (from `max_worker_processes`, as `pg_background` does) with the segment's handle;
//! the worker drains the ring, lingers a little for more, and exits when it stays empty. When
//! the backend exits, it starts one if records are left; the last of the two to leave unpins
//! the segment.
//!
//! What a worker does with the records is its caller's ([`Consumer`]); this module knows
//! nothing of what they mean.

use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::local::BackendLocal;
use pgrx::pg_sys::{self, Oid};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::SeqCst};

const MAGIC: u32 = 0x706c_6371; // "plcq"
const VERSION: u32 = 1;
/// The ring's size: records are small (a refusal's, a few hundred bytes).
const RING: u64 = 256 * 1024;

const IDLE: u32 = 0;
const RUNNING: u32 = 1;

/// At the start of the segment, shared by the backend and its worker.
#[repr(C)]
struct Header {
    magic: u32,
    version: u32,
    /// The database the worker connects to, and the role it connects as.
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
    /// worker that died before draining.
    started: *mut pg_sys::BackgroundWorkerHandle,
}

static PRODUCER: BackendLocal<Option<Producer>> = BackendLocal::new(None);

/// What became of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// In the queue, and a worker is (or will be) there to write it.
    Queued,
    /// In the queue, but no worker could be started now (none free): another try is made
    /// with the next record and when this backend exits.
    QueuedWithoutWorker,
    /// The ring is full: not queued.
    Full,
}

/// What this backend does before it exits (queue what it holds back; `true` while some is
/// still held), then the queue's own leaving: see [`on_exit`].
static BEFORE_EXIT: BackendLocal<Option<fn() -> bool>> = BackendLocal::new(None);

/// Has this backend a queue?
pub fn exists() -> bool {
    PRODUCER.with(|p| p.is_some())
}

/// Queue one record, to be written by a worker connected to this database as `role` (asked
/// only when the queue is made: it may read the catalog, which a queue that exists never
/// needs, so that records can be queued where the catalog cannot be read: at the end of a
/// transaction, before the backend exits), making the queue and starting the worker as needed.
pub fn send(
    record: &[u8],
    role: impl FnOnce() -> Result<Oid>,
    worker: Worker,
    before_exit: fn() -> bool,
) -> Result<Sent> {
    let len = 4 + record.len() as u64;
    if len > RING / 4 {
        return Err(Error::new(
            NOT_IN_PREREQUISITE_STATE,
            "pg_labels: a record too large for its queue",
        ));
    }
    if PRODUCER.with(|p| p.is_none()) {
        let p = create(role()?, worker)?;
        PRODUCER.with(|slot| *slot = Some(p));
        BEFORE_EXIT.set(Some(before_exit));
    }
    PRODUCER.with(|p| {
        let p = p.as_mut().expect("made above");
        // SAFETY: the header and ring are this backend's pinned mapping of the segment.
        let h = unsafe { &*p.header };
        let (write, read) = (h.write.load(SeqCst), h.read.load(SeqCst));
        if RING - (write - read) < len {
            return Ok(Sent::Full);
        }
        let mut at = write;
        for chunk in [&(record.len() as u32).to_le_bytes()[..], record] {
            for &b in chunk {
                // SAFETY: at % RING is inside the ring.
                unsafe { *p.ring.add((at % RING) as usize) = b };
                at += 1;
            }
        }
        h.write.store(at, SeqCst);
        Ok(if ensure_worker(p) {
            Sent::Queued
        } else {
            Sent::QueuedWithoutWorker
        })
    })
}

/// Wait, up to `timeout_ms`, until a worker has written everything this backend queued
/// (`true` at once when it queued nothing). Interruptible (a cancel ends the wait).
pub fn drained(timeout_ms: i64) -> bool {
    let mut waited = 0;
    loop {
        let done = PRODUCER.with(|p| match p.as_mut() {
            None => true,
            Some(p) => {
                // SAFETY: the header of this backend's mapping.
                let h = unsafe { &*p.header };
                let done = h.write.load(SeqCst) == h.read.load(SeqCst);
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
    // mapping and the segment pinned; the header written before anyone else can see it.
    unsafe {
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::CurrentResourceOwner = std::ptr::null_mut();
        let seg = pg_sys::dsm_create(size, pg_sys::DSM_CREATE_NULL_IF_MAXSEGMENTS as i32);
        pg_sys::CurrentResourceOwner = owner;
        if seg.is_null() {
            return Err(Error::new(
                NOT_IN_PREREQUISITE_STATE,
                "pg_labels: no dynamic shared memory segment for a record's queue",
            ));
        }
        pg_sys::dsm_pin_mapping(seg);
        pg_sys::dsm_pin_segment(seg);
        let base = pg_sys::dsm_segment_address(seg) as *mut u8;
        let header = base as *mut Header;
        header.write(Header {
            magic: MAGIC,
            version: VERSION,
            database: pg_sys::MyDatabaseId.to_u32(),
            role: role.to_u32(),
            producer: AtomicI32::new(pg_sys::MyProcPid),
            worker: AtomicU32::new(IDLE),
            unpinned: AtomicU32::new(0),
            _pad: 0,
            write: AtomicU64::new(0),
            read: AtomicU64::new(0),
        });
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
        if p.started.is_null() || !stopped(p.started) {
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

fn stopped(handle: *mut pg_sys::BackgroundWorkerHandle) -> bool {
    let mut pid = 0;
    // SAFETY: a handle RegisterDynamicBackgroundWorker gave, kept in TopMemoryContext.
    let status = unsafe { pg_sys::GetBackgroundWorkerPid(handle, &mut pid) };
    status == pg_sys::BgwHandleStatus::BGWH_STOPPED
}

fn register(p: &Producer) -> Option<*mut pg_sys::BackgroundWorkerHandle> {
    // SAFETY: a BackgroundWorker filled as RegisterDynamicBackgroundWorker wants it; the
    // handle it returns is allocated in TopMemoryContext, to outlive this transaction.
    unsafe {
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
        ok.then_some(handle)
    }
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
            let h = unsafe { &*p.header };
            if h.write.load(SeqCst) != h.read.load(SeqCst) {
                ensure_worker(p);
            }
        }
    });
}

/// How long a backend that exits waits for a worker to take what it queued (or held back).
const EXIT_WAIT_MS: u64 = 5_000;

/// Before this backend exits: what it held back goes into the queue, and a worker is started
/// if records are left and none runs, waiting (up to [`EXIT_WAIT_MS`]) for a worker to be free
/// and for room in the ring for what it held back; with none to drain it, the segment is
/// unpinned and what was left is said in the server log.
unsafe extern "C-unwind" fn on_exit(_code: i32, _arg: pg_sys::Datum) {
    let before = BEFORE_EXIT.with(|b| *b);
    let mut waited = 0;
    loop {
        // what the caller held back, into the ring (it says whether some is still held)
        let held = before.is_some_and(|f| f());
        let pending = PRODUCER.with(|p| {
            let Some(p) = p.as_mut() else { return false };
            // SAFETY: the header of this backend's mapping, mapped until it exits.
            let h = unsafe { &*p.header };
            let pending = h.write.load(SeqCst) != h.read.load(SeqCst);
            if pending {
                ensure_worker(p);
            }
            pending
        });
        let running = PRODUCER.with(|p| {
            p.as_ref()
                // SAFETY: as above.
                .is_some_and(|p| unsafe { &*p.header }.worker.load(SeqCst) == RUNNING)
        });
        // done when nothing is held back and the worker (if any) has all the rest
        if !held && (!pending || running) || waited >= EXIT_WAIT_MS {
            break;
        }
        // SAFETY: a plain sleep of this process.
        unsafe { pg_sys::pg_usleep(50_000) };
        waited += 50;
    }
    PRODUCER.with(|p| {
        let Some(p) = p.as_mut() else { return };
        // SAFETY: the header of this backend's mapping, mapped until it exits.
        let h = unsafe { &*p.header };
        h.producer.store(0, SeqCst);
        let pending = h.write.load(SeqCst) != h.read.load(SeqCst);
        if pending && ensure_worker(p) {
            return; // the worker unpins it once drained
        }
        if h.worker.load(SeqCst) == IDLE {
            if pending {
                // each record that will not be written, named in the server log
                let mut at = h.read.load(SeqCst);
                let write = h.write.load(SeqCst);
                let byte = |i: u64| -> u8 {
                    // SAFETY: i % RING is inside the ring of this backend's mapping.
                    unsafe { *p.ring.add((i % RING) as usize) }
                };
                while at + 4 <= write {
                    let len = u32::from_le_bytes([byte(at), byte(at + 1), byte(at + 2), byte(at + 3)]) as u64;
                    let record: Vec<u8> = (at + 4..(at + 4 + len).min(write)).map(byte).collect();
                    crate::pg::error::warning(&format!(
                        "pg_labels: not recorded (no background worker was free: max_worker_processes): {}",
                        String::from_utf8_lossy(&record)
                    ));
                    at += 4 + len;
                }
            }
            unpin(h, p.handle);
        }
    });
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

impl Consumer {
    /// Attach to the queue whose segment's handle the worker was started with (`None` when
    /// it is gone or not a queue).
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
            Some(Consumer {
                handle,
                header,
                ring: base.add(std::mem::size_of::<Header>()),
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

    /// Up to `max` records from the queue, and how far reading them takes it (for
    /// [`Consumer::done`]); nothing is taken off until then.
    pub fn peek(&self, max: usize) -> (Vec<Vec<u8>>, u64) {
        let h = self.header();
        let (write, mut at) = (h.write.load(SeqCst), h.read.load(SeqCst));
        let mut out = Vec::new();
        let byte = |i: u64| -> u8 {
            // SAFETY: i % RING is inside the ring.
            unsafe { *self.ring.add((i % RING) as usize) }
        };
        while at + 4 <= write && out.len() < max {
            let len =
                u32::from_le_bytes([byte(at), byte(at + 1), byte(at + 2), byte(at + 3)]) as u64;
            if at + 4 + len > write {
                break;
            }
            out.push((at + 4..at + 4 + len).map(byte).collect());
            at += 4 + len;
        }
        (out, at)
    }

    /// Take the records read up to `to` off the queue.
    pub fn done(&self, to: u64) {
        self.header().read.store(to, SeqCst);
    }

    /// The queue is empty and stays so for this worker: it leaves (`true`), and unpins the
    /// segment if its backend has exited. `false` when records arrived meanwhile and this
    /// worker goes on.
    pub fn leave(&self) -> bool {
        let h = self.header();
        h.worker.store(IDLE, SeqCst);
        if h.write.load(SeqCst) != h.read.load(SeqCst)
            && h.worker
                .compare_exchange(IDLE, RUNNING, SeqCst, SeqCst)
                .is_ok()
        {
            return false;
        }
        if h.producer.load(SeqCst) == 0 && h.write.load(SeqCst) == h.read.load(SeqCst) {
            unpin(h, self.handle);
        }
        true
    }

    /// Leave on a signal or an error, whatever is in the queue (its backend starts another
    /// worker with its next record, or when it exits).
    pub fn abandon(&self) {
        let h = self.header();
        h.worker.store(IDLE, SeqCst);
        if h.producer.load(SeqCst) == 0 {
            unpin(h, self.handle);
        }
    }
}
