//! One label: its grammar and its internal form.
//!
//! A label is held as an *entry*: one kind byte followed by its value, where a path value uses
//! the [`SEP`](crate::path::SEP) separator of scopes. The kind bytes are the first letters of
//! the namespaces, so byte order on entries is namespace order, then segment-by-segment order of
//! the value. A company or area value is exactly the path of the scope it names.

use crate::error::{ParseError, Problem};
use crate::path::{parse_path, Alphabet, SEP};

/// `area:<company>/<area>[/...]`
pub const AREA: u8 = b'a';
/// `company:<company>`
pub const COMPANY: u8 = b'c';
/// `installation`
pub const INSTALLATION: u8 = b'i';
/// `origin:<source>[/...]`
pub const ORIGIN: u8 = b'o';
/// `tag:<name>`
pub const TAG: u8 = b't';

/// The outside sources an `origin:` label may name.
pub const ORIGIN_SOURCES: [&str; 4] = ["slack", "webhook", "event", "tool"];

/// A borrowed entry: `[kind][value]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Label<'a>(pub &'a [u8]);

impl<'a> Label<'a> {
    #[inline]
    pub fn kind(self) -> u8 {
        self.0.first().copied().unwrap_or(0)
    }

    #[inline]
    pub fn value(self) -> &'a [u8] {
        self.0.get(1..).unwrap_or(&[])
    }

    /// The scope path a scope label names; `None` for origin and tag labels.
    #[inline]
    pub fn scope(self) -> Option<&'a [u8]> {
        match self.kind() {
            AREA | COMPANY => Some(self.value()),
            INSTALLATION => Some(&[]),
            _ => None,
        }
    }

    #[inline]
    pub fn is_origin(self) -> bool {
        self.kind() == ORIGIN
    }

    /// Append the text form.
    pub fn write_text(self, out: &mut Vec<u8>) {
        let ns: &[u8] = match self.kind() {
            AREA => b"area:",
            COMPANY => b"company:",
            INSTALLATION => {
                out.extend_from_slice(b"installation");
                return;
            }
            ORIGIN => b"origin:",
            TAG => b"tag:",
            _ => b"?:",
        };
        out.extend_from_slice(ns);
        out.extend(
            self.value()
                .iter()
                .map(|&b| if b == SEP { b'/' } else { b }),
        );
    }

    /// The length of the text form, in bytes.
    pub fn text_len(self) -> usize {
        let ns = match self.kind() {
            AREA => 5,
            COMPANY => 8,
            INSTALLATION => return 12,
            ORIGIN => 7,
            TAG => 4,
            _ => 2,
        };
        ns + self.value().len()
    }

    pub fn to_text(self) -> String {
        let mut out = Vec::with_capacity(self.0.len() + 8);
        self.write_text(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The label naming the data of a scope (its path): `installation`, `company:acme`,
/// `area:acme/platform`.
pub fn of_scope(path: &[u8]) -> Vec<u8> {
    let kind = if path.is_empty() {
        INSTALLATION
    } else if !path.contains(&SEP) {
        COMPANY
    } else {
        AREA
    };
    let mut e = Vec::with_capacity(path.len() + 1);
    e.push(kind);
    e.extend_from_slice(path);
    e
}

/// Parse the label `text[start..end]` and append its entry to `out`. Error positions are in
/// `text`.
pub(crate) fn parse_into(
    text: &[u8],
    start: usize,
    end: usize,
    out: &mut Vec<u8>,
) -> Result<(), ParseError> {
    let s = &text[start..end];
    if s.is_empty() {
        return Err(ParseError::at(Problem::EmptyLabel, text, start));
    }
    if s == b"installation" {
        out.push(INSTALLATION);
        return Ok(());
    }
    let Some(colon) = s.iter().position(|&b| b == b':') else {
        if s.starts_with(b"installation") {
            return Err(ParseError::at(Problem::InstallationValue, text, start + 12));
        }
        return Err(unknown_namespace(text, start, s));
    };
    let (vs, ve) = (start + colon + 1, end);
    let mark = out.len();
    match &s[..colon] {
        b"company" => {
            out.push(COMPANY);
            let n = parse_path(text, vs, ve, |_| Alphabet::Scope, out)?;
            if n != 1 {
                return Err(ParseError::at(
                    Problem::CompanySegments { found: n },
                    text,
                    vs,
                ));
            }
        }
        b"area" => {
            out.push(AREA);
            let n = parse_path(text, vs, ve, |_| Alphabet::Scope, out)?;
            if n < 2 {
                return Err(ParseError::at(Problem::AreaSegments { found: n }, text, vs));
            }
        }
        b"origin" => {
            out.push(ORIGIN);
            let alphabet = |i| {
                if i == 0 {
                    Alphabet::Scope
                } else {
                    Alphabet::Origin
                }
            };
            parse_path(text, vs, ve, alphabet, out)?;
            let source_len = out[mark + 1..]
                .iter()
                .position(|&b| b == SEP)
                .unwrap_or(out.len() - mark - 1);
            let source = &out[mark + 1..mark + 1 + source_len];
            if !ORIGIN_SOURCES.iter().any(|k| k.as_bytes() == source) {
                return Err(ParseError::at(
                    Problem::UnknownOrigin {
                        source: String::from_utf8_lossy(source).into_owned(),
                    },
                    text,
                    vs,
                ));
            }
        }
        b"tag" => {
            out.push(TAG);
            let n = parse_path(text, vs, ve, |_| Alphabet::Scope, out)?;
            if n != 1 {
                return Err(ParseError::at(Problem::TagSegments { found: n }, text, vs));
            }
        }
        b"installation" => {
            return Err(ParseError::at(Problem::InstallationValue, text, start + 12))
        }
        _ => return Err(unknown_namespace(text, start, s)),
    }
    Ok(())
}

fn unknown_namespace(text: &[u8], start: usize, s: &[u8]) -> ParseError {
    let ns_end = s.iter().position(|&b| b == b':').unwrap_or(s.len()).min(40);
    ParseError::at(
        Problem::UnknownNamespace {
            ns: String::from_utf8_lossy(&s[..ns_end]).into_owned(),
        },
        text,
        start,
    )
}

/// Parse one label (no surrounding whitespace) into its entry.
pub fn parse(text: &[u8]) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::with_capacity(text.len());
    parse_into(text, 0, text.len(), &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
