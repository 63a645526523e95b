//! The last entry of a key in a btree index on `(uuid, bigint, ...)`, found by reading the
//! index's pages directly: a descent from the root (or from the leaf page where the key was
//! found last time) that compares keys as bytes, with no scan set up and no operator called.
//! For the trail's probe of a run's last step, once per transaction and run.
//!
//! It answers only what the pages prove under their share locks, following PostgreSQL's
//! btree (Lehman and Yao: a page's high key bounds its keys, a right link leads on after a
//! split) in version 4 (PostgreSQL 12 and later): anything else (a page deleted under the
//! search, a posting list, a dead entry, an older version, an entry that may lie on the page
//! to the left) is [`Last::Unknown`], and the caller asks PostgreSQL's index scan instead.

use pgrx::pg_sys::{self, Oid};

/// What the pages say of a key's last entry.
#[derive(Debug)]
pub enum Last {
    /// The index has no entry of the key.
    None,
    /// The key's greatest entry: its second column, the row it points at, and the leaf page
    /// and offset where it lies.
    Entry {
        id: i64,
        tid: pg_sys::ItemPointerData,
        block: u32,
        offset: u16,
    },
    /// The pages do not prove it.
    Unknown,
}

/// The page layout this module reads (`access/nbtree.h`, the same in PostgreSQL 12 to 18).
#[repr(C)]
struct PageOpaque {
    prev: u32,
    next: u32,
    level: u32,
    flags: u16,
    cycle: u16,
}
#[repr(C)]
struct Meta {
    magic: u32,
    version: u32,
    root: u32,
    level: u32,
    fastroot: u32,
    fastlevel: u32,
}
const MAGIC: u32 = 0x053162;
/// Version 4 (the only one read): heap TIDs as the last key column, pivot tuples that say how
/// many columns they keep.
const VERSION: u32 = 4;
const P_NONE: u32 = 0;
const BTP_LEAF: u16 = 1 << 0;
const BTP_DELETED: u16 = 1 << 2;
const BTP_META: u16 = 1 << 3;
const BTP_HALF_DEAD: u16 = 1 << 4;
const INDEX_SIZE_MASK: u16 = 0x1FFF;
const INDEX_ALT_TID_MASK: u16 = 0x2000;
const INDEX_NULL_MASK: u16 = 0x8000;
const BT_OFFSET_MASK: u16 = 0x0FFF;
const BT_IS_POSTING: u16 = 0x2000;
const PAGE_HEADER: usize = 24;
const BLOCK: usize = pg_sys::BLCKSZ as usize;
/// Where a tuple's first key column starts (after its 8-byte header, no null bitmap), and its
/// second (a bigint, 8-aligned after a 16-byte uuid).
const FIRST: usize = 8;
const SECOND: usize = 24;
/// Pages read before giving up (a tree this tall, or a chain of splits this long, is not met).
const MAX_PAGES: usize = 32;

/// Can [`last_entry`] read this index? A btree of version-4 pages whose first key column is a
/// `uuid` and second a `bigint`, both ascending, in their types' default btree operator
/// families (so that their order is the bytes' and the integers').
///
/// # Safety
///
/// `idx` is an open index.
pub unsafe fn fits(idx: pg_sys::Relation) -> bool {
    // SAFETY: the caller's guarantee: the relation's cached descriptor and index fields.
    unsafe {
        let rel = &*idx;
        if (*rel.rd_rel).relam != pg_sys::BTREE_AM_OID
            || rel.rd_index.is_null()
            || (*rel.rd_index).indnkeyatts < 2
            || rel.rd_opfamily.is_null()
            || rel.rd_indoption.is_null()
        {
            return false;
        }
        let desc = rel.rd_att;
        let (a, b) = (
            crate::pg::compat::attr(desc, 1),
            crate::pg::compat::attr(desc, 2),
        );
        let family = |t: Oid| {
            let class = pg_sys::GetDefaultOpClass(t, pg_sys::BTREE_AM_OID);
            (class != Oid::INVALID).then(|| pg_sys::get_opclass_family(class))
        };
        a.atttypid == pg_sys::UUIDOID
            && a.attlen == 16
            && b.atttypid == pg_sys::INT8OID
            && b.attlen == 8
            && b.attbyval
            && *rel.rd_indoption == 0
            && *rel.rd_indoption.add(1) == 0
            && family(pg_sys::UUIDOID) == Some(*rel.rd_opfamily)
            && family(pg_sys::INT8OID) == Some(*rel.rd_opfamily.add(1))
    }
}

