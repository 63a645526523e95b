//! SQL type `labelset`: I/O, casts, comparison, set operators, the barrier operator and
//! functions.

use crate::pg::datum::{bytes_array_datum, BuiltinArgs, Jsonb};
use crate::pg::error::{self, Error};
use crate::pg::fmgr::*;
use crate::sql_function;
use crate::types::datum::*;
use pg_labels_core::{label, labelset, scope, Problem};

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
    fn pgl_labelset_in(call) { labelset_datum(&parse_labelset(call.cstring(0))?) }

    fn pgl_labelset_out(call) {
        let set = call.labelset(0)?;
        let mut out = result_buffer(set.text_len())?;
        set.write_text(&mut out);
        ret_cstring(&out)
    }

    /// Binary input: version byte, then the text form (validated like text input).
    fn pgl_labelset_recv(call) {
        let body = crate::types::scope::recv_text(call.recv_message(0), "labelset", labelset::parse)?;
        labelset_datum(&body)
    }

    fn pgl_labelset_send(call) {
        let mut out = vec![FORMAT_VERSION];
        call.labelset(0)?.write_text(&mut out);
        ret_bytes(&out)
    }

    fn pgl_labelset_from_text(call) { labelset_datum(&parse_labelset(call.bytes(0))?) }

    fn pgl_labelset_to_text(call) {
        let mut out = Vec::new();
        call.labelset(0)?.write_text(&mut out);
        ret_bytes(&out)
    }

    /// `labelset(text[])`: each element one label; NULL elements are refused.
    fn pgl_labelset_from_text_array(call) {
        let elems = call.text_array(0);
        let mut entries = Vec::with_capacity(elems.len());
        for (i, e) in elems.into_iter().enumerate() {
            let Some(e) = e else {
                return Err(Error::new(error::NULL_VALUE_NOT_ALLOWED, "a labelset cannot hold NULL")
                    .detail(format!("Element {} of the array is NULL.", i + 1)));
            };
            entries.push(parse_element(e)?);
        }
        labelset_datum(&labelset::from_entries(entries))
    }

    /// `text[](labelset)`: the labels in canonical order.
    fn pgl_labelset_to_text_array(call) {
        let set = call.labelset(0)?;
        let labels: Vec<Vec<u8>> = set.iter().map(|l| {
            let mut buf = Vec::new();
            l.write_text(&mut buf);
            buf
        }).collect();
        bytes_array_datum(&labels)
    }

    /// `labelset(jsonb)`: a JSON array of label strings.
    fn pgl_labelset_from_jsonb(call) {
        let text = call.jsonb(0).text();
        let not_array = || Error::new(error::INVALID_PARAMETER_VALUE, "a labelset is built from a JSON array of strings")
            .detail(format!("Got {}.", error::capped(&text, 200)));
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|_| not_array())?;
        let serde_json::Value::Array(items) = value else { return Err(not_array()) };
        let mut entries = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let serde_json::Value::String(s) = item else {
                return Err(not_array().detail(format!("Element {} is {item}, not a string.", i + 1)));
            };
            entries.push(parse_element(s.as_bytes())?);
        }
        labelset_datum(&labelset::from_entries(entries))
    }

    /// `jsonb(labelset)`: a JSON array of the labels (no label needs JSON escaping).
    fn pgl_labelset_to_jsonb(call) {
        let set = call.labelset(0)?;
        // `{a,b}` becomes `["a", "b"]` and a NUL: three more bytes per label and two more
        let mut out = result_buffer(set.text_len() + 3 * set.len() + 2)?;
        out.push(b'[');
        for (i, l) in set.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            out.push(b'"');
            l.write_text(&mut out);
            out.push(b'"');
        }
        out.extend_from_slice(b"]\0");
        Ok(Jsonb::from_nul_terminated(&out)?.0)
    }

    fn pgl_labelset_eq(call) { ret_bool(call.labelset(0)? == call.labelset(1)?) }
    fn pgl_labelset_ne(call) { ret_bool(call.labelset(0)? != call.labelset(1)?) }
    fn pgl_labelset_lt(call) { ret_bool(call.labelset(0)? < call.labelset(1)?) }
    fn pgl_labelset_le(call) { ret_bool(call.labelset(0)? <= call.labelset(1)?) }
    fn pgl_labelset_gt(call) { ret_bool(call.labelset(0)? > call.labelset(1)?) }
    fn pgl_labelset_ge(call) { ret_bool(call.labelset(0)? >= call.labelset(1)?) }

    /// btree support 1: element-by-element order (byte order of the bodies).
    fn pgl_labelset_cmp(call) {
        ret_i32(call.labelset(0)?.body().cmp(call.labelset(1)?.body()) as i32)
    }

    fn pgl_labelset_hash(call) { Ok(hash(call.labelset(0)?.body())) }

    fn pgl_labelset_hash_extended(call) {
        Ok(hash_extended(call.labelset(0)?.body(), call.datum(1).value() as u64))
    }

    /// `a @> b`
    fn pgl_labelset_contains(call) { ret_bool(call.labelset(0)?.is_superset(call.labelset(1)?)) }

    /// `a <@ b`
    fn pgl_labelset_contained(call) { ret_bool(call.labelset(1)?.is_superset(call.labelset(0)?)) }

    /// `a && b`
    fn pgl_labelset_overlaps(call) { ret_bool(call.labelset(0)?.overlaps(call.labelset(1)?)) }

    /// `a ? 'label'`: like jsonb's `?`, a string that is not a label is simply not present.
    fn pgl_labelset_has(call) {
        let set = call.labelset(0)?;
        ret_bool(match label::parse(call.bytes(1)) {
            Ok(entry) => set.contains(&entry),
            Err(_) => false,
        })
    }

    /// `a || b`, also the transition and combine function of `labelset_union`.
    fn pgl_labelset_union(call) {
        // SAFETY: argument 0 is a labelset (a varlena); packed() hands back one readable in
        // place, which we may return as is.
        let first = unsafe { packed(call.datum(0).cast_mut_ptr()) };
        // SAFETY: as above: a readable labelset varlena, alive for the call.
        let (a, b) = (labelset_from_bytes(unsafe { varlena_bytes(first) })?, call.labelset(1)?);
        if b.is_empty() || a == b || a.is_superset(b) {
            // nothing new: hand back the first argument, so an aggregate's state is not
            // rebuilt for every row that brings no new label
            return Ok(crate::pg::sys::Datum::from(first));
        }
        labelset_datum(&a.union(b))
    }

    /// `scope @> labelset`: the barrier rule.
    fn pgl_scope_carries(call) {
        ret_bool(call.labelset(1)?.carried_by(call.scope(0)?))
    }

    /// `labelset <@ scope`
    fn pgl_labelset_within(call) {
        ret_bool(call.labelset(0)?.carried_by(call.scope(1)?))
    }

    /// `labelset_scope(labelset) → scope`: the deepest scope that can carry the set.
    fn pgl_labelset_scope(call) {
        match call.labelset(0)?.scope() {
            Some(p) => scope_datum(p),
            None => call.null(),
        }
    }

    fn pgl_labelset_escaping(call) {
        labelset_datum(&call.labelset(0)?.escaping(call.scope(1)?))
    }

    fn pgl_labelset_origins(call) { labelset_datum(&call.labelset(0)?.origins()) }

    fn pgl_labelset_is_trusted(call) { ret_bool(call.labelset(0)?.is_trusted()) }

    fn pgl_labelset_count(call) { ret_i32(call.labelset(0)?.len() as i32) }

    /// `labelset(scope)`: the set holding the scope's own label.
    fn pgl_scope_labels(call) {
        let entry = pg_labels_core::label::of_scope(call.scope(0)?);
        labelset_datum(&labelset::from_entries(vec![entry]))
    }
}
