//! The one error type of the extension and the one place it becomes a PostgreSQL `ERROR`.
//!
//! Every SQL-callable function returns `Result<Datum, Error>` (see [`crate::pg::fmgr`]). An `Err`
//! is raised by [`raise`] *after* the guarded Rust body has returned and dropped everything it
//! owned, so the `ereport` longjmp crosses only plain frames. Going through `errstart` /
//! `errfinish` ourselves (rather than pgrx's `ErrorReport`, whose SQLSTATE enum is closed and
//! which has no constraint-name field) lets a refusal carry any SQLSTATE, a DETAIL, a HINT and
//! the rule name in the error's constraint-name field.
//!
//! Errors raised by PostgreSQL itself inside a body (out of memory, an SPI failure) pass through
//! pgrx's guard unchanged in SQLSTATE, message, detail and hint.

use pg_labels_core::ParseError;
use std::ffi::{c_char, c_int};

pub use pg_labels_core::sqlstate::*;

/// An error on its way to the client. Boxed, so that a function's `Result<Datum>` is two
/// words and the success path of an operator moves nothing else around.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorData>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorData {
    pub sqlstate: SqlState,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Goes to the error's constraint-name field (`PG_DIAG_CONSTRAINT_NAME`).
    pub constraint: Option<String>,
    /// Schema and table, for the error's schema- and table-name fields.
    pub table: Option<(String, String)>,
    /// Raised by PostgreSQL itself (caught and carried on), not made by pg_labels: its DETAIL
    /// may hold row contents (see [`Error::for_caller`]).
    pub by_postgres: bool,
    /// A refusal of pg_labels' rules or checks (made from a `Refusal`).
    pub refusal: bool,
    /// Caught from a nested call (a statement the function ran, a trigger it fired), not made
    /// by the function that raises it now.
    pub nested: bool,
}

pub type Result<T> = std::result::Result<T, Error>;

/// Longest part of a bad literal quoted back in a message.
const QUOTE_LIMIT: usize = 200;

/// Longest message, DETAIL or HINT sent to a client, in bytes: a run carrying 100,000 labels
/// must not produce a megabyte of error text. Longer texts are cut and say so.
pub const TEXT_LIMIT: usize = 4000;

/// `s`, cut to at most `limit` bytes at a character boundary, saying how much was cut.
pub fn capped(s: &str, limit: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= limit {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}... ({} more bytes cut)",
        &s[..end],
        s.len() - end
    ))
}

impl Error {
    pub fn new(sqlstate: SqlState, message: impl Into<String>) -> Self {
        Error(Box::new(ErrorData {
            sqlstate,
            message: message.into(),
            detail: None,
            hint: None,
            constraint: None,
            table: None,
            by_postgres: false,
            refusal: false,
            nested: false,
        }))
    }

    pub fn sqlstate(mut self, sqlstate: SqlState) -> Self {
        self.0.sqlstate = sqlstate;
        self
    }

    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.0.message = message.into();
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.0.detail = Some(detail.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.0.hint = Some(hint.into());
        self
    }

    pub fn constraint(mut self, name: impl Into<String>) -> Self {
        self.0.constraint = Some(name.into());
        self
    }

    pub fn table(mut self, schema: &str, table: &str) -> Self {
        self.0.table = Some((schema.to_string(), table.to_string()));
        self
    }

    /// `invalid input syntax for type T: "..."` (22P02) with the parser's finding as DETAIL.
    pub fn invalid_text(type_name: &str, input: &[u8], e: &ParseError) -> Self {
        Error::new(
            INVALID_TEXT_REPRESENTATION,
            format!(
                "invalid input syntax for type {type_name}: \"{}\"",
                quote(input)
            ),
        )
        .detail(e.to_string())
    }

    /// Caught from a nested call (see [`ErrorData::nested`]).
    pub fn caught_nested(mut self) -> Self {
        self.0.nested = true;
        self
    }

    /// The error's parts, to record it.
    pub fn data(&self) -> &ErrorData {
        &self.0
    }