/// Where a key's last entry was found: a leaf page and an offset on it.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub block: u32,
    pub offset: u16,
}

/// The greatest entry of `key` (the first key column) in `idx`, starting at the leaf page of
/// `hint` if given (where the key was found last time), else from the root.
///
/// # Safety
///
/// `idx` is an open index, locked by this transaction, for which [`fits`] holds; `hint`'s
/// block is a block of its current file.
pub unsafe fn last_entry(idx: pg_sys::Relation, key: &[u8; 16], hint: Option<Place>) -> Last {
    if let Some(place) = hint {
        // SAFETY: the caller's guarantee.
        match unsafe { search(idx, key, place.block, Some(place.offset)) } {
            Last::Unknown => {}
            found => return found,
        }
    }
    // SAFETY: the caller's guarantee; the metapage is block 0.
    let root = unsafe {
        with_page(idx, 0, |page| {
            let meta = std::ptr::read_unaligned(page.add(PAGE_HEADER) as *const Meta);
            let opaque = opaque(page);
            if opaque.flags & BTP_META == 0 || meta.magic != MAGIC || meta.version != VERSION {
                None
            } else {
                Some(meta.fastroot)
            }
        })
    };
    match root {
        None => Last::Unknown,
        Some(P_NONE) => Last::None,
        // SAFETY: the caller's guarantee.
        Some(root) => unsafe { search(idx, key, root, None) },
    }
}

/// Read block `block` of `idx`, share-locked while `f` looks at it.
///
/// # Safety
///
/// As for [`last_entry`]; `f` raises no error and does not panic (the lock is released after it).
unsafe fn with_page<T>(idx: pg_sys::Relation, block: u32, f: impl FnOnce(*const u8) -> T) -> T {
    // SAFETY: the caller's guarantee; the buffer is pinned and locked around f.
    unsafe {
        let buf = pg_sys::ReadBufferExtended(
            idx,
            pg_sys::ForkNumber::MAIN_FORKNUM,
            block,
            pg_sys::ReadBufferMode::RBM_NORMAL,
            std::ptr::null_mut(),
        );
        pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_SHARE as i32);
        let result = f(pg_sys::BufferGetPage(buf) as *const u8);
        pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_UNLOCK as i32);
        pg_sys::ReleaseBuffer(buf);
        result
    }
}

/// A copy of a page's header (read as bytes: other backends may set hint bits in a page we
/// share-lock).
///
/// # Safety
///
/// `page` is a locked page.
unsafe fn header(page: *const u8) -> pg_sys::PageHeaderData {
    // SAFETY: a page starts with its header.
    unsafe { std::ptr::read_unaligned(page as *const pg_sys::PageHeaderData) }
}

/// A copy of a page's btree special space.
///
/// # Safety
///
/// `page` is a locked page of a btree.
unsafe fn opaque(page: *const u8) -> PageOpaque {
    // SAFETY: pd_special is the offset of the special space, checked to leave room for it.
    unsafe {
        let special = header(page).pd_special as usize;
        if special + std::mem::size_of::<PageOpaque>() > BLOCK || special < PAGE_HEADER {
            // not a btree page: read as one whose flags say "deleted" (skipped)
            return PageOpaque {
                prev: P_NONE,
                next: P_NONE,
                level: 0,
                flags: BTP_DELETED,
                cycle: 0,
            };
        }
        std::ptr::read_unaligned(page.add(special) as *const PageOpaque)
    }
}

