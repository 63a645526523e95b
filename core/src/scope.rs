//! Scopes: positions in the containment tree (installation, company, area, sub-area).
//!
//! A scope is held as its *path*: the segments joined by [`SEP`] (byte 0x01), the installation
//! being the empty path. Because 0x01 sorts below every segment character, plain byte order on
//! paths is segment-by-segment order in which a path sorts right before its descendants, so every
//! subtree is one contiguous range and containment is a prefix test.

use crate::error::{ParseError, Problem};
use std::cmp::Ordering;

use crate::path::{parse_path, Alphabet};
pub use crate::path::{MAX_SEGMENTS, MAX_SEGMENT_LEN, SEP};

/// Parse the text form of a scope (`*`, `acme`, `acme/platform`, ...) into its path.
pub fn parse(text: &[u8]) -> Result<Vec<u8>, ParseError> {
    if text == b"*" {
        return Ok(Vec::new());
    }
    if text.is_empty() {
        return Err(ParseError::at(Problem::EmptyScope, text, 0));
    }
    let mut out = Vec::with_capacity(text.len());
    parse_path(text, 0, text.len(), |_| Alphabet::Scope, &mut out)?;
    Ok(out)
}

/// `a @> b`: `a` is `b` or an ancestor of `b`.
#[inline]
pub fn reaches(a: &[u8], b: &[u8]) -> bool {
    a.is_empty() || (b.starts_with(a) && (b.len() == a.len() || b[a.len()] == SEP))
}

/// The total order: byte order on paths (segment by segment, parents first).
#[inline]
pub fn cmp(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// Number of segments; 0 for the installation.
pub fn depth(p: &[u8]) -> usize {
    if p.is_empty() {
        0
    } else {
        p.iter().filter(|&&b| b == SEP).count() + 1
    }
}

/// The parent path, or `None` for the installation.
pub fn parent(p: &[u8]) -> Option<&[u8]> {
    if p.is_empty() {
        return None;
    }
    Some(match p.iter().rposition(|&b| b == SEP) {
        Some(i) => &p[..i],
        None => &[],
    })
}

/// The deepest common ancestor of two paths.
pub fn lca<'a>(a: &'a [u8], b: &[u8]) -> &'a [u8] {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let boundary = |p: &[u8]| n == p.len() || p[n] == SEP;
    if boundary(a) && boundary(b) {
        return &a[..n];
    }
    match a[..n].iter().rposition(|&c| c == SEP) {
        Some(i) => &a[..i],
        None => &[],
    }
}

/// Append the text form of a path (`*` for the installation).
pub fn write_text(p: &[u8], out: &mut Vec<u8>) {
    if p.is_empty() {
        out.push(b'*');
    } else {
        out.extend(p.iter().map(|&b| if b == SEP { b'/' } else { b }));
    }
}

/// The text form of a path.
pub fn to_text(p: &[u8]) -> String {
    let mut out = Vec::with_capacity(p.len().max(1));
    write_text(p, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// An exclusive upper bound of the subtree of `p` (`None` for the installation, whose subtree
/// is everything): every valid path `q` with `p <= q < upper` is in the subtree of `p`, and no
/// other. It is `p` followed by `-`, the least segment character, which sorts after [`SEP`].
pub fn subtree_upper(p: &[u8]) -> Option<Vec<u8>> {
    if p.is_empty() {
        return None;
    }
    let mut u = Vec::with_capacity(p.len() + 1);
    u.extend_from_slice(p);
    u.push(b'-');
    Some(u)
}

#[cfg(test)]
mod tests;
