//! Proving the trail: every run's hash chain checked again from what is stored
//! (`pg_labels.verify(run)`, `pg_labels.verify_all()`), a ledger digest a DBA keeps outside the
//! database (`pg_labels.ledger_digest()`), the proof that today's trail extends the one a
//! digest described (`pg_labels.verify_digest(digest)`), and an inclusion proof of one step
//! that `pg_labels_verify` checks with no database (`pg_labels.prove(step, digest)`). The
//! chain's rules and encoding are the core's ([`pg_labels_core::chain`]); here they meet the
//! stored rows.
//!
//! Steps are read run by run, in id order, in batches: memory stays bounded whatever the size
//! of a run or of the trail. The functions read as their caller (row-level security applies).

mod chains;
mod check;
mod digest;
mod prove;
mod rows;

use crate::pg::datum::{text_datum, Bytea, Jsonb, Timestamp, Uuid};
use crate::pg::error::{notice, Error, Result, INVALID_PARAMETER_VALUE};
use crate::pg::fmgr::Call;
use crate::pg::role::as_owner;
use crate::pg::spi::{run, with_spi, SavedPlan, Sql};
use crate::pg::srf;
use crate::pg::sys::Datum;
use crate::platform::relations::platform_owner;
use crate::sql_function;
use crate::types::datum::{LabelSetBuf, ScopeBuf};
use check::*;
use digest::*;
use pg_labels_core::chain::{self, from_hex, hex, Break, Hash, Stored, Verifier};
use pg_labels_core::{scope, LabelSet};
use prove::*;
use rows::*;
use serde_json::{json, Value};
use std::fmt::Write as _;

sql_function! {
    /// `pg_labels.verify(run uuid) → TABLE (intact, steps, step, how, detail)`: one row.
    fn pgl_verify(call) {
        let out = srf::materialize(&call, "pg_labels.verify()", 5)?;
        if call.is_null(0) {
            return Ok(Datum::from(0usize));
        }
        let id = crate::pg::datum::uuid_arg(&call, 0);
        let Some(run) = run_row(&id)? else {
            out.push(&[
                Some(Datum::from(false)),
                Some(Datum::from(0i64)),
                None,
                Some(text_datum("removed")?),
                Some(text_datum(&format!("there is no run {id} (or it is not visible to you)"))?),
            ]);
            return Ok(Datum::from(0usize));
        };
        let c = check_run(&run)?;
        out.push(&[
            Some(Datum::from(c.broken.is_none())),
            Some(Datum::from(c.steps)),
            c.broken.as_ref().and_then(|b| b.0).map(Datum::from),
            c.broken.as_ref().map(|b| text_datum(b.1)).transpose()?,
            c.broken.as_ref().map(|b| text_datum(&b.2)).transpose()?,
        ]);
        Ok(Datum::from(0usize))
    }

    /// `pg_labels.verify_all() → TABLE (run, step, how, detail)`: the runs whose chain breaks.
    fn pgl_verify_all(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || verify_all(&call))
    }

    /// `pg_labels.ledger_digest() → jsonb`: the root over every run's head, recorded.
    fn pgl_ledger_digest(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || ledger_digest(&call))
    }

    /// `pg_labels.verify_digest(digest jsonb) → TABLE (holds, run, detail)`.
    fn pgl_verify_digest(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || verify_digest(&call))
    }

    /// `pg_labels.prove(step bigint, digest jsonb) → jsonb`: an inclusion proof of the step
    /// in the ledger the digest describes, for `pg_labels_verify`.
    fn pgl_prove(call) {
        // as the platform tables' owner: the whole trail, whatever the granted role sees
        as_owner(platform_owner()?, || prove(&call))
    }
}
