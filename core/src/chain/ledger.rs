//! The ledger: a Merkle tree (RFC 6962's shape) over one leaf per run, `(run, length, head)`
//! in run order; its root, and a leaf's audit path to it.

use super::{Encoder, Hash, HEAD_DOMAIN};
use sha2::{Digest, Sha256};

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
