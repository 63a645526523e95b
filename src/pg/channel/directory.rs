//! Finding a database's queue, or making it: its segment's handle is published in a file of
//! the data directory, `pg_stat_tmp/pg_labels_queue.<database oid>` (24 bytes: the handle, the
//! segment's nonce and the server's start time), replaced whole (written aside, then renamed).
//! A file of an earlier life of the server, or of a queue since closed, names a segment that
//! is gone or is not this queue's: it is made again. Making is serialized by a lock of the lock
//! manager in a space no SQL function reaches, held only while the segment is made.

use super::segment::{self, Header, Segment, IDLE, MAGIC, VERSION};
use super::{my_pid, Producer};
use crate::pg::error::{Error, Result, NOT_IN_PREREQUISITE_STATE};
use crate::pg::lock::ObjectLock;
use pgrx::pg_sys;
use std::sync::atomic::Ordering::SeqCst;

/// The lock space of making queues (`pg_locks`: an advisory lock with `objsubid` 20817).
const MAKING: u16 = 0x5151;

fn path() -> String {
    // SAFETY: reads the backend's database.
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    format!("pg_stat_tmp/pg_labels_queue.{db}")
}

/// What the file names: (handle, nonce, server start).
fn read_file() -> Option<(u32, u64, i64)> {
    let bytes = std::fs::read(path()).ok()?;
    if bytes.len() != 24 {
        return None;
    }
    Some((
        u32::from_le_bytes(bytes[0..4].try_into().ok()?),
        u64::from_le_bytes(bytes[8..16].try_into().ok()?),
        i64::from_le_bytes(bytes[16..24].try_into().ok()?),
    ))
}

fn write_file(handle: u32, nonce: u64, started: i64) -> Result<()> {
    let mut bytes = Vec::with_capacity(24);
    bytes.extend_from_slice(&handle.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 4]);
    bytes.extend_from_slice(&nonce.to_le_bytes());
    bytes.extend_from_slice(&started.to_le_bytes());
    let path = path();
    let aside = format!("{path}.{}", my_pid());
    let failed = |e: std::io::Error| {
        Error::new(
            NOT_IN_PREREQUISITE_STATE,
            format!("pg_labels: the record queue's file {path} could not be written: {e}"),
        )
    };
    let _ = std::fs::create_dir_all("pg_stat_tmp");
    std::fs::write(&aside, &bytes).map_err(failed)?;
    std::fs::rename(&aside, &path).map_err(failed)
}

fn server_started() -> i64 {
    // SAFETY: reads a value set when the server started.
    unsafe { pg_sys::PgStartTime }
}

/// Map the segment a handle names, if it is this database's open queue of this server's life.
fn attach(handle: u32, nonce: u64, started: i64) -> Option<Producer> {
    if started != server_started() {
        return None;
    }
    // SAFETY: a mapping kept past the resource owner (until let_go or exit); the header is
    // checked (length, magic, version, nonce) before anything else is read, and a segment that
    // is not the queue is let go of at once.
    unsafe {
        let seg = crate::pg::error::catch(|| Ok(pg_sys::dsm_attach(handle))).ok()?;
        if seg.is_null() {
            return None;
        }
        pg_sys::dsm_pin_mapping(seg);
        let base = pg_sys::dsm_segment_address(seg) as *mut u8;
        let length = pg_sys::dsm_segment_map_length(seg);
        let h = base as *const Header;
        let ok = length >= std::mem::size_of::<Header>()
            && (*h).magic == MAGIC
            && (*h).version == VERSION
            && (*h).nonce == nonce
            && (*h).started == started
            && (*h).database == pg_sys::MyDatabaseId.to_u32()
            && length >= segment::size((*h).nslots)
            && (*h).closed.load(SeqCst) == 0;
        if !ok {
            pg_sys::dsm_detach(seg);
            return None;
        }
        Some(producer(seg, handle, Segment::at(base)))
    }
}

/// This backend's slot: its `PGPROC`'s number.
fn my_slot() -> u32 {
    // SAFETY: MyProc lies in ProcGlobal's array of PGPROCs.
    unsafe {
        let all = (*pg_sys::ProcGlobal).allProcs;
        if pg_sys::MyProc.is_null() || all.is_null() {
            return u32::MAX;
        }
        pg_sys::MyProc.offset_from(all).max(0) as u32
    }
}

