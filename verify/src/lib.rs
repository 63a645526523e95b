//! An inclusion proof of one step of the trail, checked with no database.
//!
//! The proof (JSON, the format below) carries the step's canonical content, the hash it was
//! chained to, the leaves of the run's later steps, the run's length, and the audit path of the
//! run's ledger leaf to a ledger root. Checking recomputes the step's leaf and the run's chain
//! up to its head, then the root; a DBA compares that root with the digest kept outside the
//! database (`pg_labels.ledger_digest()`).
//!
//! ```json
//! {"version": 1,
//!  "step": {"id": 42, "run_id": "…uuid…", "kind": "tool_called", "tool": "tickets.read",
//!           "labels": "{area:acme/platform}", "args": "{\"ticket\": 42}", "decision": "allow",
//!           "rule": null, "reason": null, "request_id": null, "origin_run": null,
//!           "artifact_id": null, "digest": null, "share_id": null, "crossing_ids": null,
//!           "actor": "platform", "created_at": 786000000000000, "scope": "acme/platform",
//!           "labels_after": "…64 hex…"},
//!  "prev": "…64 hex…", "later": ["…64 hex…", …], "length": 3,
//!  "ledger": {"index": 0, "size": 1, "path": [], "root": "…64 hex…"}}
//! ```
//! `created_at` is microseconds since 2000-01-01 UTC; `args` is `jsonb`'s text output.

use pg_labels_core::chain::{self, from_hex, hex, Hash, StepContent};
use pg_labels_core::labelset;
use pg_labels_core::LabelSet;
use serde_json::Value;

/// What a proof shows.
#[derive(Debug, PartialEq, Eq)]
pub struct Proven {
    pub step: i64,
    pub run: String,
    pub head: Hash,
    pub root: Hash,
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, String> {
    v.get(name)
        .ok_or_else(|| format!("the proof has no \"{name}\""))
}

fn opt_str<'a>(v: &'a Value, name: &str) -> Result<Option<&'a str>, String> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("\"{name}\" must be a string or null")),
    }
}

fn opt_int(v: &Value, name: &str) -> Result<Option<i64>, String> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("\"{name}\" must be an integer or null")),
    }
}

fn hash(v: &Value, what: &str) -> Result<Hash, String> {
    v.as_str()
        .and_then(from_hex)
        .ok_or_else(|| format!("\"{what}\" must be 64 hexadecimal digits"))
}

/// The 16 bytes of a uuid in its text form.
pub fn uuid(s: &str) -> Result<[u8; 16], String> {
    let digits: String = s.chars().filter(|c| *c != '-').collect();
    let bad = || format!("\"{s}\" is not a uuid");
    if digits.len() != 32 {
        return Err(bad());
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(digits.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16)
            .map_err(|_| bad())?;
    }
    Ok(out)
}

