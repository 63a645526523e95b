//! Every SQLSTATE pg_labels raises, in one place.
//!
//! The rules' own codes are in class 23 (integrity constraint violation), in the subclass range
//! PostgreSQL leaves to implementations (`23Lxx`): clients that only look at the class see a
//! refused write, clients that look closer see which rule refused it. The others are
//! PostgreSQL's standard codes, used with their standard meaning.

/// A SQLSTATE as its five characters.
pub type SqlState = [u8; 5];

// The rules (see [`crate::refusal`]).
pub const DATA_BARRIER: SqlState = *b"23L01";
pub const UNTRUSTED_TO_IRREVERSIBLE: SqlState = *b"23L02";
pub const APPROVAL_REQUIRED: SqlState = *b"23L03";
pub const UNKNOWN_TOOL: SqlState = *b"23L04";
pub const SEALED: SqlState = *b"23L05";

// PostgreSQL's standard codes.
pub const INVALID_TEXT_REPRESENTATION: SqlState = *b"22P02";
pub const INVALID_BINARY_REPRESENTATION: SqlState = *b"22P03";
pub const INVALID_PARAMETER_VALUE: SqlState = *b"22023";
pub const CHARACTER_NOT_IN_REPERTOIRE: SqlState = *b"22021";
pub const NULL_VALUE_NOT_ALLOWED: SqlState = *b"22004";
pub const NOT_NULL_VIOLATION: SqlState = *b"23502";
pub const FOREIGN_KEY_VIOLATION: SqlState = *b"23503";
pub const UNIQUE_VIOLATION: SqlState = *b"23505";
pub const CHECK_VIOLATION: SqlState = *b"23514";
pub const INVALID_TRANSACTION_STATE: SqlState = *b"25000";
pub const TRIGGERED_DATA_CHANGE_VIOLATION: SqlState = *b"27000";
pub const GENERATED_ALWAYS: SqlState = *b"428C9";
pub const DATATYPE_MISMATCH: SqlState = *b"42804";
pub const UNDEFINED_COLUMN: SqlState = *b"42703";
pub const INSUFFICIENT_PRIVILEGE: SqlState = *b"42501";
pub const SERIALIZATION_FAILURE: SqlState = *b"40001";
pub const TRIGGER_PROTOCOL_VIOLATED: SqlState = *b"39P01";
pub const PROGRAM_LIMIT_EXCEEDED: SqlState = *b"54000";
pub const OUT_OF_MEMORY: SqlState = *b"53200";
pub const NOT_IN_PREREQUISITE_STATE: SqlState = *b"55000";
pub const OBJECT_IN_USE: SqlState = *b"55006";
pub const LOCK_NOT_AVAILABLE: SqlState = *b"55P03";
pub const DEPENDENT_OBJECTS_STILL_EXIST: SqlState = *b"2BP01";
pub const FEATURE_NOT_SUPPORTED: SqlState = *b"0A000";
pub const DATA_CORRUPTED: SqlState = *b"XX001";
/// A bug of pg_labels (a Rust panic): never raised by design, so the tests look for it.
pub const INTERNAL_ERROR: SqlState = *b"XX000";

/// The text form of a SQLSTATE.
pub fn text(s: &SqlState) -> &str {
    std::str::from_utf8(s).unwrap_or("?????")
}
