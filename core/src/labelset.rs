//! Label sets: sorted, duplicate-free sets of labels, and their algebra.
//!
//! The internal form (the *body*) is the entries in ascending byte order, each followed by a
//! 0 byte: `[kind][value]0 [kind][value]0 ...`. No entry contains 0 and 0 sorts below every
//! other byte, so byte order on bodies is element-by-element order on the sets, equality is byte
//! equality, and hashing the body hashes the set.

use crate::error::{ParseError, Problem};
use crate::label::{self, Label, ORIGIN};
use crate::scope;

/// A borrowed, canonical body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelSet<'a>(&'a [u8]);

/// The body is not well formed (it can only come from a damaged datum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

impl<'a> LabelSet<'a> {
    /// The empty set.
    pub const EMPTY: LabelSet<'static> = LabelSet(&[]);

    /// Wrap a body, checking that it is terminated (the cheap check done on every read; the
    /// writers in this crate only produce canonical bodies).
    #[inline]
    pub fn from_body(body: &'a [u8]) -> Result<Self, Corrupt> {
        match body.last() {
            None | Some(0) => Ok(LabelSet(body)),
            _ => Err(Corrupt),
        }
    }

    /// Wrap a body known to be canonical.
    #[inline]
    pub fn from_canonical(body: &'a [u8]) -> Self {
        LabelSet(body)
    }

    #[inline]
    pub fn body(self) -> &'a [u8] {
        self.0
    }

    #[inline]
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    #[inline]
    pub fn iter(self) -> Labels<'a> {
        Labels { rest: self.0 }
    }

    pub fn len(self) -> usize {
        self.0.iter().filter(|&&b| b == 0).count()
    }

    /// `self ? label`: the set holds this entry.
    pub fn contains(self, entry: &[u8]) -> bool {
        for l in self.iter() {
            match l.0.cmp(entry) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Greater => return false,
            }
        }
        false
    }

    /// `self @> other`: every label of `other` is in `self`.
    pub fn is_superset(self, other: LabelSet<'_>) -> bool {
        if other.0.len() > self.0.len() {
            return false;
        }
        let mut mine = self.iter();
        'outer: for want in other.iter() {
            for have in mine.by_ref() {
                match have.0.cmp(want.0) {
                    std::cmp::Ordering::Less => continue,
                    std::cmp::Ordering::Equal => continue 'outer,
                    std::cmp::Ordering::Greater => return false,
                }
            }
            return false;
        }
        true
    }

    /// `self && other`: they share a label.
    pub fn overlaps(self, other: LabelSet<'_>) -> bool {
        let (mut a, mut b) = (self.iter(), other.iter());
        let (mut x, mut y) = (a.next(), b.next());
        while let (Some(l), Some(r)) = (x, y) {
            match l.0.cmp(r.0) {
                std::cmp::Ordering::Less => x = a.next(),
                std::cmp::Ordering::Greater => y = b.next(),
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }

    /// `scope @> self`: the scope reaches the scope of every scope label (origin and tag labels
    /// never block). This is the barrier rule.
    #[inline]
    pub fn carried_by(self, path: &[u8]) -> bool {
        if path.is_empty() {
            return true;
        }
        for l in self.iter() {
            match l.scope() {
                Some(s) => {
                    if !scope::reaches(path, s) {
                        return false;
                    }
                }
                // Entries are sorted by kind: past the scope kinds there is nothing to check.
                None => return true,
            }
        }
        true
    }

    /// The deepest scope that can carry the set (the common ancestor of its scope labels), or
    /// `None` when it holds none.
    pub fn scope(self) -> Option<&'a [u8]> {
        let mut acc: Option<&'a [u8]> = None;
        for l in self.iter() {
            let Some(s) = l.scope() else { break };
            acc = Some(match acc {
                None => s,
                Some(a) => scope::lca(a, s),
            });
        }
        acc
    }

    /// The labels kept by `keep`, as a new body (still canonical: a subsequence).
    pub fn filter(self, mut keep: impl FnMut(Label<'a>) -> bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len());
        for l in self.iter() {
            if keep(l) {
                out.extend_from_slice(l.0);
                out.push(0);
            }
        }
        out
    }

    /// The scope labels that `path` cannot carry.
    pub fn escaping(self, path: &[u8]) -> Vec<u8> {
        self.filter(|l| matches!(l.scope(), Some(s) if !scope::reaches(path, s)))
    }

    /// The origin labels.
    pub fn origins(self) -> Vec<u8> {
        self.filter(|l| l.is_origin())
    }

    /// No origin label: nothing came from an untrusted outside source.
    pub fn is_trusted(self) -> bool {
        !self.iter().any(|l| l.kind() == ORIGIN)
    }

    /// `self || other` as a new body.
    pub fn union(self, other: LabelSet<'_>) -> Vec<u8> {
        if other.is_empty() || self.0 == other.0 {
            return self.0.to_vec();
        }
        if self.is_empty() {
            return other.0.to_vec();
        }
        let mut out = Vec::with_capacity(self.0.len() + other.0.len());
        let (mut a, mut b) = (self.iter(), other.iter());
        let (mut x, mut y) = (a.next(), b.next());
        loop {
            let take = match (x, y) {
                (None, None) => break,
                (Some(l), None) => {
                    x = a.next();
                    l
                }
                (None, Some(r)) => {
                    y = b.next();
                    r
                }
                (Some(l), Some(r)) => match l.0.cmp(r.0) {
                    std::cmp::Ordering::Less => {
                        x = a.next();
                        l
                    }
                    std::cmp::Ordering::Greater => {
                        y = b.next();
                        r
                    }
                    std::cmp::Ordering::Equal => {
                        x = a.next();
                        y = b.next();
                        l
                    }
                },
            };
            out.extend_from_slice(take.0);
            out.push(0);
        }
        out
    }

    /// Append the canonical text form `{a,b,...}`.
    pub fn write_text(self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, l) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            l.write_text(out);
        }
        out.push(b'}');
    }

    /// The length of the text form (`{a,b}`), in bytes: what [`LabelSet::write_text`] appends.
    pub fn text_len(self) -> usize {
        let (mut len, mut n) = (2, 0);
        for l in self.iter() {
            len += l.text_len();
            n += 1;
        }
        len + n.max(1) - 1
    }

    pub fn to_text(self) -> String {
        let mut out = Vec::with_capacity(self.0.len() + 16);
        self.write_text(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The text form for a message: at most `max` labels, then how many more there are
    /// (`{a,b,... and 99998 more}`), so a run carrying 100,000 labels makes a short message.
    pub fn to_text_capped(self, max: usize) -> String {
        let mut out = Vec::with_capacity(self.0.len().min(max * 32) + 32);
        out.push(b'{');
        let mut it = self.iter();
        for (i, l) in it.by_ref().take(max).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            l.write_text(&mut out);
        }
        let more = it.rest.iter().filter(|&&b| b == 0).count();
        if more > 0 {
            out.extend_from_slice(format!(",... and {more} more").as_bytes());
        }
        out.push(b'}');
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Is every label of `self` in `other`? With `other`'s entry offsets at hand (see
    /// [`offsets`]), each label is found by binary search: `O(|self| log |other|)`.
    pub fn is_subset_indexed(self, other: LabelSet<'_>, offsets: &[(u32, u32)]) -> bool {
        self.iter().all(|l| {
            offsets
                .binary_search_by(|&(s, e)| other.0[s as usize..e as usize].cmp(l.0))
                .is_ok()
        })
    }
}

/// Where each entry of a body starts and ends, for [`LabelSet::is_subset_indexed`].
pub fn offsets(set: LabelSet<'_>) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    for (i, &b) in set.0.iter().enumerate() {
        if b == 0 {
            out.push((start as u32, i as u32));
            start = i + 1;
        }
    }
    out
}

