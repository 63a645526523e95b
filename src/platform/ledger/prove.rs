//! An inclusion proof of one step (`pg_labels.prove()`), which `pg_labels_verify` checks with
//! no database.

use super::*;

/// A step's content in the proof's JSON (see `pg_labels_verify`).
pub(super) fn step_json(c: &chain::StepContent<'_>, run: &Uuid) -> Value {
    let uuid = |u: Option<[u8; 16]>| u.map(|u| Uuid(u).to_string());
    let mut labels = String::new();
    let _ = write!(labels, "{}", c.labels.to_text());
    let mut step = json!({
        "id": c.id,
        "run_id": run.to_string(),
        "kind": c.kind,
        "tool": c.tool,
        "labels": labels,
        "args": c.args,
        "decision": c.decision,
        "rule": c.rule,
        "reason": c.reason,
        "request_id": c.request_id,
        "origin_run": uuid(c.origin_run),
        "artifact_id": uuid(c.artifact_id),
        "digest": c.digest,
        "share_id": c.share_id,
        "crossing_ids": c.crossing_ids,
        "actor": c.actor,
        "created_at": c.created_at,
        "scope": c.scope,
        "labels_after": hex(&c.labels_after),
    });
    // an approval request's expiry, which its leaf hashes only when there is one
    if let (Some(expires_at), Value::Object(o)) = (c.expires_at, &mut step) {
        o.insert("expires_at".into(), json!(expires_at));
    }
    step
}

pub(super) fn prove(call: &Call<'_>) -> Result<Datum> {
    if call.is_null(0) {
        return call.null();
    }
    let step_id = call.i64(0);
    let (id, root) = digest_arg(call, 1, "pg_labels.prove()")?;
    let not_found = |what: String| {
        Error::new(
            INVALID_PARAMETER_VALUE,
            format!("pg_labels.prove(): {what}"),
        )
    };
    let run_id = with_spi(|spi| {
        let rows = STEP_RUN.execute(
            spi,
            &[crate::pg::sys::types::INT8OID],
            &[Some(Datum::from(step_id))],
            true,
            1,
        )?;
        rows.get::<Uuid>(0, 1)
    })?
    .ok_or_else(|| {
        not_found(format!(
            "there is no step {step_id} (or it is not visible to you)"
        ))
    })?;
    let (_, marks, _) = digest_record(id)?
        .ok_or_else(|| not_found(format!("the database holds no record of digest {id}")))?;
    let marks = marks.ok_or_else(|| not_found(format!("the record of digest {id} is damaged")))?;
    let index = marks
        .iter()
        .position(|m| m.run == run_id)
        .ok_or_else(|| not_found(format!("run {run_id} was opened after digest {id}")))?;
    let mark = &marks[index];
    let run = run_row(&run_id)?.ok_or_else(|| not_found(format!("there is no run {run_id}")))?;
    let scope_text = scope::to_text(&run.scope);
    let mut found: Option<(Value, Hash)> = None;
    let mut later: Vec<String> = Vec::new();
    let head = head_at(&run, mark.length, |s, before, l, after| {
        if s.id == step_id {
            let c = content(&run, &scope_text, s, after);
            found = Some((step_json(&c, &run_id), *before));
        } else if found.is_some() {
            later.push(hex(l));
        }
    })?;
    let (step, prev) = found.ok_or_else(|| {
        not_found(format!(
            "step {step_id} was written after digest {id}, or purged"
        ))
    })?;
    if !matches!(head, HeadAt::Head(h) if h == mark.head) {
        return Err(not_found(format!(
            "run {run_id} no longer holds what digest {id} saw (see pg_labels.verify_digest())"
        )));
    }
    let leaves: Vec<Hash> = marks
        .iter()
        .map(|m| chain::head_leaf(&m.run.0, m.length, &m.head))
        .collect();
    let v = json!({
        "version": 1,
        "step": step,
        "prev": hex(&prev),
        "later": later,
        "length": mark.length,
        "ledger": {
            "digest": id,
            "index": index,
            "size": leaves.len(),
            "path": chain::audit_path(&leaves, index).iter().map(|h| hex(h)).collect::<Vec<_>>(),
            "root": hex(&root),
        }
    });
    Ok(Jsonb::from_text(&v.to_string())?.0)
}