    /// Is it of this SQLSTATE?
    pub fn is_sqlstate(&self, sqlstate: SqlState) -> bool {
        self.0.sqlstate == sqlstate
    }

    /// Mark an error as raised by PostgreSQL itself (see [`ErrorData::by_postgres`]).
    pub fn raised_by_postgres(mut self) -> Self {
        self.0.by_postgres = true;
        self
    }

    /// The error as a caller of the extension's functions may see it. What pg_labels made says
    /// only what its caller may know. PostgreSQL's own errors, raised inside a statement the
    /// extension ran (often as the tables' owner), may describe rows the caller cannot read:
    /// a DETAIL that names a row or a key ("Failing row contains (...)", "Key (...)=(...)",
    /// "Partition key of the failing row contains (...)") goes, and a data exception of
    /// PostgreSQL's whose message quotes a value gets pg_labels' own. Its SQLSTATE, HINT,
    /// constraint and table stay, and so does every other DETAIL (a deadlock's, a lock's).
    /// Applied to every error the extension raises ([`raise`]), so that it holds whichever way
    /// an error came (caught whole, through pgrx's guard, or from another node through Citus,
    /// where an error of pg_labels' own arrives re-raised by Citus).
    pub fn for_caller(mut self) -> Error {
        if self.0.detail.as_deref().is_some_and(names_a_row) {
            self.0.detail = None;
        }
        if self.0.by_postgres && &self.0.sqlstate[..2] == b"22" && self.0.message.contains(": \"") {
            self.0.message = format!(
                "pg_labels: a value read by one of its statements is not valid (SQLSTATE {})",
                String::from_utf8_lossy(&self.0.sqlstate)
            );
        }
        self
    }

    /// A datum that does not start with a known version byte, or is otherwise damaged.
    pub fn corrupt(type_name: &str) -> Self {
        Error::new(
            DATA_CORRUPTED,
            format!("{type_name} datum is damaged or of an unknown format version"),
        )
        .hint("The value was not written by this version of pg_labels; update the extension or restore the data.")
    }
}

impl From<pg_labels_core::refusal::Refusal> for Error {
    fn from(r: pg_labels_core::refusal::Refusal) -> Error {
        Error(Box::new(ErrorData {
            sqlstate: r.sqlstate,
            message: r.message,
            detail: r.detail,
            hint: r.hint,
            constraint: r.constraint.map(str::to_string),
            table: r.table.map(|t| ("pg_labels".to_string(), t.to_string())),
            by_postgres: false,
            refusal: true,
            nested: false,
        }))
    }
}

/// Does a DETAIL of PostgreSQL's name a row or a key's values?
fn names_a_row(detail: &str) -> bool {
    const ROW: [&str; 4] = [
        "Failing row contains",
        "Partition key of the failing row contains",
        "Key (",
        "Key values",
    ];
    ROW.iter().any(|r| detail.contains(r))
}

/// Quote (part of) an input for a message.
fn quote(input: &[u8]) -> String {
    let s = String::from_utf8_lossy(input);
    if s.chars().count() <= QUOTE_LIMIT {
        s.into_owned()
    } else {
        let mut t: String = s.chars().take(QUOTE_LIMIT).collect();
        t.push_str("...");
        t
    }
}

fn make_sqlstate(s: SqlState) -> c_int {
    // MAKE_SQLSTATE: six bits per character, first character lowest.
    s.iter()
        .enumerate()
        .map(|(i, &c)| (((c as c_int) - ('0' as c_int)) & 0x3F) << (6 * i))
        .sum()
}

// Declared here, not taken from pg_sys: these must not be wrapped in pgrx's FFI guard, which
// would catch the longjmp and re-raise it through pgrx's closed SQLSTATE enum.
unsafe extern "C-unwind" {
    fn errstart(elevel: c_int, domain: *const c_char) -> bool;
    fn errfinish(filename: *const c_char, lineno: c_int, funcname: *const c_char);
    fn errcode(sqlerrcode: c_int) -> c_int;
    fn errmsg(fmt: *const c_char, ...) -> c_int;
    fn errdetail(fmt: *const c_char, ...) -> c_int;
    fn errhint(fmt: *const c_char, ...) -> c_int;
    fn err_generic_string(field: c_int, str_: *const c_char) -> c_int;
    fn errhidestmt(hide_stmt: bool) -> c_int;
    fn errhidecontext(hide_ctx: bool) -> c_int;
}

