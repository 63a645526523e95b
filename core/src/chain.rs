//! The trail's hash chains, checkable with no database.
//!
//! Every run has a chain: its **genesis** hashes how the run was opened; each step's **leaf**
//! hashes the step's canonical content (every decided column, the run's sealed scope and the
//! digest of the labels the run carries after the step); the step's **hash** links it to its
//! predecessor, `link(prev, leaf)`. The run's row keeps a **checkpoint**: the chain's head as
//! of the last write of the row (its opening, a step that grew its labels or was its first in
//! a month of the trail, a purge's cut); the chain must pass through it
//! ([`Verifier::passing`]), and the steps after it are chained in the trail alone. A purge of
//! old steps keeps the cut: the hash the remaining chain continues from and how many steps
//! came before it. A ledger digest marks each run's head and length at the time it is taken
//! ([`Verifier::new`] checks a chain up to such a mark).
//!
//! The **ledger root** is a Merkle tree (RFC 6962's shape) over one leaf per run, `(run, length,
//! head)` in run order; an inclusion proof of a step is the steps after it in its run (their
//! leaves) and the audit path of its run's leaf to the root.
//!
//! Canonical encoding (what docs/proving.md specifies for re-implementations): a hash is SHA-256 of
//! a domain string, one 0 byte, then fields in a fixed order; a field is `0x00` for NULL, or
//! `0x01`, its length as a 4-byte big-endian integer and its bytes. Integers are 8 bytes
//! big-endian, uuids their 16 bytes, times microseconds since 2000-01-01 00:00 UTC as an
//! integer, text its UTF-8 bytes, a labelset its canonical text (`{a,b}`), `jsonb` its text
//! output, an array of `bigint` its elements' 8-byte encodings one after the other, a hash its
//! 32 bytes.

use crate::labelset::LabelSet;
use sha2::{Digest, Sha256};
use std::fmt;

pub type Hash = [u8; 32];

/// Domain strings: a hash of one kind can never stand for another.
pub const RUN_DOMAIN: &str = "pg_labels run 1";
pub const STEP_DOMAIN: &str = "pg_labels step 1";
pub const LINK_DOMAIN: &str = "pg_labels link 1";
pub const LABELS_DOMAIN: &str = "pg_labels labels 1";
pub const HEAD_DOMAIN: &str = "pg_labels head 1";

/// A canonical encoding being hashed.
pub struct Encoder(Sha256);

impl Encoder {
    pub fn new(domain: &str) -> Self {
        let mut h = Sha256::new();
        h.update(domain.as_bytes());
        h.update([0u8]);
        Encoder(h)
    }
    pub fn null(&mut self) -> &mut Self {
        self.0.update([0u8]);
        self
    }
    pub fn bytes(&mut self, b: Option<&[u8]>) -> &mut Self {
        match b {
            None => self.null(),
            Some(b) => {
                self.0.update([1u8]);
                self.0.update((b.len() as u32).to_be_bytes());
                self.0.update(b);
                self
            }
        }
    }
    pub fn text(&mut self, s: Option<&str>) -> &mut Self {
        self.bytes(s.map(str::as_bytes))
    }
    pub fn int(&mut self, v: Option<i64>) -> &mut Self {
        self.bytes(v.map(i64::to_be_bytes).as_ref().map(|b| &b[..]))
    }
    pub fn ints(&mut self, v: Option<&[i64]>) -> &mut Self {
        match v {
            None => self.null(),
            Some(v) => {
                self.0.update([1u8]);
                self.0.update(((v.len() * 8) as u32).to_be_bytes());
                for x in v {
                    self.0.update(x.to_be_bytes());
                }
                self
            }
        }
    }
    pub fn labels(&mut self, set: Option<LabelSet<'_>>) -> &mut Self {
        match set {
            None => self.null(),
            Some(set) => {
                let mut text = Vec::with_capacity(set.text_len());
                set.write_text(&mut text);
                self.bytes(Some(&text))
            }
        }
    }
    pub fn finish(self) -> Hash {
        self.0.finalize().into()
    }
}

/// How a run was opened: its genesis hash.
#[derive(Clone, Debug)]
pub struct RunOpening<'a> {
    pub id: [u8; 16],
    pub agent: Option<&'a str>,
    pub agent_version: Option<i64>,
    /// The sealed scope's text.
    pub scope: &'a str,
    /// The labels it carried when opened.
    pub labels: LabelSet<'a>,
    pub listener_id: Option<i64>,
    /// Microseconds since 2000-01-01 UTC.
    pub opened_at: i64,
}