/// Iterator over the labels of a body.
#[derive(Clone)]
pub struct Labels<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Labels<'a> {
    type Item = Label<'a>;

    #[inline]
    fn next(&mut self) -> Option<Label<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let end = self
            .rest
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.rest.len());
        let entry = &self.rest[..end];
        self.rest = self.rest.get(end + 1..).unwrap_or(&[]);
        Some(Label(entry))
    }
}

/// Build a canonical body from entries in any order, with duplicates.
pub fn from_entries(mut entries: Vec<Vec<u8>>) -> Vec<u8> {
    entries.sort_unstable();
    entries.dedup();
    let mut out = Vec::with_capacity(entries.iter().map(|e| e.len() + 1).sum());
    for e in entries {
        out.extend_from_slice(&e);
        out.push(0);
    }
    out
}

#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Parse the text form of a labelset: `{label, label ...}` in any order, with duplicates and
/// whitespace around labels and braces, and labels optionally in double quotes.
pub fn parse(text: &[u8]) -> Result<Vec<u8>, ParseError> {
    let n = text.len();
    let skip = |mut i: usize| {
        while i < n && is_space(text[i]) {
            i += 1;
        }
        i
    };
    let err = |p: Problem, at: usize| Err(ParseError::at(p, text, at));
    let mut i = skip(0);
    if i == n || text[i] != b'{' {
        return err(Problem::MissingOpenBrace, i);
    }
    i = skip(i + 1);
    let mut entries: Vec<Vec<u8>> = Vec::new();
    if i < n && text[i] == b'}' {
        i += 1;
    } else {
        loop {
            i = skip(i);
            if i == n {
                return err(Problem::MissingCloseBrace, n);
            }
            let (start, end) = match text[i] {
                b',' | b'}' => return err(Problem::EmptyElement, i),
                b'{' => return err(Problem::UnexpectedBrace { ch: '{' }, i),
                b'"' => {
                    let Some(q) = text[i + 1..].iter().position(|&b| b == b'"') else {
                        return err(Problem::BadQuote, i);
                    };
                    let (s, e) = (i + 1, i + 1 + q);
                    if s == e {
                        return err(Problem::EmptyElement, i);
                    }
                    i = e + 1;
                    (s, e)
                }
                _ => {
                    let s = i;
                    while i < n
                        && !matches!(text[i], b',' | b'}' | b'{' | b'"')
                        && !is_space(text[i])
                    {
                        i += 1;
                    }
                    (s, i)
                }
            };
            let mut entry = Vec::with_capacity(end - start);
            label::parse_into(text, start, end, &mut entry)?;
            entries.push(entry);
            i = skip(i);
            if i == n {
                return err(Problem::MissingCloseBrace, n);
            }
            match text[i] {
                b',' => i += 1,
                b'}' => {
                    i += 1;
                    break;
                }
                b'{' => return err(Problem::UnexpectedBrace { ch: '{' }, i),
                b'"' => return err(Problem::BadQuote, i),
                _ => return err(Problem::MissingComma, i),
            }
        }
    }
    let i = skip(i);
    if i != n {
        return err(Problem::TrailingGarbage, i);
    }
    Ok(from_entries(entries))
}

#[cfg(test)]
mod tests;
