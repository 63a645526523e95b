//! What can be wrong with a `scope` or `labelset` literal, and where.
//!
//! A [`ParseError`] carries the problem and the 1-based character position at which it was
//! found. The SQL layer turns it into SQLSTATE `22P02` with this text as the DETAIL line.

use std::fmt;

/// One problem found by a parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// An empty scope literal.
    EmptyScope,
    /// An empty label.
    EmptyLabel,
    /// Two separators in a row, or a `:` with nothing after it.
    EmptySegment,
    /// The path starts with `/`.
    LeadingSlash,
    /// The path ends with `/`.
    TrailingSlash,
    /// A character outside the segment alphabet.
    BadChar { ch: String, allowed: &'static str },
    /// A segment starting with `_` or `-`.
    BadStart { ch: char },
    /// A segment of `len` characters, more than the limit `max`.
    SegmentTooLong { len: usize, max: usize },
    /// More than `max` segments.
    TooManySegments { max: usize },
    /// A label namespace other than the five known ones.
    UnknownNamespace { ns: String },
    /// `company:` with other than one segment.
    CompanySegments { found: usize },
    /// `area:` with fewer than two segments.
    AreaSegments { found: usize },
    /// `origin:` naming a source other than slack, webhook, event, tool.
    UnknownOrigin { source: String },
    /// `tag:` with other than one segment.
    TagSegments { found: usize },
    /// `installation` followed by something.
    InstallationValue,
    /// A labelset literal that does not start with `{`.
    MissingOpenBrace,
    /// A labelset literal whose `{` is never closed.
    MissingCloseBrace,
    /// Something after the closing `}`.
    TrailingGarbage,
    /// `{a,,b}`, `{a,}` or `{,a}`.
    EmptyElement,
    /// A `"` that is not closed, or text glued to a quoted element.
    BadQuote,
    /// Something other than `,` or `}` after a label.
    MissingComma,
    /// A `{` or `}` where a label was expected.
    UnexpectedBrace { ch: char },
}

/// A problem and the 1-based character position where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub problem: Problem,
    /// 1-based character (not byte) position in the text that was parsed.
    pub position: usize,
}

impl ParseError {
    pub(crate) fn at(problem: Problem, text: &[u8], byte_offset: usize) -> Self {
        ParseError {
            problem,
            position: char_position(text, byte_offset),
        }
    }
}

/// 1-based character position of `byte_offset` in `text`: the number of UTF-8 lead bytes before
/// it, plus one. Works on any bytes (invalid UTF-8 counts byte by byte).
pub fn char_position(text: &[u8], byte_offset: usize) -> usize {
    let end = byte_offset.min(text.len());
    text[..end].iter().filter(|&&b| (b & 0xC0) != 0x80).count() + 1
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.position;
        match &self.problem {
            Problem::EmptyScope => write!(
                f,
                "Empty scope at character {at}; the installation is written \"*\"."
            ),
            Problem::EmptyLabel => write!(f, "Empty label at character {at}."),
            Problem::EmptySegment => write!(f, "Empty segment at character {at}."),
            Problem::LeadingSlash => write!(f, "Leading \"/\" at character {at}."),
            Problem::TrailingSlash => write!(f, "Trailing \"/\" at character {at}."),
            Problem::BadChar { ch, allowed } => {
                write!(f, "Unexpected character {ch} at character {at}; segments use {allowed}.")
            }
            Problem::BadStart { ch } => write!(
                f,
                "Segment starts with \"{ch}\" at character {at}; a segment must start with a letter or digit."
            ),
            Problem::SegmentTooLong { len, max } => write!(
                f,
                "Segment of {len} characters at character {at} is longer than the limit of {max}."
            ),
            Problem::TooManySegments { max } => write!(
                f,
                "More than {max} segments; the one past the limit starts at character {at}."
            ),
            Problem::UnknownNamespace { ns } => write!(
                f,
                "Unknown label namespace \"{ns}\" at character {at}; expected installation, company:, area:, origin: or tag:."
            ),
            Problem::CompanySegments { found } => write!(
                f,
                "A company label takes exactly one segment, found {found} at character {at}; use area: for a company's areas."
            ),
            Problem::AreaSegments { found } => write!(
                f,
                "An area label takes at least two segments (company/area), found {found} at character {at}; use company: for a company."
            ),
            Problem::UnknownOrigin { source } => write!(
                f,
                "Unknown origin \"{source}\" at character {at}; expected slack, webhook, event or tool."
            ),
            Problem::TagSegments { found } => write!(
                f,
                "A tag label takes exactly one segment, found {found} at character {at}."
            ),
            Problem::InstallationValue => write!(
                f,
                "The installation label takes no value (character {at})."
            ),
            Problem::MissingOpenBrace => {
                write!(f, "A labelset starts with \"{{\" (character {at}).")
            }
            Problem::MissingCloseBrace => {
                write!(f, "Missing \"}}\" at character {at}.")
            }
            Problem::TrailingGarbage => write!(f, "Junk after \"}}\" at character {at}."),
            Problem::EmptyElement => write!(f, "Empty element at character {at}."),
            Problem::BadQuote => write!(f, "Unbalanced or misplaced quote at character {at}."),
            Problem::MissingComma => write!(
                f,
                "Expected \",\" or \"}}\" at character {at}; labels contain no spaces."
            ),
            Problem::UnexpectedBrace { ch } => {
                write!(f, "Unexpected \"{ch}\" at character {at}; labelsets do not nest.")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Quote a character (or a raw byte that is not UTF-8) for an error message.
pub(crate) fn describe_char(text: &[u8], offset: usize) -> String {
    let rest = &text[offset..];
    let len = match rest[0] {
        b if b < 0x80 => 1,
        b if b >= 0xF0 => 4,
        b if b >= 0xE0 => 3,
        b if b >= 0xC0 => 2,
        _ => 1,
    }
    .min(rest.len());
    match std::str::from_utf8(&rest[..len]) {
        Ok(" ") => "\" \" (a space)".to_string(),
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("\"{s}\""),
        _ => format!("byte 0x{:02x}", rest[0]),
    }
}
