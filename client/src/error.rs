use pg_labels_core::ParseError;
use std::fmt;

/// Why a value could not be made: bad text, or a binary message this crate does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Text that is not a valid value of the type (the server says 22P02 for the same text).
    Invalid {
        type_name: &'static str,
        /// The start of the text (at most [`Error::EXCERPT`] characters: a labelset can be long).
        text: String,
        source: ParseError,
    },
    /// A binary message with a format version other than [`crate::FORMAT_VERSION`]: written by
    /// a newer (or older) extension than this crate knows, so it is refused, not guessed at.
    UnsupportedVersion {
        type_name: &'static str,
        version: u8,
    },
    /// An empty binary message (a valid one has at least its version byte).
    Empty { type_name: &'static str },
}

impl Error {
    /// How many characters of a bad text an [`Error::Invalid`] keeps.
    pub const EXCERPT: usize = 200;

    pub(crate) fn invalid(type_name: &'static str, text: &[u8], source: ParseError) -> Self {
        Error::Invalid {
            type_name,
            text: String::from_utf8_lossy(text)
                .chars()
                .take(Self::EXCERPT)
                .collect(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The server's wording (message, then its DETAIL), so logs read the same on both sides.
            Error::Invalid {
                type_name,
                text,
                source,
            } => {
                write!(
                    f,
                    "invalid input syntax for type {type_name}: \"{text}\": {source}"
                )
            }
            Error::UnsupportedVersion { type_name, version } => write!(
                f,
                "unsupported binary format version {version} for type {type_name} \
                 (this client reads version {})",
                crate::FORMAT_VERSION
            ),
            Error::Empty { type_name } => write!(f, "empty binary message for type {type_name}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Invalid { source, .. } => Some(source),
            _ => None,
        }
    }
}