/// One tuple of a page, as far as this module reads it.
struct Item {
    /// The first key column's 16 bytes, `None` for a pivot that keeps no column (minus
    /// infinity).
    key: Option<[u8; 16]>,
    /// The second key column, when the tuple keeps it.
    id: Option<i64>,
    tid: pg_sys::ItemPointerData,
    pivot: bool,
    posting: bool,
    normal: bool,
}

/// The tuple at `offset` (1-based), `None` when the page does not hold a readable one.
///
/// # Safety
///
/// `page` is a locked btree page.
unsafe fn item(page: *const u8, offset: usize) -> Option<Item> {
    // SAFETY: the line pointer array is inside the page (offset <= max_offset); the tuple's
    // place and length are checked against the page before it is read.
    unsafe {
        let ids = page.add(PAGE_HEADER) as *const pg_sys::ItemIdData;
        let lp = std::ptr::read_unaligned(ids.add(offset - 1));
        let (off, len) = (lp.lp_off() as usize, lp.lp_len() as usize);
        if off < PAGE_HEADER || len < FIRST || off + len > BLOCK {
            return None;
        }
        let t = page.add(off);
        let tid = std::ptr::read_unaligned(t as *const pg_sys::ItemPointerData);
        let info = u16::from_ne_bytes([*t.add(6), *t.add(7)]);
        if info & INDEX_NULL_MASK != 0 || (info & INDEX_SIZE_MASK) as usize > len {
            return None;
        }
        let posid = tid.ip_posid;
        let alt = info & INDEX_ALT_TID_MASK != 0;
        let pivot = alt && posid & BT_IS_POSTING == 0;
        let posting = alt && !pivot;
        let natts = if pivot {
            (posid & BT_OFFSET_MASK) as usize
        } else {
            2
        };
        let key = if natts >= 1 && len >= FIRST + 16 {
            let mut k = [0u8; 16];
            std::ptr::copy_nonoverlapping(t.add(FIRST), k.as_mut_ptr(), 16);
            Some(k)
        } else if natts >= 1 {
            return None;
        } else {
            None
        };
        let id = if natts >= 2 && len >= SECOND + 8 {
            Some(std::ptr::read_unaligned(t.add(SECOND) as *const i64))
        } else if natts >= 2 {
            return None;
        } else {
            None
        };
        Some(Item {
            key,
            id,
            tid,
            pivot,
            posting,
            normal: lp.lp_flags() == pg_sys::LP_NORMAL,
        })
    }
}

/// The number of line pointers of a page (none, for a header that does not fit the page).
///
/// # Safety
///
/// `page` is a locked page.
unsafe fn max_offset(page: *const u8) -> usize {
    // SAFETY: pd_lower is the end of the line pointer array.
    let lower = unsafe { header(page) }.pd_lower as usize;
    if lower > BLOCK {
        return 0;
    }
    lower.saturating_sub(PAGE_HEADER) / std::mem::size_of::<pg_sys::ItemIdData>()
}

/// What one page says, in the search for `key`'s last entry.
enum Step {
    /// Go on to this block (a child, or the right sibling).
    To(u32),
    Done(Last),
}

/// Search from `block` down (and right) to the leaf holding `key`'s last entry. `hint`: `block`
/// is a leaf page where the key's last entry was at offset `hint` (else [`Last::Unknown`]),
/// and the search on it looks there first.
///
/// # Safety
///
/// As for [`last_entry`].
unsafe fn search(
    idx: pg_sys::Relation,
    key: &[u8; 16],
    mut block: u32,
    mut hint: Option<u16>,
) -> Last {
    for _ in 0..MAX_PAGES {
        // SAFETY: the caller's guarantee; the page is read under its share lock, with no
        // error raised inside.
        let step = unsafe { with_page(idx, block, |page| read(page, key, block, hint)) };
        match step {
            Step::To(next) => block = next,
            Step::Done(last) => return last,
        }
        // a right sibling or a child: no offset known there (a right sibling of the hinted
        // leaf is a leaf)
        hint = hint.map(|_| 0);
    }
    Last::Unknown
}

