//! Counters in the queue's segment: a record that happens again and again within one second
//! is claimed once as a counter ([`open_counter`]) and counted into ([`count`]) rather than
//! queued each time; the worker takes it once its second is over, and a backend that exits puts
//! its open ones into the ring with their counts.

use super::segment::{
    CLAIMED, CLAIM_SHIFT, CLOSED, COUNTERS, COUNTERS_PER_BACKEND, COUNTERS_PER_ROLE, COUNTER_BYTES,
    COUNT_MASK, FREE, MOVING, OPEN,
};
use super::{
    directory, ensure_worker, exists, my_pid, on_exit, BeforeExit, Producer, Worker, CALLER,
    PRODUCER,
};
use crate::pg::error::Result;
use pgrx::pg_sys;
use std::sync::atomic::Ordering::SeqCst;

/// A counter this backend claimed: its index and its claim's number.
pub type CounterRef = (usize, u32);

/// Claim a counter for a record first seen at `at` (microseconds), counting in its second, as
/// role `role`: `None` when none is free for this backend or role (it holds its share), the
/// record is too large for one, or there is no queue and it may not be made here.
pub fn open_counter(
    record: &[u8],
    at: i64,
    role: u32,
    worker: Worker,
    before_exit: BeforeExit,
) -> Result<Option<CounterRef>> {
    if record.len() > COUNTER_BYTES {
        return Ok(None);
    }
    if CALLER.with(|c| c.replace((worker, before_exit))).is_none() {
        // SAFETY: a callback for this process's exit, registered once.
        unsafe { pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0usize)) };
    }
    if !exists() {
        let Some(p) = directory::find(true)? else {
            return Ok(None);
        };
        PRODUCER.with(|slot| *slot = Some(p));
    }
    Ok(PRODUCER.with(|p| {
        let p = p.as_mut()?;
        let seg = p.segment;
        let pid = my_pid();
        let (mut mine, mut roles) = (0, 0);
        for i in 0..COUNTERS {
            let c = seg.counter(i);
            if c.state.load(SeqCst) != FREE {
                mine += usize::from(c.pid == pid);
                roles += usize::from(c.role == role);
            }
        }
        if mine >= COUNTERS_PER_BACKEND || roles >= COUNTERS_PER_ROLE {
            return None;
        }
        let i = (0..COUNTERS).find(|&i| {
            seg.counter(i)
                .state
                .compare_exchange(FREE, CLAIMED, SeqCst, SeqCst)
                .is_ok()
        })?;
        // SAFETY: counter i is CLAIMED by this backend: no other process reads its fields
        // until it is OPEN.
        let c = unsafe { seg.counter_mut(i) };
        c.claims = c.claims.wrapping_add(1) & 0x00ff_ffff;
        c.bytes[..record.len()].copy_from_slice(record);
        c.len = record.len() as u32;
        c.slot = p.slot;
        c.pid = pid;
        c.role = role;
        c.second = at.div_euclid(1_000_000);
        c.last.store(at, SeqCst);
        c.word.store(((c.claims as u64) << CLAIM_SHIFT) | 1, SeqCst);
        c.state.store(OPEN, SeqCst);
        ensure_worker(p);
        Some((i, c.claims))
    }))
}

/// Count one more into a counter this backend claimed: `false` when it is closed (its second
/// is over and the worker took it, or it is no longer this claim): claim another.
pub fn count(counter: CounterRef, at: i64) -> bool {
    PRODUCER.with(|p| {
        let Some(p) = p.as_ref() else { return false };
        let c = p.segment.counter(counter.0);
        let mut w = c.word.load(SeqCst);
        loop {
            if w & CLOSED != 0
                || (w >> CLAIM_SHIFT) as u32 != counter.1
                || w & COUNT_MASK == COUNT_MASK
            {
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

/// This backend's open counters, into the ring with their counts (before it exits: no one
/// counts into them any more). `false` when the ring had no room for one (it stays open).
pub(super) fn counters_into_ring(p: &mut Producer) -> bool {
    let pid = my_pid();
    for i in 0..COUNTERS {
        let seg = p.segment;
        let c = seg.counter(i);
        if c.pid != pid
            || c.state
                .compare_exchange(OPEN, MOVING, SeqCst, SeqCst)
                .is_err()
        {
            continue;
        }
        let count = c.word.fetch_or(CLOSED, SeqCst) & COUNT_MASK;
        let record = c.bytes[..c.len as usize].to_vec();
        let from = (c.slot, c.pid, c.role);
        let last = c.last.load(SeqCst);
        match seg.locked(|l| l.put(&record, from, (count, last))) {
            Ok(end) => {
                p.upto = p.upto.max(end);
                c.state.store(FREE, SeqCst);
            }
            Err(_) => {
                c.word.fetch_and(!CLOSED, SeqCst);
                c.state.store(OPEN, SeqCst);
                return false;
            }
        }
    }
    true
}
