//! The queue's shared segment: its header, one slot per backend and a ring of entries, and the
//! lock that guards the ring's positions.
//!
//! Layout: [`Header`], then `nslots` [`Slot`]s (one per `PGPROC`: what a worker could not write
//! of a backend's records), then [`COUNTERS`] [`Counter`]s, then the ring of [`RING`] bytes. An
//! entry is its head ([`ENTRY_HEAD`] bytes: length, slot, pid, role, count, last) and the
//! record's bytes; it is published whole under the lock. A counter is a record and how many
//! times it happened in one second: its backend claims a free one and counts into it (an
//! atomic add); the worker takes it once the second is over. Every process that attaches maps
//! the same segment; only the positions, the roles' shares and `closed` need the lock, which
//! is held for a copy and never across anything that can fail or wait.

use pgrx::pg_sys;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::SeqCst};

pub(super) const MAGIC: u64 = 0x706c_5f72_6563_6f72; // "pl_recor"
pub(super) const VERSION: u32 = 4;
/// The ring's size (one per database).
pub(super) const RING: u64 = 1024 * 1024;
/// The largest record an entry holds (a refusal's record is cut to well under it).
pub const MAX_RECORD: usize = 64 * 1024;
/// The most of the ring one role's records may hold: a flood of one role leaves room for
/// every other's.
pub(super) const ROLE_SHARE: u64 = RING / 4;
/// An entry's head: the record's length, the sender's slot, pid and role, and (a counter
/// moved into the ring) its count and last time.
pub(super) const ENTRY_HEAD: u64 = 4 + 4 + 4 + 4 + 8 + 8;
/// How many counters the queue has, how many one backend and one role may hold at once, and
/// the largest record one holds.
pub const COUNTERS: usize = 256;
pub(super) const COUNTERS_PER_BACKEND: usize = 24;
pub(super) const COUNTERS_PER_ROLE: usize = COUNTERS / 4;
pub(super) const COUNTER_BYTES: usize = 4 * 1024 - 48;

// a counter's states: FREE, CLAIMED (a backend fills it), OPEN (counting), TAKEN (the worker
// writes it), MOVING (its exiting backend puts it into the ring)
pub(super) const FREE: u32 = 0;
pub(super) const CLAIMED: u32 = 1;
pub(super) const OPEN: u32 = 2;
pub(super) const TAKEN: u32 = 3;
pub(super) const MOVING: u32 = 4;
/// In a counter's word: closed (no more may be added), its claim (24 bits: a backend counts
/// only into the claim it made), and the count (39 bits).
pub(super) const CLOSED: u64 = 1 << 63;
pub(super) const CLAIM_SHIFT: u32 = 39;
pub(super) const COUNT_MASK: u64 = (1 << CLAIM_SHIFT) - 1;

#[repr(C)]
pub(super) struct Counter {
    pub state: AtomicU32,
    pub slot: u32,
    pub pid: i32,
    pub role: u32,
    pub len: u32,
    /// The claims made of this counter so far (the next claim's number).
    pub claims: u32,
    /// The second it counts (the clock's microseconds / 1e6).
    pub second: i64,
    pub word: AtomicU64,
    pub last: AtomicI64,
    pub bytes: [u8; COUNTER_BYTES],
}
/// How many roles' shares the header counts at once (past that, the roles share one count).
pub(super) const ROLES: usize = 64;

// the worker's states
pub(super) const IDLE: u32 = 0;
pub(super) const STARTING: u32 = 1;
pub(super) const RUNNING: u32 = 2;

#[repr(C)]
pub(super) struct RoleUse {
    pub role: u32,
    pub bytes: u32,
}

#[repr(C)]
pub(super) struct Slot {
    /// The backend the slot counts for now (a new backend in the same `PGPROC` starts at 0).
    pub pid: AtomicI32,
    _pad: u32,
    /// Its records a worker could not write (each named in a `WARNING`).
    pub lost: AtomicU64,
}

#[repr(C)]
pub(super) struct Header {
    pub magic: u64,
    pub version: u32,
    /// The database the worker connects to.
    pub database: u32,
    /// Drawn when the segment was made, and written beside its handle in the directory file:
    /// a handle that names a segment of another's is not taken for this queue.
    pub nonce: u64,
    /// The server's start (`PgStartTime`): a file of an earlier life of the server is stale.
    pub started: i64,
    /// The lock (0 free, 1 held).
    lock: AtomicU32,
    /// Set, under the lock, by the worker that leaves the queue empty and unpins the segment:
    /// a sender that finds it makes a new queue.
    pub closed: AtomicU32,
    /// IDLE, STARTING (registered, not yet attached) or RUNNING.
    pub worker: AtomicU32,
    pub nslots: u32,
    /// When the worker was registered (to take back a registration that never started).
    pub worker_since: AtomicI64,
    /// The running worker's latch (in its PGPROC, shared memory at the same address in every
    /// process): set when an entry is queued; 0 when none runs.
    pub latch: AtomicU64,
    /// Bytes ever written and ever read (taken off by the worker once written): the ring holds
    /// `write - read` of them. Changed under the lock; read without it.
    pub write: AtomicU64,
    pub read: AtomicU64,
    /// The ring's bytes by role (under the lock).
    pub roles: [RoleUse; ROLES],
}

