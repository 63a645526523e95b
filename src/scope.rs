//! SQL type `scope`: I/O, comparison, containment and functions.

use crate::error::{self, Error};
use crate::fmgr::*;
use crate::sql_function;
use pg_labels_core::{scope, Label};
use pgrx::pg_sys;

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
    fn pgl_scope_in(fc) { ret_scope(&parse_scope(arg_cstring(fc, 0))?) }

    /// `scope_out(scope) → cstring`
    fn pgl_scope_out(fc) {
        let mut out = Vec::new();
        scope::write_text(arg_scope(fc, 0)?, &mut out);
        ret_cstring(&out)
    }

    /// `scope_recv(internal) → scope`: version byte, then the text form.
    fn pgl_scope_recv(fc) {
        let path = recv_text(fc, "scope", scope::parse)?;
        ret_scope(&path)
    }

    /// `scope_send(scope) → bytea`
    fn pgl_scope_send(fc) {
        let mut out = vec![FORMAT_VERSION];
        scope::write_text(arg_scope(fc, 0)?, &mut out);
        ret_bytes(&out)
    }

    /// `scope(text) → scope`
    fn pgl_scope_from_text(fc) { ret_scope(&parse_scope(arg_varlena(fc, 0))?) }

    /// `text(scope) → text`
    fn pgl_scope_to_text(fc) {
        let mut out = Vec::new();
        scope::write_text(arg_scope(fc, 0)?, &mut out);
        ret_bytes(&out)
    }

    fn pgl_scope_eq(fc) { ret_bool(arg_scope(fc, 0)? == arg_scope(fc, 1)?) }
    fn pgl_scope_ne(fc) { ret_bool(arg_scope(fc, 0)? != arg_scope(fc, 1)?) }
    fn pgl_scope_lt(fc) { ret_bool(arg_scope(fc, 0)? < arg_scope(fc, 1)?) }
    fn pgl_scope_le(fc) { ret_bool(arg_scope(fc, 0)? <= arg_scope(fc, 1)?) }
    fn pgl_scope_gt(fc) { ret_bool(arg_scope(fc, 0)? > arg_scope(fc, 1)?) }
    fn pgl_scope_ge(fc) { ret_bool(arg_scope(fc, 0)? >= arg_scope(fc, 1)?) }

    /// btree support 1
    fn pgl_scope_cmp(fc) {
        ret_i32(scope::cmp(arg_scope(fc, 0)?, arg_scope(fc, 1)?) as i32)
    }

    /// hash support 1
    fn pgl_scope_hash(fc) { Ok(hash(arg_scope(fc, 0)?)) }

    /// hash support 2
    fn pgl_scope_hash_extended(fc) {
        Ok(hash_extended(arg_scope(fc, 0)?, arg(fc, 1).value() as u64))
    }

    /// `a @> b`: a is b or an ancestor of b.
    fn pgl_scope_contains(fc) {
        ret_bool(scope::reaches(arg_scope(fc, 0)?, arg_scope(fc, 1)?))
    }

    /// `a <@ b`: a is b or a descendant of b.
    fn pgl_scope_contained(fc) {
        ret_bool(scope::reaches(arg_scope(fc, 1)?, arg_scope(fc, 0)?))
    }

    fn pgl_scope_depth(fc) { ret_i32(scope::depth(arg_scope(fc, 0)?) as i32) }

    fn pgl_scope_parent(fc) {
        match scope::parent(arg_scope(fc, 0)?) {
            Some(p) => ret_scope(p),
            None => ret_null(fc),
        }
    }

    fn pgl_scope_lca(fc) { ret_scope(scope::lca(arg_scope(fc, 0)?, arg_scope(fc, 1)?)) }

    /// `scope_label(scope) → text`: the label naming the scope's data.
    fn pgl_scope_label(fc) {
        let entry = scope::label_entry(arg_scope(fc, 0)?);
        let mut out = Vec::new();
        Label(&entry).write_text(&mut out);
        ret_bytes(&out)
    }

    /// Planner support of `scope <@ scope`: turns `col <@ const` into the btree range
    /// `col >= const AND col < upper(const)` (see `scope::subtree_upper`).
    fn pgl_scope_contained_support(fc) {
        crate::scope_support::index_condition(arg(fc, 0), 0)
    }

    /// Planner support of `scope @> scope`: the same for `const @> col`.
    fn pgl_scope_contains_support(fc) {
        crate::scope_support::index_condition(arg(fc, 0), 1)
    }
}

/// Read a binary message: the version byte, then the text form, validated by `parse`.
pub(crate) unsafe fn recv_text(
    fc: pg_sys::FunctionCallInfo,
    type_name: &str,
    parse: impl Fn(&[u8]) -> Result<Vec<u8>, pg_labels_core::ParseError>,
) -> error::Result<Vec<u8>> {
    unsafe {
        let buf = arg(fc, 0).cast_mut_ptr::<pg_sys::StringInfoData>();
        let (data, len, cursor) = ((*buf).data as *const u8, (*buf).len, (*buf).cursor);
        let msg = std::slice::from_raw_parts(data.add(cursor as usize), (len - cursor) as usize);
        (*buf).cursor = len;
        match msg.split_first() {
            Some((&FORMAT_VERSION, text)) => parse(text).map_err(|e| {
                Error::invalid_text(type_name, text, &e)
                    .sqlstate(error::INVALID_BINARY_REPRESENTATION)
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
}
