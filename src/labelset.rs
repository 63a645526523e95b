//! SQL type `labelset`: I/O, casts, comparison, set operators, the barrier operator and
//! functions.

use crate::error::{self, Error};
use crate::fmgr::*;
use crate::sql_function;
use pg_labels_core::{label, labelset, scope, Problem};
use pgrx::pg_sys;

// jsonb's own I/O functions, called through fmgr (DirectFunctionCall1) like any V1 function.
unsafe extern "C-unwind" {
    fn jsonb_in(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn jsonb_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// Parse labelset text, with a hint when it is a scope read as a labelset (an untyped literal
/// on the right of `labelset <@` is taken to be a labelset).
fn parse_labelset(text: &[u8]) -> error::Result<Vec<u8>> {
    labelset::parse(text).map_err(|e| {
        let err = Error::invalid_text("labelset", text, &e);
        if e.problem == Problem::MissingOpenBrace && scope::parse(text).is_ok() {
            err.hint("This looks like a scope: cast it, as in labels <@ 'acme'::scope.")
        } else {
            err
        }
    })
}

/// Parse one element of a `text[]` or `jsonb` array as a label.
fn parse_element(text: &[u8]) -> error::Result<Vec<u8>> {
    label::parse(text).map_err(|e| {
        Error::invalid_text("labelset", text, &e).message(format!(
            "invalid label in array for type labelset: \"{}\"",
            String::from_utf8_lossy(text)
        ))
    })
}

sql_function! {
    fn pgl_labelset_in(fc) { ret_labelset(&parse_labelset(arg_cstring(fc, 0))?) }

    fn pgl_labelset_out(fc) {
        let mut out = Vec::new();
        arg_labelset(fc, 0)?.write_text(&mut out);
        ret_cstring(&out)
    }

    /// Binary input: version byte, then the text form (validated like text input).
    fn pgl_labelset_recv(fc) {
        let body = crate::scope::recv_text(fc, "labelset", labelset::parse)?;
        ret_labelset(&body)
    }

    fn pgl_labelset_send(fc) {
        let mut out = vec![FORMAT_VERSION];
        arg_labelset(fc, 0)?.write_text(&mut out);
        ret_bytes(&out)
    }

    fn pgl_labelset_from_text(fc) { ret_labelset(&parse_labelset(arg_varlena(fc, 0))?) }

    fn pgl_labelset_to_text(fc) {
        let mut out = Vec::new();
        arg_labelset(fc, 0)?.write_text(&mut out);
        ret_bytes(&out)
    }

    /// `labelset(text[])`: each element one label; NULL elements are refused.
    fn pgl_labelset_from_text_array(fc) {
        let arr = pg_sys::pg_detoast_datum(arg(fc, 0).cast_mut_ptr()) as *mut pg_sys::ArrayType;
        let mut elems: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut nulls: *mut bool = std::ptr::null_mut();
        let mut n: i32 = 0;
        pg_sys::deconstruct_array(arr, pg_sys::TEXTOID, -1, false, pg_sys::TYPALIGN_INT as _, &mut elems, &mut nulls, &mut n);
        let mut entries = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            if *nulls.add(i) {
                return Err(Error::new(error::NULL_VALUE_NOT_ALLOWED, "a labelset cannot hold NULL")
                    .detail(format!("Element {} of the array is NULL.", i + 1)));
            }
            entries.push(parse_element(varlena_bytes((*elems.add(i)).cast_mut_ptr()))?);
        }
        ret_labelset(&labelset::from_entries(entries))
    }

    /// `text[](labelset)`: the labels in canonical order.
    fn pgl_labelset_to_text_array(fc) {
        let set = arg_labelset(fc, 0)?;
        let mut datums: Vec<pg_sys::Datum> = Vec::new();
        let mut buf = Vec::new();
        for l in set.iter() {
            buf.clear();
            l.write_text(&mut buf);
            datums.push(ret_bytes(&buf)?);
        }
        let arr = pg_sys::construct_array(datums.as_mut_ptr(), datums.len() as i32, pg_sys::TEXTOID, -1, false, pg_sys::TYPALIGN_INT as _);
        Ok(pg_sys::Datum::from(arr))
    }

    /// `labelset(jsonb)`: a JSON array of label strings.
    fn pgl_labelset_from_jsonb(fc) {
        let text = pg_sys::DirectFunctionCall1Coll(Some(jsonb_out), pg_sys::InvalidOid, arg(fc, 0));
        let text = std::ffi::CStr::from_ptr(text.cast_mut_ptr::<std::ffi::c_char>()).to_bytes();
        let not_array = || Error::new(error::INVALID_PARAMETER_VALUE, "a labelset is built from a JSON array of strings")
            .detail(format!("Got {}.", String::from_utf8_lossy(&text[..text.len().min(200)])));
        let value: serde_json::Value = serde_json::from_slice(text).map_err(|_| not_array())?;
        let serde_json::Value::Array(items) = value else { return Err(not_array()) };
        let mut entries = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let serde_json::Value::String(s) = item else {
                return Err(not_array().detail(format!("Element {} is {item}, not a string.", i + 1)));
            };
            entries.push(parse_element(s.as_bytes())?);
        }
        ret_labelset(&labelset::from_entries(entries))
    }

    /// `jsonb(labelset)`: a JSON array of the labels (no label needs JSON escaping).
    fn pgl_labelset_to_jsonb(fc) {
        let set = arg_labelset(fc, 0)?;
        let mut out = Vec::from(&b"["[..]);
        for (i, l) in set.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            out.push(b'"');
            l.write_text(&mut out);
            out.push(b'"');
        }
        out.extend_from_slice(b"]");
        let cstr = ret_cstring(&out)?;
        Ok(pg_sys::DirectFunctionCall1Coll(Some(jsonb_in), pg_sys::InvalidOid, cstr))
    }

    fn pgl_labelset_eq(fc) { ret_bool(arg_labelset(fc, 0)? == arg_labelset(fc, 1)?) }
    fn pgl_labelset_ne(fc) { ret_bool(arg_labelset(fc, 0)? != arg_labelset(fc, 1)?) }
    fn pgl_labelset_lt(fc) { ret_bool(arg_labelset(fc, 0)? < arg_labelset(fc, 1)?) }
    fn pgl_labelset_le(fc) { ret_bool(arg_labelset(fc, 0)? <= arg_labelset(fc, 1)?) }
    fn pgl_labelset_gt(fc) { ret_bool(arg_labelset(fc, 0)? > arg_labelset(fc, 1)?) }
    fn pgl_labelset_ge(fc) { ret_bool(arg_labelset(fc, 0)? >= arg_labelset(fc, 1)?) }

    /// btree support 1: element-by-element order (byte order of the bodies).
    fn pgl_labelset_cmp(fc) {
        ret_i32(arg_labelset(fc, 0)?.body().cmp(arg_labelset(fc, 1)?.body()) as i32)
    }

    fn pgl_labelset_hash(fc) { Ok(hash(arg_labelset(fc, 0)?.body())) }

    fn pgl_labelset_hash_extended(fc) {
        Ok(hash_extended(arg_labelset(fc, 0)?.body(), arg(fc, 1).value() as u64))
    }

    /// `a @> b`
    fn pgl_labelset_contains(fc) { ret_bool(arg_labelset(fc, 0)?.is_superset(arg_labelset(fc, 1)?)) }

    /// `a <@ b`
    fn pgl_labelset_contained(fc) { ret_bool(arg_labelset(fc, 1)?.is_superset(arg_labelset(fc, 0)?)) }

    /// `a && b`
    fn pgl_labelset_overlaps(fc) { ret_bool(arg_labelset(fc, 0)?.overlaps(arg_labelset(fc, 1)?)) }

    /// `a ? 'label'`: like jsonb's `?`, a string that is not a label is simply not present.
    fn pgl_labelset_has(fc) {
        let set = arg_labelset(fc, 0)?;
        ret_bool(match label::parse(arg_varlena(fc, 1)) {
            Ok(entry) => set.contains(&entry),
            Err(_) => false,
        })
    }

    /// `a || b`, also the transition and combine function of `labelset_union`.
    fn pgl_labelset_union(fc) {
        let first = packed(arg(fc, 0).cast_mut_ptr());
        let (a, b) = (datum_labelset(pg_sys::Datum::from(first))?, arg_labelset(fc, 1)?);
        if b.is_empty() || a == b || a.is_superset(b) {
            // nothing new: hand back the first argument, so an aggregate's state is not
            // rebuilt for every row that brings no new label
            return Ok(pg_sys::Datum::from(first));
        }
        ret_labelset(&a.union(b))
    }

    /// `scope @> labelset`: the barrier rule.
    fn pgl_scope_carries(fc) {
        ret_bool(arg_labelset(fc, 1)?.carried_by(arg_scope(fc, 0)?))
    }

    /// `labelset <@ scope`
    fn pgl_labelset_within(fc) {
        ret_bool(arg_labelset(fc, 0)?.carried_by(arg_scope(fc, 1)?))
    }

    /// `labelset_scope(labelset) → scope`: the deepest scope that can carry the set.
    fn pgl_labelset_scope(fc) {
        match arg_labelset(fc, 0)?.scope() {
            Some(p) => ret_scope(p),
            None => ret_null(fc),
        }
    }

    fn pgl_labelset_escaping(fc) {
        ret_labelset(&arg_labelset(fc, 0)?.escaping(arg_scope(fc, 1)?))
    }

    fn pgl_labelset_origins(fc) { ret_labelset(&arg_labelset(fc, 0)?.origins()) }

    fn pgl_labelset_is_trusted(fc) { ret_bool(arg_labelset(fc, 0)?.is_trusted()) }

    fn pgl_labelset_count(fc) { ret_i32(arg_labelset(fc, 0)?.len() as i32) }

    /// `labelset(scope)`: the set holding the scope's own label.
    fn pgl_scope_labels(fc) {
        let entry = scope::label_entry(arg_scope(fc, 0)?);
        ret_labelset(&labelset::from_entries(vec![entry]))
    }
}