pub fn genesis(run: &RunOpening<'_>) -> Hash {
    let mut e = Encoder::new(RUN_DOMAIN);
    e.bytes(Some(&run.id))
        .text(run.agent)
        .int(run.agent_version)
        .text(Some(run.scope))
        .labels(Some(run.labels))
        .int(run.listener_id)
        .int(Some(run.opened_at));
    e.finish()
}

/// The digest of what a run carries after a step: the hash the step is chained to and the
/// labels the step brought. What a run carries is the union of its opening labels and every
/// step's labels; the hash before the step stands for the opening and every earlier step, so
/// this digest stands for the union, at a cost that does not grow with the run, and is found
/// again from the step's own row (a chain cut by a purge needs nothing more).
pub fn labels_next(prev: &Hash, step: LabelSet<'_>) -> Hash {
    let mut e = Encoder::new(LABELS_DOMAIN);
    e.bytes(Some(prev)).labels(Some(step));
    e.finish()
}

/// A step's canonical content: every column the database decided or kept, in table order,
/// then the run's sealed scope and the digest of the run's labels after the step
/// ([`labels_next`]).
#[derive(Clone, Debug)]
pub struct StepContent<'a> {
    pub id: i64,
    pub run_id: [u8; 16],
    pub kind: &'a str,
    pub tool: Option<&'a str>,
    pub labels: LabelSet<'a>,
    /// `jsonb`'s text output.
    pub args: Option<&'a str>,
    pub decision: Option<&'a str>,
    pub rule: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub request_id: Option<i64>,
    pub origin_run: Option<[u8; 16]>,
    pub artifact_id: Option<[u8; 16]>,
    pub digest: Option<&'a str>,
    pub share_id: Option<i64>,
    pub crossing_ids: Option<&'a [i64]>,
    pub actor: &'a str,
    /// Microseconds since 2000-01-01 UTC.
    pub created_at: i64,
    pub scope: &'a str,
    pub labels_after: Hash,
}

pub fn leaf(s: &StepContent<'_>) -> Hash {
    let mut e = Encoder::new(STEP_DOMAIN);
    e.int(Some(s.id))
        .bytes(Some(&s.run_id))
        .text(Some(s.kind))
        .text(s.tool)
        .labels(Some(s.labels))
        .text(s.args)
        .text(s.decision)
        .text(s.rule)
        .text(s.reason)
        .int(s.request_id)
        .bytes(s.origin_run.as_ref().map(|u| &u[..]))
        .bytes(s.artifact_id.as_ref().map(|u| &u[..]))
        .text(s.digest)
        .int(s.share_id)
        .ints(s.crossing_ids)
        .text(Some(s.actor))
        .int(Some(s.created_at))
        .text(Some(s.scope))
        .bytes(Some(&s.labels_after));
    e.finish()
}

/// A step's hash: its predecessor's (or the run's genesis, or a purge's cut) and its leaf.
pub fn link(prev: &Hash, leaf: &Hash) -> Hash {
    let mut e = Encoder::new(LINK_DOMAIN);
    e.bytes(Some(prev)).bytes(Some(leaf));
    e.finish()
}

/// How a chain breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// The step's content (or the hash stored with it) is not what was chained.
    Edited,
    /// Steps are missing before this step (or, at the end, after it).
    Removed,
    /// This step was not chained where it stands: it was added.
    Inserted,
    /// This step stands where another was chained: ids were exchanged.
    Reordered,
}

impl How {
    pub fn name(self) -> &'static str {
        match self {
            How::Edited => "edited",
            How::Removed => "removed",
            How::Inserted => "inserted",
            How::Reordered => "reordered",
        }
    }
}

/// Where a chain first breaks: the step (`None`: the run row itself) and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Break {
    pub step: Option<i64>,
    pub how: How,
    /// The break is after the last step (steps removed at the end, or the head edited).
    pub at_end: bool,
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.step, self.at_end, self.how) {
            (None, _, How::Removed) => write!(f, "steps were removed from the start of the run"),
            (None, _, how) => write!(f, "the run's head was {}", how.name()),
            (Some(s), true, How::Removed) => write!(f, "steps were removed after step {s}"),
            (Some(s), true, how) => write!(f, "{} after step {s}", how.name()),
            (Some(s), false, How::Removed) => {
                write!(f, "steps were removed (or replaced) before step {s}")
            }
            (Some(s), false, how) => write!(f, "step {s} was {}", how.name()),
        }
    }
}