/// Check a proof; `Err` says what does not hold.
pub fn check(proof: &Value) -> Result<Proven, String> {
    if field(proof, "version")?.as_i64() != Some(1) {
        return Err("unknown proof version (this verifier reads version 1)".into());
    }
    let s = field(proof, "step")?;
    let labels = labelset::parse(opt_str(s, "labels")?.unwrap_or("{}").as_bytes())
        .map_err(|e| format!("\"labels\": {e}"))?;
    let run_id = opt_str(s, "run_id")?.ok_or("the step has no run_id")?;
    let crossing_ids: Option<Vec<i64>> = match s.get("crossing_ids") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|x| {
                    x.as_i64()
                        .ok_or_else(|| "\"crossing_ids\" must hold integers".to_string())
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => return Err("\"crossing_ids\" must be an array or null".into()),
    };
    let content = StepContent {
        id: opt_int(s, "id")?.ok_or("the step has no id")?,
        run_id: uuid(run_id)?,
        kind: opt_str(s, "kind")?.ok_or("the step has no kind")?,
        tool: opt_str(s, "tool")?,
        labels: LabelSet::from_canonical(&labels),
        args: opt_str(s, "args")?,
        decision: opt_str(s, "decision")?,
        rule: opt_str(s, "rule")?,
        reason: opt_str(s, "reason")?,
        request_id: opt_int(s, "request_id")?,
        origin_run: opt_str(s, "origin_run")?.map(uuid).transpose()?,
        artifact_id: opt_str(s, "artifact_id")?.map(uuid).transpose()?,
        digest: opt_str(s, "digest")?,
        share_id: opt_int(s, "share_id")?,
        crossing_ids: crossing_ids.as_deref(),
        actor: opt_str(s, "actor")?.ok_or("the step has no actor")?,
        created_at: opt_int(s, "created_at")?.ok_or("the step has no created_at")?,
        scope: opt_str(s, "scope")?.ok_or("the step has no scope")?,
        labels_after: hash(field(s, "labels_after")?, "labels_after")?,
        expires_at: opt_int(s, "expires_at")?,
    };
    let mut h = chain::link(
        &hash(field(proof, "prev")?, "prev")?,
        &chain::leaf(&content),
    );
    for (i, l) in field(proof, "later")?
        .as_array()
        .ok_or("\"later\" must be an array")?
        .iter()
        .enumerate()
    {
        h = chain::link(&h, &hash(l, &format!("later[{i}]"))?);
    }
    let length = opt_int(proof, "length")?.ok_or("the proof has no length")?;
    let ledger = field(proof, "ledger")?;
    let index = opt_int(ledger, "index")?.ok_or("the ledger has no index")?;
    let size = opt_int(ledger, "size")?.ok_or("the ledger has no size")?;
    let path: Vec<Hash> = field(ledger, "path")?
        .as_array()
        .ok_or("\"path\" must be an array")?
        .iter()
        .enumerate()
        .map(|(i, p)| hash(p, &format!("path[{i}]")))
        .collect::<Result<_, _>>()?;
    let root = hash(field(ledger, "root")?, "root")?;
    let leaf = chain::head_leaf(&content.run_id, length, &h);
    let (Ok(index), Ok(size)) = (u64::try_from(index), u64::try_from(size)) else {
        return Err("the ledger's index and size must not be negative".into());
    };
    match chain::root_from_path(&leaf, index, size, &path) {
        Some(r) if r == root => Ok(Proven { step: content.id, run: run_id.to_string(), head: h, root }),
        Some(r) => Err(format!(
            "the step does not lead to the root: its run's chain and the path give {}, the proof names {}",
            hex(&r),
            hex(&root)
        )),
        None => Err("the audit path does not fit the ledger's size and index".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A ledger of three runs, the middle one with three steps; a proof of its first step.
    fn proof() -> Value {
        let labels = labelset::parse(b"{area:acme/platform,origin:slack}").unwrap();
        // (the digest of the first step's; a test of the proof, not of the chain's values)
        let after = chain::labels_next(&[3u8; 32], LabelSet::from_canonical(&labels));
        let run = uuid("c2000000-0000-0000-0000-000000000001").unwrap();
        let step = |id: i64, kind: &'static str| StepContent {
            id,
            run_id: run,
            kind,
            tool: Some("tickets.read"),
            labels: LabelSet::from_canonical(&labels),
            args: Some("{\"ticket\": 42}"),
            decision: Some("allow"),
            rule: None,
            reason: None,
            request_id: None,
            origin_run: None,
            artifact_id: None,
            digest: None,
            share_id: None,
            crossing_ids: Some(&[7, 9]),
            actor: "platform",
            created_at: 786_000_000_000_000 + id,
            scope: "acme/platform",
            labels_after: after,
            expires_at: None,
        };
        let genesis = [3u8; 32];
        let leaves: Vec<Hash> = [(1, "input"), (2, "tool_called"), (3, "tool_result")]
            .iter()
            .map(|&(id, k)| chain::leaf(&step(id, k)))
            .collect();
        let head = leaves.iter().fold(genesis, |h, l| chain::link(&h, l));
        let ledger = vec![[1u8; 32], chain::head_leaf(&run, 3, &head), [2u8; 32]];
        json!({
            "version": 1,
            "step": {"id": 1, "run_id": "c2000000-0000-0000-0000-000000000001", "kind": "input",
                     "tool": "tickets.read", "labels": "{origin:slack,area:acme/platform}",
                     "args": "{\"ticket\": 42}", "decision": "allow", "rule": null, "reason": null,
                     "request_id": null, "origin_run": null, "artifact_id": null, "digest": null,
                     "share_id": null, "crossing_ids": [7, 9], "actor": "platform",
                     "created_at": 786_000_000_000_001i64, "scope": "acme/platform",
                     "labels_after": hex(&after)},
            "prev": hex(&genesis),
            "later": [hex(&leaves[1]), hex(&leaves[2])],
            "length": 3,
            "ledger": {"index": 1, "size": 3,
                       "path": chain::audit_path(&ledger, 1).iter().map(|h| hex(h)).collect::<Vec<_>>(),
                       "root": hex(&chain::root(&ledger))}
        })
    }

    #[test]
    fn a_true_proof_holds() {
        let p = check(&proof()).unwrap();
        assert_eq!(p.step, 1);
    }

    #[test]
    fn any_change_breaks_it() {
        let cases: Vec<(&str, Value)> = vec![
            ("/step/labels", json!("{area:acme/platform}")),
            ("/step/decision", json!("block")),
            ("/step/actor", json!("someone")),
            ("/step/created_at", json!(786_000_000_000_002i64)),
            ("/step/crossing_ids", json!([7])),
            ("/step/args", Value::Null),
            ("/length", json!(2)),
            ("/ledger/index", json!(0)),
        ];
        for (at, v) in cases {
            let mut p = proof();
            *p.pointer_mut(at).unwrap() = v;
            assert!(check(&p).is_err(), "{at} changed and the proof still held");
        }
        let mut p = proof();
        p["later"].as_array_mut().unwrap().pop();
        assert!(check(&p).is_err(), "a later step removed");
    }

    #[test]
    fn malformed_proofs_say_what() {
        assert!(check(&json!({})).unwrap_err().contains("version"));
        let mut p = proof();
        p["prev"] = json!("zz");
        assert!(check(&p).unwrap_err().contains("prev"));
    }
}
