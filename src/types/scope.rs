//! SQL type `scope`: I/O, comparison, containment and functions.

use crate::pg::error::{self, Error};
use crate::pg::fmgr::*;
use crate::sql_function;
use crate::types::datum::*;
use pg_labels_core::{scope, Label};

/// Parse scope text, with a hint when it is a labelset literal read as a scope (an untyped
/// literal on the right of `scope @>` is taken to be a scope).
fn parse_scope(text: &[u8]) -> error::Result<Vec<u8>> {
    scope::parse(text).map_err(|e| {
        let err = Error::invalid_text("scope", text, &e);
        if text.first() == Some(&b'{') {
            err.hint("This looks like a labelset: cast it, as in scope @> '{...}'::labelset.")
        } else {
            err
        }
    })
}

sql_function! {
    /// `scope_in(cstring) → scope`
    fn pgl_scope_in(call) { scope_datum(&parse_scope(call.cstring(0))?) }

    /// `scope_out(scope) → cstring`
    fn pgl_scope_out(call) {
        let mut out = Vec::new();
        scope::write_text(call.scope(0)?, &mut out);
        ret_cstring(&out)
    }

    /// `scope_recv(internal) → scope`: version byte, then the text form.
    fn pgl_scope_recv(call) {
        let path = recv_text(call.recv_message(0), "scope", scope::parse)?;
        scope_datum(&path)
    }

    /// `scope_send(scope) → bytea`
    fn pgl_scope_send(call) {
        let mut out = vec![FORMAT_VERSION];
        scope::write_text(call.scope(0)?, &mut out);
        ret_bytes(&out)
    }

    /// `scope(text) → scope`
    fn pgl_scope_from_text(call) { scope_datum(&parse_scope(call.bytes(0))?) }

    /// `text(scope) → text`
    fn pgl_scope_to_text(call) {
        let mut out = Vec::new();
        scope::write_text(call.scope(0)?, &mut out);
        ret_bytes(&out)
    }

    fn pgl_scope_eq(call) { ret_bool(call.scope(0)? == call.scope(1)?) }
    fn pgl_scope_ne(call) { ret_bool(call.scope(0)? != call.scope(1)?) }
    fn pgl_scope_lt(call) { ret_bool(call.scope(0)? < call.scope(1)?) }
    fn pgl_scope_le(call) { ret_bool(call.scope(0)? <= call.scope(1)?) }
    fn pgl_scope_gt(call) { ret_bool(call.scope(0)? > call.scope(1)?) }
    fn pgl_scope_ge(call) { ret_bool(call.scope(0)? >= call.scope(1)?) }

    /// btree support 1
    fn pgl_scope_cmp(call) {
        ret_i32(scope::cmp(call.scope(0)?, call.scope(1)?) as i32)
    }

    /// hash support 1
    fn pgl_scope_hash(call) { Ok(hash(call.scope(0)?)) }

    /// hash support 2
    fn pgl_scope_hash_extended(call) {
        Ok(hash_extended(call.scope(0)?, call.datum(1).value() as u64))
    }

    /// `a @> b`: a is b or an ancestor of b.
    fn pgl_scope_contains(call) {
        ret_bool(scope::reaches(call.scope(0)?, call.scope(1)?))
    }

    /// `a <@ b`: a is b or a descendant of b.
    fn pgl_scope_contained(call) {
        ret_bool(scope::reaches(call.scope(1)?, call.scope(0)?))
    }

    fn pgl_scope_depth(call) { ret_i32(scope::depth(call.scope(0)?) as i32) }

    fn pgl_scope_parent(call) {
        match scope::parent(call.scope(0)?) {
            Some(p) => scope_datum(p),
            None => call.null(),
        }
    }

    fn pgl_scope_lca(call) { scope_datum(scope::lca(call.scope(0)?, call.scope(1)?)) }

    /// `scope_label(scope) → text`: the label naming the scope's data.
    fn pgl_scope_label(call) {
        let entry = pg_labels_core::label::of_scope(call.scope(0)?);
        let mut out = Vec::new();
        Label(&entry).write_text(&mut out);
        ret_bytes(&out)
    }

    /// Planner support of `scope <@ scope`: turns `col <@ const` into the btree range
    /// `col >= const AND col < upper(const)` (see `scope::subtree_upper`).
    fn pgl_scope_contained_support(call) {
        // SAFETY: the SQL declaration (sql/types.sql) makes this a planner support function.
        unsafe { crate::types::scope_support::index_condition(&call, 0) }
    }

    /// Planner support of `scope @> scope`: the same for `const @> col`.
    fn pgl_scope_contains_support(call) {
        // SAFETY: the SQL declaration (sql/types.sql) makes this a planner support function.
        unsafe { crate::types::scope_support::index_condition(&call, 1) }
    }
}

/// Read a binary message: the version byte, then the text form, validated by `parse`.
pub(crate) fn recv_text(
    message: &[u8],
    type_name: &str,
    parse: impl Fn(&[u8]) -> Result<Vec<u8>, pg_labels_core::ParseError>,
) -> error::Result<Vec<u8>> {
    match message.split_first() {
        Some((&FORMAT_VERSION, text)) => parse(text).map_err(|e| {
            Error::invalid_text(type_name, text, &e).sqlstate(error::INVALID_BINARY_REPRESENTATION)
        }),
        Some((v, _)) => Err(Error::new(
            error::INVALID_BINARY_REPRESENTATION,
            format!("unsupported binary format version {v} for type {type_name}"),
        )),
        None => Err(Error::new(
            error::INVALID_BINARY_REPRESENTATION,
            format!("empty binary message for type {type_name}"),
        )),
    }
}