/// One stored step of a chain, in id order, with the hash its stored content links to.
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    pub id: i64,
    /// The predecessor's hash it stores (`None`: never chained).
    pub prev: Option<Hash>,
    /// The hash it stores.
    pub hash: Option<Hash>,
    /// `link(prev, leaf(content))`, computed again from what is stored now.
    pub computed: Option<Hash>,
}

/// A one-pass check of a run's chain: constant memory whatever the run's length. Feed the
/// stored steps in id order with [`Verifier::push`], then [`Verifier::finish`].
pub struct Verifier {
    expected: Hash,
    /// The hash of the step before the previous one, and the previous step's id.
    before_prev: Option<Hash>,
    prev_id: Option<i64>,
    seen: i64,
    start_count: i64,
    head: Hash,
    /// `None`: the head is a checkpoint the chain must pass through, with steps chained after
    /// it allowed ([`Verifier::passing`]).
    length: Option<i64>,
    hash_at_length: Option<(i64, Hash)>,
    head_seen: bool,
    first_extra: Option<i64>,
    found: Option<Break>,
    pending: Option<Pending>,
    /// A step whose content does not give its stored hash: (its id, the hash before it).
    suspect: Option<(i64, Hash)>,
}

/// A link that did not match at `at`: decided by what follows.
struct Pending {
    at: i64,
    wanted: Hash,
    expected: Hash,
    next_checked: bool,
}

impl Verifier {
    /// `start`: the genesis (or the cut the chain continues from), `before`: how many steps
    /// came before it (0, or the purged count); `head` and `length`: what the run row keeps.
    pub fn new(start: Hash, before: i64, head: Hash, length: i64) -> Self {
        let mut v = Verifier::passing(start, before, head);
        v.length = Some(length);
        v.hash_at_length = (length == before).then_some((0, start));
        v
    }

    /// A chain that must pass through `checkpoint` (the start itself, or a step's hash) and
    /// may go on after it: what a run's row keeps (its head as of the last write of the row),
    /// while the steps after it are chained in the trail alone.
    pub fn passing(start: Hash, before: i64, checkpoint: Hash) -> Self {
        Verifier {
            expected: start,
            before_prev: None,
            prev_id: None,
            seen: 0,
            start_count: before,
            head: checkpoint,
            length: None,
            hash_at_length: None,
            head_seen: start == checkpoint,
            first_extra: None,
            found: None,
            pending: None,
            suspect: None,
        }
    }

    /// The first break found so far.
    pub fn broken(&self) -> Option<Break> {
        self.found
    }

    pub fn push(&mut self, s: &Stored) {
        self.seen += 1;
        let position = self.start_count + self.seen;
        if Some(position) == self.length {
            self.hash_at_length = Some((s.id, s.hash.unwrap_or([0; 32])));
        } else if Some(position - 1) == self.length {
            self.first_extra = Some(s.id);
        }
        if s.hash == Some(self.head) {
            self.head_seen = true;
        }
        if self.found.is_some() {
            return;
        }
        if let Some((at, before)) = self.suspect.take() {
            self.found = Some(Break {
                step: Some(at),
                how: if s.prev == Some(before) {
                    How::Inserted
                } else {
                    How::Edited
                },
                at_end: false,
            });
            return;
        }
        if let Some(p) = &mut self.pending {
            if s.hash == Some(p.wanted) {
                // the step at `at` is chained to one that stands after it
                self.found = Some(Break {
                    step: Some(p.at),
                    how: How::Reordered,
                    at_end: false,
                });
                return;
            }
            if !p.next_checked {
                p.next_checked = true;
                if s.prev == Some(p.expected) {
                    // the step at `at` sits between two steps chained to each other
                    self.found = Some(Break {
                        step: Some(p.at),
                        how: How::Inserted,
                        at_end: false,
                    });
                }
            }
            return;
        }
        let (Some(prev), Some(hash)) = (s.prev, s.hash) else {
            self.found = Some(Break {
                step: Some(s.id),
                how: How::Edited,
                at_end: false,
            });
            return;
        };
        if prev != self.expected {
            if Some(prev) == self.before_prev {
                // chained to the step before the previous one: the previous one was added
                self.found = Some(Break {
                    step: self.prev_id,
                    how: How::Inserted,
                    at_end: false,
                });
            } else {
                self.pending = Some(Pending {
                    at: s.id,
                    wanted: prev,
                    expected: self.expected,
                    next_checked: false,
                });
            }
            return;
        }
        if s.computed != Some(hash) {
            // edited, or added with a hash of its own: the next step tells (it is chained to
            // this one's stored hash, or to the step before it)
            self.suspect = Some((s.id, self.expected));
            self.before_prev = Some(self.expected);
            self.expected = hash;
            self.prev_id = Some(s.id);
            return;
        }
        self.before_prev = Some(self.expected);
        self.expected = hash;
        self.prev_id = Some(s.id);
    }