/// A mapped segment: where its parts are.
#[derive(Clone, Copy)]
pub(super) struct Segment {
    pub header: *mut Header,
    pub slots: *mut Slot,
    pub counters: *mut Counter,
    pub ring: *mut u8,
}

/// The size of the header, slots and counters for `nslots` slots (the ring follows).
pub(super) fn head_size(nslots: u32) -> usize {
    std::mem::size_of::<Header>()
        + nslots as usize * std::mem::size_of::<Slot>()
        + COUNTERS * std::mem::size_of::<Counter>()
}

/// The segment's size for `nslots` slots.
pub(super) fn size(nslots: u32) -> usize {
    head_size(nslots) + RING as usize
}

/// A record as the worker receives it: its bytes, its sender (slot, pid, role), and, for a
/// counter, how many times it happened and when last (`count` 0 for a message).
pub struct Message {
    pub bytes: Vec<u8>,
    pub slot: u32,
    pub pid: i32,
    pub role: u32,
    pub count: u64,
    pub last: i64,
}

impl Segment {
    /// The parts of a segment mapped at `base`.
    ///
    /// # Safety
    /// `base` maps a queue's segment whose header has been written (or is being written by the
    /// caller), `size(nslots)` bytes.
    pub unsafe fn at(base: *mut u8) -> Segment {
        // SAFETY: (caller) the layout above.
        unsafe {
            let header = base as *mut Header;
            let slots = base.add(std::mem::size_of::<Header>()) as *mut Slot;
            let counters = (slots as *mut u8)
                .add((*header).nslots as usize * std::mem::size_of::<Slot>())
                as *mut Counter;
            let ring = base.add(head_size((*header).nslots));
            Segment {
                header,
                slots,
                counters,
                ring,
            }
        }
    }

    pub fn header(&self) -> &Header {
        // SAFETY: mapped while the segment is (its holder keeps the mapping).
        unsafe { &*self.header }
    }

    pub fn slot(&self, i: u32) -> Option<&Slot> {
        // SAFETY: a slot inside the array.
        (i < self.header().nslots).then(|| unsafe { &*self.slots.add(i as usize) })
    }

    pub fn counter(&self, i: usize) -> &Counter {
        // SAFETY: a counter inside the array (i < COUNTERS, the callers' loops).
        unsafe { &*self.counters.add(i.min(COUNTERS - 1)) }
    }

    /// A counter, to fill: only its claimer (state CLAIMED) or the worker that took it.
    ///
    /// # Safety
    /// No other process reads its plain fields meanwhile (its state says so).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn counter_mut(&self, i: usize) -> &mut Counter {
        // SAFETY: (caller) as above.
        unsafe { &mut *self.counters.add(i.min(COUNTERS - 1)) }
    }

    /// Is a counter held by backend `pid` (not free)?
    pub fn counting(&self, pid: i32) -> bool {
        (0..COUNTERS).any(|i| {
            let c = self.counter(i);
            c.state.load(SeqCst) != FREE && c.pid == pid
        })
    }

    /// Is any counter not free?
    pub fn any_counting(&self) -> bool {
        (0..COUNTERS).any(|i| self.counter(i).state.load(SeqCst) != FREE)
    }

    /// Run `f` holding the lock.
    pub fn locked<R>(&self, f: impl FnOnce(&mut Locked<'_>) -> R) -> R {
        let h = self.header();
        let mut spins = 0u32;
        while h.lock.compare_exchange_weak(0, 1, SeqCst, SeqCst).is_err() {
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                // SAFETY: a short sleep of this process.
                unsafe { pg_sys::pg_usleep(10) };
            }
        }
        // SAFETY: the lock is ours: no other process changes what Locked touches meanwhile.
        let out = f(&mut Locked {
            segment: self,
            header: unsafe { &mut *self.header },
        });
        h.lock.store(0, SeqCst);
        out
    }

    /// Copy `bytes` into the ring at position `at`.
    fn copy_in(&self, at: u64, bytes: &[u8]) {
        let start = (at % RING) as usize;
        let first = bytes.len().min(RING as usize - start);
        // SAFETY: both parts lie inside the ring.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ring.add(start), first);
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr().add(first),
                self.ring,
                bytes.len() - first,
            );
        }
    }

    /// Copy `n` bytes of the ring at position `at`.
    fn copy_out(&self, at: u64, n: usize) -> Vec<u8> {
        let start = (at % RING) as usize;
        let first = n.min(RING as usize - start);
        let mut out = vec![0u8; n];
        // SAFETY: both parts lie inside the ring.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ring.add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(self.ring, out.as_mut_ptr().add(first), n - first);
        }
        out
    }

    /// The entry at `at` (below `write`), and where the next begins.
    pub fn entry(&self, at: u64, write: u64) -> Option<(Message, u64)> {
        if at + ENTRY_HEAD > write {
            return None;
        }
        let head = self.copy_out(at, ENTRY_HEAD as usize);
        let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let long = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let len = word(0) as u64;
        if at + ENTRY_HEAD + len > write {
            return None;
        }
        Some((
            Message {
                bytes: self.copy_out(at + ENTRY_HEAD, len as usize),
                slot: word(4),
                pid: word(8) as i32,
                role: word(12),
                count: long(16),
                last: long(24) as i64,
            },
            at + ENTRY_HEAD + len,
        ))
    }

    /// Wake the worker, if one runs, to read what was queued.
    pub fn wake(&self) {
        let latch = self.header().latch.load(SeqCst);
        if latch != 0 {
            // SAFETY: a latch in a PGPROC (shared memory that lives as long as the server): at
            // worst, that of a process that has since taken the worker's place, woken for
            // nothing.
            unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
        }
    }
}

