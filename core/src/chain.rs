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

mod ledger;
#[cfg(test)]
mod tests;
mod verify;

pub use ledger::{audit_path, head_leaf, root, root_from_path, Root};
pub use verify::{Break, How, Stored, Verifier};

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
    /// An approval request's expiry (microseconds since 2000-01-01 UTC), release 0.3.1: hashed
    /// after everything else, and only when there is one, so that every leaf without one
    /// (every step before it) keeps its hash.
    pub expires_at: Option<i64>,
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
    if let Some(expires_at) = s.expires_at {
        e.text(Some("expires_at")).int(Some(expires_at));
    }
    e.finish()
}

/// A step's hash: its predecessor's (or the run's genesis, or a purge's cut) and its leaf.
pub fn link(prev: &Hash, leaf: &Hash) -> Hash {
    let mut e = Encoder::new(LINK_DOMAIN);
    e.bytes(Some(prev)).bytes(Some(leaf));
    e.finish()
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