    /// The first break, if any, once every stored step was pushed.
    pub fn finish(mut self) -> Option<Break> {
        if let Some((at, _)) = self.suspect.take() {
            if self.found.is_none() {
                // the last step: added if the run holds more steps than it chained
                self.found = Some(Break {
                    step: Some(at),
                    how: if self
                        .length
                        .is_some_and(|l| self.start_count + self.seen > l)
                    {
                        How::Inserted
                    } else {
                        How::Edited
                    },
                    at_end: false,
                });
            }
        }
        if let Some(p) = self.pending.take() {
            if self.found.is_none() {
                self.found = Some(Break {
                    step: Some(p.at),
                    how: How::Removed,
                    at_end: false,
                });
            }
        }
        if self.found.is_some() {
            return self.found;
        }
        let total = self.start_count + self.seen;
        let Some(length) = self.length else {
            // a checkpoint: every step chained, and the checkpoint among them (or the start)
            return (!self.head_seen).then_some(Break {
                step: self.prev_id,
                how: How::Removed,
                at_end: true,
            });
        };
        if total < length {
            return Some(Break {
                step: self.prev_id,
                how: How::Removed,
                at_end: true,
            });
        }
        if total > length {
            return Some(Break {
                step: self.first_extra,
                how: How::Inserted,
                at_end: false,
            });
        }
        match self.hash_at_length {
            Some((_, h)) if h == self.head => None,
            _ => Some(Break {
                step: self.prev_id,
                how: How::Edited,
                at_end: true,
            }),
        }
    }
}

// ---- the ledger: a Merkle tree over the runs' heads ----

/// A run's leaf in the ledger.
pub fn head_leaf(run: &[u8; 16], length: i64, head: &Hash) -> Hash {
    let mut e = Encoder::new(HEAD_DOMAIN);
    e.bytes(Some(run)).int(Some(length)).bytes(Some(head));
    e.finish()
}