fn producer(seg: *mut pg_sys::dsm_segment, handle: u32, segment: Segment) -> Producer {
    let slot = my_slot();
    if let Some(s) = segment.slot(slot) {
        // a slot counts for its backend only (the worker counts into it under the lock)
        segment.locked(|_| {
            if s.pid.load(SeqCst) != my_pid() {
                s.lost.store(0, SeqCst);
                s.pid.store(my_pid(), SeqCst);
            }
        });
    }
    Producer {
        seg,
        handle,
        segment,
        slot,
        upto: 0,
        started: std::ptr::null_mut(),
    }
}

/// The database's open queue, mapped; made if there is none and `may_make` (inside a
/// transaction). `None` when there is none and it may not be made here.
pub(super) fn find(may_make: bool) -> Result<Option<Producer>> {
    if let Some(p) = read_file().and_then(|(h, n, s)| attach(h, n, s)) {
        return Ok(Some(p));
    }
    if !may_make {
        return Ok(None);
    }
    // SAFETY: reads the backend's database.
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32() as u64;
    let lock = ObjectLock::in_space(MAKING, db);
    lock.acquire(pg_sys::ExclusiveLock)?;
    let found = match read_file().and_then(|(h, n, s)| attach(h, n, s)) {
        Some(p) => Ok(Some(p)),
        None => make().map(Some),
    };
    lock.release(pg_sys::ExclusiveLock);
    found
}

/// A new queue: a segment made outside any resource owner (it outlives transactions), pinned,
/// its header written before its handle is published.
fn make() -> Result<Producer> {
    // SAFETY: reads the shared PGPROC array's length.
    let nslots = unsafe { (*pg_sys::ProcGlobal).allProcCount };
    let size = segment::size(nslots);
    // SAFETY: as above; a failure of dsm_create comes back as an Err or a null segment.
    let seg = crate::pg::error::catch(|| unsafe {
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::CurrentResourceOwner = std::ptr::null_mut();
        let seg = pg_sys::dsm_create(size, pg_sys::DSM_CREATE_NULL_IF_MAXSEGMENTS as i32);
        pg_sys::CurrentResourceOwner = owner;
        Ok(seg)
    })?;
    if seg.is_null() {
        return Err(Error::new(
            NOT_IN_PREREQUISITE_STATE,
            "pg_labels: no dynamic shared memory segment for the record queue",
        ));
    }
    let mut nonce = [0u8; 8];
    // SAFETY: fills the buffer (or answers false, then the clock serves).
    if !unsafe { pg_sys::pg_strong_random(nonce.as_mut_ptr().cast(), 8) } {
        // SAFETY: reads the clock.
        nonce = unsafe { pg_sys::GetCurrentTimestamp() }.to_le_bytes();
    }
    let nonce = u64::from_le_bytes(nonce);
    // SAFETY: the segment is this backend's, mapped, `size` bytes; zeroes are a valid header,
    // slots and ring (atomics at 0, the worker IDLE, nothing queued), then its fields.
    let (handle, segment) = unsafe {
        pg_sys::dsm_pin_mapping(seg);
        pg_sys::dsm_pin_segment(seg);
        let base = pg_sys::dsm_segment_address(seg) as *mut u8;
        std::ptr::write_bytes(base, 0, segment::head_size(nslots));
        let h = base as *mut Header;
        (*h).magic = MAGIC;
        (*h).version = VERSION;
        (*h).database = pg_sys::MyDatabaseId.to_u32();
        (*h).nonce = nonce;
        (*h).started = server_started();
        (*h).nslots = nslots;
        (*h).worker.store(IDLE, SeqCst);
        (pg_sys::dsm_segment_handle(seg), Segment::at(base))
    };
    if let Err(e) = write_file(handle, nonce, server_started()) {
        // SAFETY: the segment made above, unpinned and let go of: it is destroyed.
        unsafe {
            pg_sys::dsm_unpin_segment(handle);
            pg_sys::dsm_detach(seg);
        }
        return Err(e);
    }
    Ok(producer(seg, handle, segment))
}