/// Copy a string into palloc'd, NUL-terminated memory (interior NULs become `?`).
///
/// # Safety
/// Needs a current memory context (any backend code has one).
unsafe fn pstr(s: &str) -> *mut c_char {
    // SAFETY: palloc returns len + 1 writable bytes (or raises).
    unsafe {
        let p = pgrx::pg_sys::palloc(s.len() + 1) as *mut u8;
        for (i, b) in s.bytes().enumerate() {
            *p.add(i) = if b == 0 { b'?' } else { b };
        }
        *p.add(s.len()) = 0;
        p as *mut c_char
    }
}

/// Raise `e` as a PostgreSQL `ERROR`. Never returns.
///
/// # Safety
/// Call only from the outermost frame of an `extern "C-unwind"` function, outside any pgrx
/// guard, with no live value that needs dropping: `errfinish` longjmps straight out.
pub unsafe fn raise(e: Error) -> ! {
    // SAFETY: the caller's guarantee: nothing to drop is live above us, so the longjmp out of
    // errfinish skips no destructor; every string is copied to palloc'd memory first.
    unsafe {
        let e = e.for_caller().0;
        let code = make_sqlstate(e.sqlstate);
        let message = pstr(&capped(&e.message, TEXT_LIMIT));
        let detail = e.detail.as_deref().map(|d| pstr(&capped(d, TEXT_LIMIT)));
        let hint = e.hint.as_deref().map(|h| pstr(&capped(h, TEXT_LIMIT)));
        let constraint = e.constraint.as_deref().map(|c| pstr(c));
        let table = e.table.as_ref().map(|(s, t)| (pstr(s), pstr(t)));
        drop(e);
        const ERROR: c_int = pgrx::pg_sys::PGERROR as c_int;
        const PERCENT_S: &std::ffi::CStr = c"%s";
        if errstart(ERROR, std::ptr::null()) {
            errcode(code);
            errmsg(PERCENT_S.as_ptr(), message);
            if let Some(d) = detail {
                errdetail(PERCENT_S.as_ptr(), d);
            }
            if let Some(h) = hint {
                errhint(PERCENT_S.as_ptr(), h);
            }
            if let Some(c) = constraint {
                err_generic_string(pgrx::pg_sys::PG_DIAG_CONSTRAINT_NAME as c_int, c);
            }
            if let Some((s, t)) = table {
                err_generic_string(pgrx::pg_sys::PG_DIAG_SCHEMA_NAME as c_int, s);
                err_generic_string(pgrx::pg_sys::PG_DIAG_TABLE_NAME as c_int, t);
            }
            // No source location: there is no C file and line to point at, and a Rust one is
            // no use to a user (VERBOSE output simply has no LOCATION line).
            errfinish(std::ptr::null(), 0, std::ptr::null());
        }
        // errstart(ERROR) always returns true and errfinish(ERROR) never returns.
        std::process::abort()
    }
}

/// Run `f`, with a PostgreSQL ERROR raised inside it (or a panic) made an `Err` as at a
/// function's boundary ([`from_panic`]): for what must go on after a failure (a callback at
/// the end of a transaction or of the process, a record's queue made while a refusal is being
/// raised).
pub fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| Err(from_panic(p)))
}