fn node(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

fn leaf_node(leaf: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    h.finalize().into()
}

/// The root of RFC 6962's tree over leaves pushed in order, in O(log n) memory.
#[derive(Default)]
pub struct Root {
    /// Perfect subtrees, largest first: (size, hash).
    stack: Vec<(u64, Hash)>,
    count: u64,
}

impl Root {
    pub fn push(&mut self, leaf: &Hash) {
        self.count += 1;
        let mut cur = (1u64, leaf_node(leaf));
        while let Some(&(size, h)) = self.stack.last() {
            if size != cur.0 {
                break;
            }
            self.stack.pop();
            cur = (size * 2, node(&h, &cur.1));
        }
        self.stack.push(cur);
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn finish(&self) -> Hash {
        let mut it = self.stack.iter().rev();
        let Some(&(_, mut acc)) = it.next() else {
            return Sha256::digest([]).into();
        };
        for (_, h) in it {
            acc = node(h, &acc);
        }
        acc
    }
}

/// RFC 6962's root of `leaves`.
pub fn root(leaves: &[Hash]) -> Hash {
    let mut r = Root::default();
    for l in leaves {
        r.push(l);
    }
    r.finish()
}

/// The audit path of leaf `index` (RFC 6962, 2.1.1): sibling hashes from the leaf up.
pub fn audit_path(leaves: &[Hash], index: usize) -> Vec<Hash> {
    fn subtree(leaves: &[Hash]) -> Hash {
        root(leaves)
    }
    fn path(leaves: &[Hash], index: usize, out: &mut Vec<Hash>) {
        let n = leaves.len();
        if n <= 1 {
            return;
        }
        let k = split(n);
        if index < k {
            path(&leaves[..k], index, out);
            out.push(subtree(&leaves[k..]));
        } else {
            path(&leaves[k..], index - k, out);
            out.push(subtree(&leaves[..k]));
        }
    }
    let mut out = Vec::new();
    path(leaves, index, &mut out);
    out
}

/// The largest power of two smaller than `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// The root that `leaf` at `index` of a tree of `size` leaves and its audit path give.
pub fn root_from_path(leaf: &Hash, index: u64, size: u64, path: &[Hash]) -> Option<Hash> {
    // RFC 9162, 2.1.3.2
    if index >= size {
        return None;
    }
    let (mut fnode, mut snode) = (index, size - 1);
    let mut r = leaf_node(leaf);
    for p in path {
        if snode == 0 {
            return None;
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node(p, &r);
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            r = node(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    (snode == 0).then_some(r)
}

pub fn hex(h: &[u8]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn from_hex(s: &str) -> Option<Hash> {
    let s = s.strip_prefix("\\x").unwrap_or(s);
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(i: u8) -> Hash {
        [i; 32]
    }

    /// A chain of n steps from a start: (stored steps, head).
    fn chain(n: usize) -> (Hash, Vec<(i64, Hash, Hash)>) {
        let start = h(200);
        let mut prev = start;
        let mut out = Vec::new();
        for i in 0..n {
            let leaf = h(i as u8);
            let hash = link(&prev, &leaf);
            out.push(((i as i64 + 1) * 10, prev, leaf));
            prev = hash;
        }
        (start, out)
    }

    /// Verify stored (id, prev, leaf) rows, as a database would hand them over.
    fn verify(
        start: Hash,
        rows: &[(i64, Hash, Hash, Hash)],
        head: Hash,
        length: i64,
    ) -> Option<Break> {
        check(Verifier::new(start, 0, head, length), rows)
    }

    /// Feed stored (id, prev, leaf, hash) rows to a verifier.
    fn check(mut v: Verifier, rows: &[(i64, Hash, Hash, Hash)]) -> Option<Break> {
        for &(id, prev, leaf, hash) in rows {
            v.push(&Stored {
                id,
                prev: Some(prev),
                hash: Some(hash),
                computed: Some(link(&prev, &leaf)),
            });
        }
        v.finish()
    }

    fn stored(start: Hash, n: usize) -> (Vec<(i64, Hash, Hash, Hash)>, Hash) {
        let (_, c) = chain(n);
        let rows: Vec<_> = c
            .iter()
            .map(|&(id, prev, leaf)| (id, prev, leaf, link(&prev, &leaf)))
            .collect();
        let head = rows.last().map(|r| r.3).unwrap_or(start);
        (rows, head)
    }

    #[test]
    fn intact() {
        for n in 0..6 {
            let (start, _) = chain(n);
            let (rows, head) = stored(start, n);
            assert_eq!(verify(start, &rows, head, n as i64), None, "n={n}");
        }
    }

    #[test]
    fn edited() {
        let (start, _) = chain(5);
        let (mut rows, head) = stored(start, 5);
        rows[2].2 = h(99); // content changed, hash kept
        assert_eq!(
            verify(start, &rows, head, 5),
            Some(Break {
                step: Some(30),
                how: How::Edited,
                at_end: false
            })
        );
    }

    #[test]
    fn removed_middle_and_end() {
        let (start, _) = chain(5);
        let (rows, head) = stored(start, 5);
        let mut middle = rows.clone();
        middle.remove(2);
        assert_eq!(
            verify(start, &middle, head, 5),
            Some(Break {
                step: Some(40),
                how: How::Removed,
                at_end: false
            })
        );
        let mut last = rows.clone();
        last.pop();
        assert_eq!(
            verify(start, &last, head, 5),
            Some(Break {
                step: Some(40),
                how: How::Removed,
                at_end: true
            })
        );
        let mut first = rows.clone();
        first.remove(0);
        assert_eq!(
            verify(start, &first, head, 5),
            Some(Break {
                step: Some(20),
                how: How::Removed,
                at_end: false
            })
        );
    }

    #[test]
    fn inserted() {
        let (start, _) = chain(5);
        let (rows, head) = stored(start, 5);
        // a forged step chained to step 20, placed between 20 and 30
        let forged_leaf = h(77);
        let forged = (25, rows[1].3, forged_leaf, link(&rows[1].3, &forged_leaf));
        let mut with = rows.clone();
        with.insert(2, forged);
        assert_eq!(
            verify(start, &with, head, 5),
            Some(Break {
                step: Some(25),
                how: How::Inserted,
                at_end: false
            })
        );
        // a forged step with a made-up predecessor
        let mut with = rows.clone();
        with.insert(2, (25, h(1), forged_leaf, link(&h(1), &forged_leaf)));
        assert_eq!(
            verify(start, &with, head, 5),
            Some(Break {
                step: Some(25),
                how: How::Inserted,
                at_end: false
            })
        );
        // a forged step chained to step 20 with a hash that is not its content's (the one a
        // forger without the encoding would store): the next step still follows step 20
        let mut with = rows.clone();
        with.insert(2, (25, rows[1].3, forged_leaf, h(3)));
        assert_eq!(
            verify(start, &with, head, 5),
            Some(Break {
                step: Some(25),
                how: How::Inserted,
                at_end: false
            })
        );
        // the same as the last step
        let mut with = rows.clone();
        with.push((60, head, forged_leaf, h(3)));
        assert_eq!(
            verify(start, &with, head, 5),
            Some(Break {
                step: Some(60),
                how: How::Inserted,
                at_end: false
            })
        );
        // a forged last step chained to the head, the run row untouched
        let mut with = rows.clone();
        with.push((60, head, forged_leaf, link(&head, &forged_leaf)));
        assert_eq!(
            verify(start, &with, head, 5),
            Some(Break {
                step: Some(60),
                how: How::Inserted,
                at_end: false
            })
        );
    }

    #[test]
    fn reordered() {
        let (start, _) = chain(5);
        let (rows, head) = stored(start, 5);
        // ids of 20 and 30 exchanged: the rows' contents (their leaves) keep their own id
        // in a real trail; here the order of the rows is what changes
        let mut swapped = rows.clone();
        swapped.swap(1, 2);
        let (a, b) = (swapped[1].0, swapped[2].0);
        swapped[1].0 = b;
        swapped[2].0 = a;
        assert_eq!(
            verify(start, &swapped, head, 5),
            Some(Break {
                step: Some(20),
                how: How::Reordered,
                at_end: false
            })
        );
    }

    /// A run row's checkpoint: the chain passes through it and may go on.
    fn verify_passing(
        start: Hash,
        rows: &[(i64, Hash, Hash, Hash)],
        checkpoint: Hash,
    ) -> Option<Break> {
        check(Verifier::passing(start, 0, checkpoint), rows)
    }

    #[test]
    fn checkpoint() {
        let (start, _) = chain(5);
        let (rows, head) = stored(start, 5);
        // every step, or the start, may be the checkpoint
        assert_eq!(verify_passing(start, &rows, start), None);
        for r in &rows {
            assert_eq!(verify_passing(start, &rows, r.3), None);
        }
        assert_eq!(verify_passing(start, &rows, head), None);
        // the checkpoint step removed (with what follows it)
        let cut: Vec<_> = rows[..2].to_vec();
        assert_eq!(
            verify_passing(start, &cut, rows[2].3),
            Some(Break {
                step: Some(20),
                how: How::Removed,
                at_end: true
            })
        );
        // a checkpoint not in the chain at all (the row's head edited)
        assert_eq!(
            verify_passing(start, &rows, h(9)),
            Some(Break {
                step: Some(50),
                how: How::Removed,
                at_end: true
            })
        );
        // tampering before or after the checkpoint is found as with a head
        let mut middle = rows.clone();
        middle.remove(3);
        assert_eq!(
            verify_passing(start, &middle, rows[1].3),
            Some(Break {
                step: Some(50),
                how: How::Removed,
                at_end: false
            })
        );
        let mut edited = rows.clone();
        edited[4].2 = h(99);
        assert_eq!(
            verify_passing(start, &edited, rows[1].3),
            Some(Break {
                step: Some(50),
                how: How::Edited,
                at_end: false
            })
        );
    }

    #[test]
    fn head_edited() {
        let (start, _) = chain(3);
        let (rows, _) = stored(start, 3);
        assert_eq!(
            verify(start, &rows, h(5), 3),
            Some(Break {
                step: Some(30),
                how: How::Edited,
                at_end: true
            })
        );
    }

    #[test]
    fn merkle_paths() {
        for n in 1..20usize {
            let leaves: Vec<Hash> = (0..n).map(|i| h(i as u8)).collect();
            let r = root(&leaves);
            for i in 0..n {
                let p = audit_path(&leaves, i);
                assert_eq!(
                    root_from_path(&leaves[i], i as u64, n as u64, &p),
                    Some(r),
                    "n={n} i={i}"
                );
                assert_ne!(root_from_path(&h(250), i as u64, n as u64, &p), Some(r));
            }
        }
    }

    #[test]
    fn encoding_is_unambiguous() {
        // a NULL and an empty text differ; field boundaries cannot shift
        let a = {
            let mut e = Encoder::new("t");
            e.text(None).text(Some("ab"));
            e.finish()
        };
        let b = {
            let mut e = Encoder::new("t");
            e.text(Some("")).text(Some("ab"));
            e.finish()
        };
        let c = {
            let mut e = Encoder::new("t");
            e.text(Some("a")).text(Some("b"));
            e.finish()
        };
        assert!(a != b && b != c && a != c);
        assert_eq!(hex(&from_hex(&hex(&a)).unwrap()), hex(&a));
    }

    proptest! {
        /// The encoder hashes exactly the canonical encoding docs/proving.md specifies, for fields
        /// shorter and longer than a SHA-256 block: against the encoding written out byte by
        /// byte and hashed at once.
        #[test]
        fn encoder_is_the_canonical_encoding(
            fields in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..700)), 0..12),
            ints in proptest::option::of(proptest::collection::vec(any::<i64>(), 0..80)),
            n in proptest::option::of(any::<i64>()),
        ) {
            let mut e = Encoder::new(STEP_DOMAIN);
            let mut plain = STEP_DOMAIN.as_bytes().to_vec();
            plain.push(0);
            let field = |plain: &mut Vec<u8>, b: Option<&[u8]>| match b {
                None => plain.push(0),
                Some(b) => {
                    plain.push(1);
                    plain.extend_from_slice(&(b.len() as u32).to_be_bytes());
                    plain.extend_from_slice(b);
                }
            };
            for f in &fields {
                e.bytes(f.as_deref());
                field(&mut plain, f.as_deref());
            }
            e.int(n);
            field(&mut plain, n.map(i64::to_be_bytes).as_ref().map(|b| &b[..]));
            e.ints(ints.as_deref());
            let ints_bytes: Option<Vec<u8>> =
                ints.as_ref().map(|v| v.iter().flat_map(|x| x.to_be_bytes()).collect());
            field(&mut plain, ints_bytes.as_deref());
            prop_assert_eq!(e.finish(), <[u8; 32]>::from(Sha256::digest(&plain)));
        }
    }

    proptest! {
        /// Any single removal, insertion, edit or exchange of neighbours is found, and at
        /// the step it touches.
        #[test]
        fn any_tampering_is_found(n in 2usize..30, at in 0usize..30, what in 0u8..4) {
            let at = at % n;
            let (start, _) = chain(n);
            let (rows, head) = stored(start, n);
            let mut t = rows.clone();
            let expect_step;
            match what {
                0 => { t[at].2 = h(250); expect_step = Some(rows[at].0); }
                1 => { t.remove(at); expect_step = None; }
                2 => {
                    let forged = (rows[at].0 + 5, rows[at].3, h(251), link(&rows[at].3, &h(251)));
                    t.insert(at + 1, forged);
                    expect_step = Some(rows[at].0 + 5);
                }
                _ => {
                    let j = if at + 1 < n { at + 1 } else { at - 1 };
                    let (lo, hi) = (at.min(j), at.max(j));
                    t.swap(lo, hi);
                    let (a, b) = (t[lo].0, t[hi].0);
                    t[lo].0 = b; t[hi].0 = a;
                    expect_step = Some(rows[lo].0);
                }
            }
            let found = verify(start, &t, head, n as i64);
            prop_assert!(found.is_some());
            if let Some(s) = expect_step { prop_assert_eq!(found.unwrap().step, Some(s)); }
            // against a checkpoint at or after the step touched, the same (a forged step
            // appended after the checkpoint with a chain of its own is what only a digest shows)
            let cp = rows[(at + 1).min(n - 1)].3;
            let passing = verify_passing(start, &t, cp);
            if what != 2 || at + 1 < n {
                prop_assert!(passing.is_some(), "what={} at={}", what, at);
            }
        }
    }
}