/// The segment while its lock is held.
pub(super) struct Locked<'a> {
    segment: &'a Segment,
    pub header: &'a mut Header,
}

/// Why an entry was not queued.
pub(super) enum NotQueued {
    /// The queue was closed by its worker: make a new one.
    Closed,
    /// No room: the ring is full, or the role holds its share of it.
    Full,
}

impl Locked<'_> {
    /// Queue one entry: its end position.
    pub fn put(
        &mut self,
        record: &[u8],
        from: (u32, i32, u32),
        counted: (u64, i64),
    ) -> Result<u64, NotQueued> {
        let (slot, pid, role) = from;
        if self.header.closed.load(SeqCst) != 0 {
            return Err(NotQueued::Closed);
        }
        let len = ENTRY_HEAD + record.len() as u64;
        let (write, read) = (
            self.header.write.load(SeqCst),
            self.header.read.load(SeqCst),
        );
        let share = self.role_index(role);
        let used = share.map_or(0, |i| self.header.roles[i].bytes as u64);
        if RING - (write - read) < len || share.is_none() || used + len > ROLE_SHARE {
            return Err(NotQueued::Full);
        }
        let mut head = Vec::with_capacity(ENTRY_HEAD as usize);
        for w in [record.len() as u32, slot, pid as u32, role] {
            head.extend_from_slice(&w.to_le_bytes());
        }
        head.extend_from_slice(&counted.0.to_le_bytes());
        head.extend_from_slice(&counted.1.to_le_bytes());
        self.segment.copy_in(write, &head);
        self.segment.copy_in(write + ENTRY_HEAD, record);
        if let Some(i) = share {
            let r = &mut self.header.roles[i];
            r.role = role;
            r.bytes += len as u32;
        }
        let end = write + len;
        self.header.write.store(end, SeqCst);
        Ok(end)
    }

    /// Where the role's share is counted: its own entry, a free one, or (every entry taken)
    /// the last, which the roles without one share. `None` only for no role at all.
    fn role_index(&self, role: u32) -> Option<usize> {
        let roles = &self.header.roles;
        roles
            .iter()
            .position(|r| r.role == role && r.bytes > 0)
            .or_else(|| roles[..ROLES - 1].iter().position(|r| r.bytes == 0))
            .or(Some(ROLES - 1))
    }

    /// The worker took entries up to `to` off the ring (`role_bytes`: how much of them each
    /// role's were).
    pub fn taken(&mut self, to: u64, role_bytes: &[(u32, u64)]) {
        for &(role, bytes) in role_bytes {
            let i = self.header.roles[..ROLES - 1]
                .iter()
                .position(|r| r.role == role && r.bytes > 0)
                .unwrap_or(ROLES - 1);
            let r = &mut self.header.roles[i];
            r.bytes = r.bytes.saturating_sub(bytes as u32);
        }
        self.header.read.store(to, SeqCst);
        // an empty ring holds no one's share (whatever the shared count mixed)
        if to == self.header.write.load(SeqCst) {
            for r in self.header.roles.iter_mut() {
                r.bytes = 0;
            }
        }
    }
}