/// The error a panic caught at a function's boundary becomes. A PostgreSQL ERROR raised inside
/// a call pgrx guards arrives as a panic carrying it (as does pgrx's own `ereport`): it keeps
/// its SQLSTATE, message, DETAIL and HINT, and nothing else (pgrx would add a Rust backtrace to
/// its DETAIL and name a Rust file as its location). A Rust panic is a bug of pg_labels:
/// `XX000` with its message; where it happened goes to the server log only.
pub fn from_panic(payload: Box<dyn std::any::Any + Send>) -> Error {
    use pgrx::pg_sys::panic::{CaughtError, ErrorReport, ErrorReportWithLevel};
    let code = |c: pgrx::PgSqlErrorCode| -> SqlState {
        let n = c as isize;
        let mut code = [0u8; 5];
        for (i, ch) in code.iter_mut().enumerate() {
            *ch = (((n >> (6 * i)) & 0x3F) as u8) + b'0';
        }
        code
    };
    let reported = |r: &ErrorReportWithLevel| -> Error {
        let mut e = Error::new(code(r.sql_error_code()), r.message());
        if let Some(d) = r.detail() {
            e = e.detail(d);
        }
        if let Some(h) = r.hint() {
            e = e.hint(h);
        }
        e.raised_by_postgres()
    };
    let payload = match payload.downcast::<CaughtError>() {
        Ok(caught) => match *caught {
            CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => return reported(&r),
            CaughtError::RustPanic { ereport, .. } => return internal(ereport.message()),
        },
        Err(other) => other,
    };
    let payload = match payload.downcast::<ErrorReportWithLevel>() {
        Ok(r) => return reported(&r),
        Err(other) => other,
    };
    let payload = match payload.downcast::<ErrorReport>() {
        Ok(r) => return internal(r.message()),
        Err(other) => other,
    };
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string());
    internal(&message)
}

/// A bug of pg_labels: `XX000` to the client, where it happened to the server log only.
fn internal(message: &str) -> Error {
    let location = PANIC_LOCATION
        .with(|l| l.borrow_mut().take())
        .unwrap_or_else(|| "an unknown place".to_string());
    log_server_only(&format!(
        "pg_labels: internal error at {location}: {message}"
    ));
    Error::new(
        INTERNAL_ERROR,
        format!("pg_labels: internal error: {message}"),
    )
}

std::thread_local! {
    /// Where the last panic of this backend happened (see [`init_panic_location`]).
    static PANIC_LOCATION: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Called from `_PG_init`: a panic hook around pgrx's that notes where a panic happened, for
/// the server log (pgrx keeps it to itself).
pub fn init_panic_location() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        PANIC_LOCATION.with(|l| *l.borrow_mut() = at);
        previous(info);
    }));
}

/// Write a line to the server log, never to a client (`LOG_SERVER_ONLY`).
pub fn log_server_only(message: &str) {
    log_at(pgrx::pg_sys::LOG_SERVER_ONLY as c_int, message);
}

/// Write a line to the server log (`LOG`: a client sees it only if it asked for log lines).
pub fn log(message: &str) {
    log_at(pgrx::pg_sys::LOG as c_int, message);
}

/// Write a `WARNING` (to the server log, and to the client).
pub fn warning(message: &str) {
    log_at(pgrx::pg_sys::WARNING as c_int, message);
}

/// Write one line to the server log (`LOG`) with no statement and no context after it: a
/// record meant to be read line by line (by a `jsonlog` shipper, say).
pub fn log_line(message: &str) {
    // SAFETY: as in log_at; errhidestmt/errhidecontext only mark the report being built.
    unsafe {
        let m = pstr(&capped(message, TEXT_LIMIT));
        if errstart(pgrx::pg_sys::LOG as c_int, std::ptr::null()) {
            errmsg(c"%s".as_ptr(), m);
            errhidestmt(true);
            errhidecontext(true);
            errfinish(std::ptr::null(), 0, std::ptr::null());
        }
    }
}

fn log_at(level: c_int, message: &str) {
    // SAFETY: below ERROR, errstart/errfinish return normally; the message is copied to
    // palloc'd memory first and passed through "%s".
    unsafe {
        let m = pstr(&capped(message, TEXT_LIMIT));
        if errstart(level, std::ptr::null()) {
            errmsg(c"%s".as_ptr(), m);
            errfinish(std::ptr::null(), 0, std::ptr::null());
        }
    }
}

/// Send a NOTICE to the client (progress of a long function), with no source location.
pub fn notice(message: &str) {
    log_at(pgrx::pg_sys::NOTICE as c_int, message);
}
