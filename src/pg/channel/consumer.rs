//! The worker's end of a queue: one worker at a time per queue takes batches of entries off the
//! ring once it has written them, counts into a sender's slot what it could not write, and
//! closes the queue when it leaves it empty.

use super::segment::{
    Message, Segment, CLOSED, COUNTERS, COUNT_MASK, FREE, IDLE, OPEN, RUNNING, STARTING, TAKEN,
};
use crate::pg::local::BackendLocal;
use pgrx::pg_sys::{self, Oid};
use std::sync::atomic::Ordering::SeqCst;

/// A worker's end of a queue.
pub struct Consumer {
    handle: u32,
    segment: Segment,
}

/// A batch read off the ring: its entries, where it ends, and how many bytes of it each
/// role's were.
pub struct Batch {
    pub messages: Vec<Message>,
    to: u64,
    roles: Vec<(u32, u64)>,
}

/// The queue this worker attached to, for its exit callback; `None` once it left in order.
static ATTACHED: BackendLocal<Option<(u32, usize)>> = BackendLocal::new(None);

impl Consumer {
    /// Attach to the queue whose segment's handle the worker was started with, and take it as
    /// its worker (`None` when it is gone, not a queue, or another worker has it). From now on,
    /// if this worker exits before it leaves in order ([`Consumer::leave`]), the queue is
    /// marked without a worker, and the next sender starts another.
    pub fn attach(handle: u32) -> Option<Consumer> {
        // SAFETY: maps the segment for this process (no resource owner: until exit); the
        // header is checked before anything else is read.
        unsafe {
            let seg = pg_sys::dsm_attach(handle);
            if seg.is_null() {
                return None;
            }
            pg_sys::dsm_pin_mapping(seg);
            let base = pg_sys::dsm_segment_address(seg) as *mut u8;
            let h = base as *const super::segment::Header;
            if pg_sys::dsm_segment_map_length(seg) < std::mem::size_of::<super::segment::Header>()
                || (*h).magic != super::segment::MAGIC
                || (*h).version != super::segment::VERSION
            {
                return None;
            }
            let segment = Segment::at(base);
            // the registration that started this worker (or a stale one taken back since)
            if segment
                .header()
                .worker
                .compare_exchange(STARTING, RUNNING, SeqCst, SeqCst)
                .is_err()
                && segment
                    .header()
                    .worker
                    .compare_exchange(IDLE, RUNNING, SeqCst, SeqCst)
                    .is_err()
            {
                return None;
            }
            segment.header().latch.store(my_latch(), SeqCst);
            ATTACHED.with(|a| *a = Some((handle, base as usize)));
            pg_sys::before_shmem_exit(Some(worker_exit), pg_sys::Datum::from(0usize));
            Some(Consumer { handle, segment })
        }
    }

    /// The database the records are to be written in.
    pub fn database(&self) -> Oid {
        Oid::from(self.segment.header().database)
    }

    /// Up to `max` entries from the ring (nothing is taken off until [`Consumer::done`]).
    pub fn peek(&self, max: usize) -> Batch {
        let h = self.segment.header();
        let (write, mut at) = (h.write.load(SeqCst), h.read.load(SeqCst));
        let mut batch = Batch {
            messages: Vec::new(),
            to: at,
            roles: Vec::new(),
        };
        while batch.messages.len() < max {
            let Some((m, next)) = self.segment.entry(at, write) else {
                break;
            };
            match batch.roles.iter_mut().find(|r| r.0 == m.role) {
                Some(r) => r.1 += next - at,
                None => batch.roles.push((m.role, next - at)),
            }
            batch.messages.push(m);
            at = next;
        }
        batch.to = at;
        batch
    }

    /// The counters to write now: those whose second is before `second` (the clock's, now),
    /// closed and taken (with any a worker before this one took and did not write). Each is
    /// [`Consumer::release`]d once written.
    pub fn due(&self, second: i64) -> Vec<(usize, Message)> {
        let mut out = Vec::new();
        for i in 0..COUNTERS {
            let c = self.segment.counter(i);
            let take = match c.state.load(SeqCst) {
                OPEN if c.second < second => c
                    .state
                    .compare_exchange(OPEN, TAKEN, SeqCst, SeqCst)
                    .is_ok(),
                // (one worker at a time: a counter TAKEN now was left by one that died)
                TAKEN => true,
                _ => false,
            };
            if take {
                let count = c.word.fetch_or(CLOSED, SeqCst) & COUNT_MASK;
                out.push((
                    i,
                    Message {
                        bytes: c.bytes[..c.len as usize].to_vec(),
                        slot: c.slot,
                        pid: c.pid,
                        role: c.role,
                        count,
                        last: c.last.load(SeqCst),
                    },
                ));
            }
        }
        out
    }

    /// A counter written: free for a backend again.
    pub fn release(&self, counter: usize) {
        self.segment.counter(counter).state.store(FREE, SeqCst);
    }

    /// Take a batch off the ring, written.
    pub fn done(&self, batch: &Batch) {
        self.segment.locked(|l| l.taken(batch.to, &batch.roles));
    }

    /// Count one record of `m`'s sender that could not be written (said in the server log by
    /// the caller), into its slot if its backend still owns it.
    pub fn lost(&self, m: &Message) {
        if let Some(s) = self.segment.slot(m.slot) {
            self.segment.locked(|_| {
                if s.pid.load(SeqCst) == m.pid {
                    s.lost.fetch_add(1, SeqCst);
                }
            });
        }
    }

    /// The queue is empty: the worker leaves it (`true`), closed and unpinned (destroyed once
    /// every sender let go of it). `false` when entries arrived meanwhile, or a counter is
    /// claimed, and it goes on.
    pub fn leave(&self) -> bool {
        let counting = self.segment.any_counting();
        let closed = self.segment.locked(|l| {
            if counting || l.header.write.load(SeqCst) != l.header.read.load(SeqCst) {
                return false;
            }
            l.header.closed.store(1, SeqCst);
            l.header.worker.store(IDLE, SeqCst);
            let _ = l
                .header
                .latch
                .compare_exchange(my_latch(), 0, SeqCst, SeqCst);
            true
        });
        if closed {
            ATTACHED.with(|a| *a = None);
            // SAFETY: the queue's pin, given up once, by the worker that closed it.
            unsafe { pg_sys::dsm_unpin_segment(self.handle) };
        }
        closed
    }
}

/// A worker exits without having left in order (a signal, an error, its connection refused):
/// the queue is marked without a worker, and its next sender starts another.
///
/// # Safety
/// Called by PostgreSQL before the process detaches from shared memory.
unsafe extern "C-unwind" fn worker_exit(_code: i32, _arg: pg_sys::Datum) {
    let Some((_, base)) = ATTACHED.with(|a| a.take()) else {
        return;
    };
    // SAFETY: the segment this worker attached and pinned the mapping of: mapped until its
    // shared memory is detached, after this callback.
    let segment = unsafe { Segment::at(base as *mut u8) };
    let h = segment.header();
    let _ = h.latch.compare_exchange(my_latch(), 0, SeqCst, SeqCst);
    h.worker.store(IDLE, SeqCst);
}

/// This process's latch, as a queue's header keeps it.
fn my_latch() -> u64 {
    // SAFETY: reads the pointer PostgreSQL set when the process started.
    unsafe { pg_sys::MyLatch as u64 }
}
