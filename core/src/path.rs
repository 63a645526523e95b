//! The segment grammar shared by scopes and labels: `/`-separated segments of a restricted
//! alphabet, held internally joined by [`SEP`].

use crate::error::{describe_char, ParseError, Problem};

/// Separator between segments in the internal path form.
pub const SEP: u8 = 0x01;
/// Most segments in a path.
pub const MAX_SEGMENTS: usize = 16;
/// Most characters in one segment.
pub const MAX_SEGMENT_LEN: usize = 63;

/// Which characters a segment may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alphabet {
    /// `[a-z0-9_-]`, starting with a letter or digit: scopes, tags, origin sources.
    Scope,
    /// `[A-Za-z0-9._-]`, starting with a letter or digit: the sub-path of an origin
    /// (`origin:slack/T01/C02`), where outside systems' ids keep their case.
    Origin,
}

impl Alphabet {
    #[inline]
    fn allows(self, b: u8) -> bool {
        match self {
            Alphabet::Scope => matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'),
            Alphabet::Origin => {
                matches!(b, b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.')
            }
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Alphabet::Scope => "lower-case a-z, 0-9, \"_\" and \"-\"",
            Alphabet::Origin => "a-z, A-Z, 0-9, \".\", \"_\" and \"-\"",
        }
    }
}

/// Parse `text[start..end]` as `/`-separated segments, appending them to `out` joined by
/// [`SEP`]. `alphabet(i)` gives the alphabet of segment `i`. Errors carry positions in `text`.
/// Returns the number of segments.
pub(crate) fn parse_path(
    text: &[u8],
    start: usize,
    end: usize,
    alphabet: impl Fn(usize) -> Alphabet,
    out: &mut Vec<u8>,
) -> Result<usize, ParseError> {
    if start == end {
        return Err(ParseError::at(Problem::EmptySegment, text, start));
    }
    if text[start] == b'/' {
        return Err(ParseError::at(Problem::LeadingSlash, text, start));
    }
    let mut count = 0;
    let mut seg_start = start;
    let mut i = start;
    loop {
        if i == end || text[i] == b'/' {
            if seg_start == i {
                return Err(if i == end {
                    ParseError::at(Problem::TrailingSlash, text, i - 1)
                } else {
                    ParseError::at(Problem::EmptySegment, text, i)
                });
            }
            count += 1;
            if count > MAX_SEGMENTS {
                return Err(ParseError::at(
                    Problem::TooManySegments { max: MAX_SEGMENTS },
                    text,
                    seg_start,
                ));
            }
            let len = i - seg_start;
            if len > MAX_SEGMENT_LEN {
                return Err(ParseError::at(
                    Problem::SegmentTooLong {
                        len,
                        max: MAX_SEGMENT_LEN,
                    },
                    text,
                    seg_start,
                ));
            }
            let first = text[seg_start];
            if !first.is_ascii_alphanumeric() {
                return Err(ParseError::at(
                    Problem::BadStart { ch: first as char },
                    text,
                    seg_start,
                ));
            }
            if count > 1 {
                out.push(SEP);
            }
            out.extend_from_slice(&text[seg_start..i]);
            if i == end {
                return Ok(count);
            }
            seg_start = i + 1;
        } else {
            let alpha = alphabet(count);
            if !alpha.allows(text[i]) {
                return Err(ParseError::at(
                    Problem::BadChar {
                        ch: describe_char(text, i),
                        allowed: alpha.describe(),
                    },
                    text,
                    i,
                ));
            }
        }
        i += 1;
    }
}