/// One page of the search (see [`search`]).
///
/// # Safety
///
/// `page` is a locked page of the index.
unsafe fn read(page: *const u8, key: &[u8; 16], block: u32, hint: Option<u16>) -> Step {
    let leaf_only = hint.is_some();
    // SAFETY: the caller's guarantee; every tuple is read through `item`.
    unsafe {
        if header(page).pd_upper == 0 {
            // a new, empty page
            return Step::Done(Last::Unknown);
        }
        let o = opaque(page);
        let rightmost = o.next == P_NONE;
        if o.flags & (BTP_DELETED | BTP_HALF_DEAD | BTP_META) != 0 {
            // deleted under the search: its right sibling took its keys
            return match (rightmost, o.flags & BTP_META != 0) {
                (false, false) => Step::To(o.next),
                _ => Step::Done(Last::Unknown),
            };
        }
        let leaf = o.flags & BTP_LEAF != 0;
        if leaf_only && !leaf {
            return Step::Done(Last::Unknown);
        }
        // the high key (the first tuple of every page but the rightmost of its level) bounds
        // the page's keys: when it is not above every entry of `key`, they go on to the right
        let first = if rightmost { 1 } else { 2 };
        let max = max_offset(page);
        if !rightmost {
            if max < 1 {
                return Step::Done(Last::Unknown);
            }
            let Some(high) = item(page, 1) else {
                return Step::Done(Last::Unknown);
            };
            match high.key {
                Some(h) if h.as_slice() > key.as_slice() => {}
                Some(_) => return Step::To(o.next),
                None => return Step::Done(Last::Unknown),
            }
        }
        // the first tuple whose key is above every entry of `key` (binary search: keys ascend),
        // in [lo, hi]
        let (mut lo, mut hi) = (first, max + 1);
        // `key` above the tuple at `at`? (a pivot that keeps no column is minus infinity)
        let above = |at: usize| {
            item(page, at).map(|t| t.key.is_some_and(|k| k.as_slice() > key.as_slice()))
        };
        // Where the last entry was found last time, the run's next entry has usually been
        // added right after it: the bound is looked for there first (two tuples read instead
        // of a binary search's eight or so, each on another cache line), then where it was (no
        // entry added since). A guess that misses only narrows the range the binary search
        // then halves.
        if let Some(h) = hint.filter(|&h| h > 0) {
            let h = usize::from(h);
            for guess in [h + 1, h + 2, h] {
                if guess < lo || guess >= hi {
                    continue;
                }
                match above(guess) {
                    None => return Step::Done(Last::Unknown),
                    Some(true) => hi = guess,
                    Some(false) => lo = guess + 1,
                }
            }
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match above(mid) {
                None => return Step::Done(Last::Unknown),
                Some(true) => hi = mid,
                Some(false) => lo = mid + 1,
            }
        }
        if lo == first {
            // every tuple of the page is above `key`: its entries, if any, are to the left
            return Step::Done(Last::Unknown);
        }
        let Some(t) = item(page, lo - 1) else {
            return Step::Done(Last::Unknown);
        };
        if !leaf {
            // the child whose keys reach up to the next pivot's
            if !t.pivot {
                return Step::Done(Last::Unknown);
            }
            let down = (u32::from(t.tid.ip_blkid.bi_hi) << 16) | u32::from(t.tid.ip_blkid.bi_lo);
            return Step::To(down);
        }
        if t.pivot || t.posting || !t.normal {
            return Step::Done(Last::Unknown);
        }
        match (t.key, t.id) {
            (Some(k), Some(id)) if k == *key => Step::Done(Last::Entry {
                id,
                tid: t.tid,
                block,
                // (a page holds fewer than 2^16 tuples)
                offset: (lo - 1) as u16,
            }),
            // the greatest tuple up to `key` is below it: `key` has no entry (the entries to
            // the left are below that tuple)
            (Some(_), Some(_)) => Step::Done(Last::None),
            _ => Step::Done(Last::Unknown),
        }
    }
}
