//! The ledger: a digest over every run's chain head, kept by a DBA outside the database
//! (`pg_labels.ledger_digest()`), and the proof that today's trail extends the one a digest
//! described (`pg_labels.verify_digest()`).

use super::*;

/// One run in a digest: its id, how many steps its chain held, and its head then.
pub(super) struct Mark {
    pub(super) run: Uuid,
    pub(super) length: i64,
    pub(super) head: Hash,
}

pub(super) const MARK_LEN: usize = 16 + 8 + 32;

pub(super) fn marks_bytes(marks: &[Mark]) -> Vec<u8> {
    let mut out = Vec::with_capacity(marks.len() * MARK_LEN);
    for m in marks {
        out.extend_from_slice(&m.run.0);
        out.extend_from_slice(&m.length.to_be_bytes());
        out.extend_from_slice(&m.head);
    }
    out
}

pub(super) fn marks_from(bytes: &[u8]) -> Option<Vec<Mark>> {
    if bytes.len() % MARK_LEN != 0 {
        return None;
    }
    bytes
        .chunks(MARK_LEN)
        .map(|c| {
            Some(Mark {
                run: Uuid(c[..16].try_into().ok()?),
                length: i64::from_be_bytes(c[16..24].try_into().ok()?),
                head: c[24..].try_into().ok()?,
            })
        })
        .collect()
}

pub(super) fn ledger_root(marks: &[Mark]) -> Hash {
    let mut root = chain::Root::default();
    for m in marks {
        root.push(&chain::head_leaf(&m.run.0, m.length, &m.head));
    }
    root.finish()
}

pub(super) static SAVE_DIGEST: SavedPlan = SavedPlan::new(
    c"INSERT INTO pg_labels.digests (root, runs, steps, marks) VALUES ($1, $2, $3, $4)
      RETURNING id, taken_at",
);
pub(super) static DIGEST: SavedPlan =
    SavedPlan::new(c"SELECT root, marks, taken_at FROM pg_labels.digests WHERE id = $1");

/// A digest the caller hands back: its id and root.
pub(super) fn digest_arg(call: &Call<'_>, n: usize, function: &str) -> Result<(i64, Hash)> {
    let bad = |why: &str| {
        Error::new(
            INVALID_PARAMETER_VALUE,
            format!("{function}: the digest {why}"),
        )
        .hint("Pass the value pg_labels.ledger_digest() returned, as it was kept.")
    };
    if call.is_null(n) {
        return Err(bad("is NULL"));
    }
    let text = Jsonb(call.datum(n)).text();
    let v: Value = serde_json::from_str(&text).map_err(|_| bad("is not JSON"))?;
    if v.get("version").and_then(Value::as_i64) != Some(1) {
        return Err(bad("is not of version 1"));
    }
    let id = v
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("has no id"))?;
    let root = v
        .get("root")
        .and_then(Value::as_str)
        .and_then(from_hex)
        .ok_or_else(|| bad("has no root of 64 hexadecimal digits"))?;
    Ok((id, root))
}

/// The marks a digest recorded (`None`: the database holds no record of it).
pub(super) fn digest_record(id: i64) -> Result<Option<(Hash, Option<Vec<Mark>>, Timestamp)>> {
    with_spi(|spi| {
        let rows = DIGEST.execute(
            spi,
            &[crate::pg::sys::types::INT8OID],
            &[Some(Datum::from(id))],
            true,
            1,
        )?;
        if rows.is_empty() {
            return Ok(None);
        }
        let root = hash_of(rows.get::<Bytea>(0, 1)?).unwrap_or([0; 32]);
        let marks = rows.get::<Bytea>(0, 2)?.and_then(|b| marks_from(&b.0));
        Ok(Some((root, marks, rows.must::<Timestamp>(0, 3)?)))
    })
}

/// Where walking a run's chain by what is stored now ends, at its `length`-th step.
pub(super) enum HeadAt {
    /// The head those steps lead to.
    Head(Hash),
    /// Fewer steps are stored (how many the chain holds, the purged ones counted).
    Short(i64),
    /// A purge removed them: the run's chain now starts after them.
    Purged,
    /// The run has no chain.
    Unchained,
}

/// Walk a run's chain from its genesis (or a purge's cut) by what is stored now, to its
/// `length`-th step, handing each step, the chain value before it, its leaf and its labels
/// digest to `visit`.
pub(super) fn head_at(
    run: &RunRow,
    length: i64,
    mut visit: impl FnMut(&StepRow, &Hash, &Hash, &Hash),
) -> Result<HeadAt> {
    let Some(start) = genesis(run) else {
        return Ok(HeadAt::Unchained);
    };
    let mut h = run.cut.unwrap_or(start);
    let mut seen = run.cut_length;
    if length < seen || (length == seen && seen > 0 && run.cut.is_none()) {
        return Ok(HeadAt::Purged);
    }
    let scope_text = scope::to_text(&run.scope);
    if length > seen {
        each_step(&run.id, |s| {
            seen += 1;
            let after = chain::labels_next(&h, LabelSet::from_canonical(&s.labels));
            let l = leaf(run, &scope_text, &s, &after);
            visit(&s, &h, &l, &after);
            h = chain::link(&h, &l);
            Ok(seen < length)
        })?;
    }
    Ok(if seen == length {
        HeadAt::Head(h)
    } else {
        HeadAt::Short(seen)
    })
}

pub(super) static STEP_RUN: SavedPlan =
    SavedPlan::new(c"SELECT run_id FROM pg_labels.steps WHERE id = $1");

/// Where, within the steps a digest saw, a run's stored chain first breaks.
pub(super) fn check_prefix(run: &RunRow, m: &Mark) -> Result<String> {
    let Some(start) = genesis(run) else {
        return Ok("the run's chain was removed from its row".into());
    };
    let scope_text = scope::to_text(&run.scope);
    let mut v = Verifier::new(run.cut.unwrap_or(start), run.cut_length, m.head, m.length);
    let mut seen = run.cut_length;
    each_step(&run.id, |s| {
        seen += 1;
        v.push(&stored(run, &scope_text, &s));
        Ok(seen < m.length)
    })?;
    Ok(match v.finish() {
        Some(b) => b.to_string(),
        None => "the steps' hashes were computed again after they were changed".into(),
    })
}

/// How many steps a run holds, and the hash of its last one.
pub(super) static HEAD_NOW: SavedPlan = SavedPlan::new(
    c"SELECT (SELECT count(*) FROM pg_labels.steps WHERE run_id = $1),
             (SELECT hash FROM pg_labels.steps WHERE run_id = $1 ORDER BY id DESC LIMIT 1)",
);

pub(super) fn ledger_digest(call: &Call<'_>) -> Result<Datum> {
    let _ = call;
    let mut marks = Vec::new();
    let mut steps = 0i64;
    each_run(|run| {
        if let Some(checkpoint) = run.head {
            // the head now: the run's last step (steps after the row's checkpoint are chained
            // in the trail alone), or the checkpoint when it has none
            let (count, last) = with_spi(|spi| {
                let rows = HEAD_NOW.execute(
                    spi,
                    &[crate::pg::sys::types::UUIDOID],
                    &[Some(run.id.datum())],
                    true,
                    1,
                )?;
                Ok((
                    rows.get::<i64>(0, 1)?.unwrap_or_default(),
                    hash_of(rows.get::<Bytea>(0, 2)?),
                ))
            })?;
            let length = run.cut_length + count;
            steps += length;
            marks.push(Mark {
                run: run.id,
                length,
                head: last.unwrap_or(checkpoint),
            });
        }
        Ok(())
    })?;
    let root = ledger_root(&marks);
    let bytes = marks_bytes(&marks);
    let (id, taken_at) = with_spi(|spi| {
        let rows = SAVE_DIGEST.execute(
            spi,
            &[
                crate::pg::sys::types::BYTEAOID,
                crate::pg::sys::types::INT8OID,
                crate::pg::sys::types::INT8OID,
                crate::pg::sys::types::BYTEAOID,
            ],
            &[
                Some(crate::pg::datum::bytea_datum(&root)?),
                Some(Datum::from(marks.len() as i64)),
                Some(Datum::from(steps)),
                Some(crate::pg::datum::bytea_datum(&bytes)?),
            ],
            false,
            1,
        )?;
        Ok((rows.must::<i64>(0, 1)?, rows.must::<Timestamp>(0, 2)?))
    })?;
    let v = json!({
        "version": 1,
        "id": id,
        "taken_at": taken_at.text(),
        "runs": marks.len(),
        "steps": steps,
        "root": hex(&root),
    });
    Ok(Jsonb::from_text(&v.to_string())?.0)
}

pub(super) fn verify_digest(call: &Call<'_>) -> Result<Datum> {
    let out = srf::materialize(call, "pg_labels.verify_digest()", 3)?;
    let (id, root) = digest_arg(call, 0, "pg_labels.verify_digest()")?;
    let problem = |run: Option<&Uuid>, detail: String| -> Result<()> {
        out.push(&[
            Some(Datum::from(false)),
            run.map(Uuid::datum),
            Some(text_datum(&detail)?),
        ]);
        Ok(())
    };
    let Some((recorded_root, marks, taken_at)) = digest_record(id)? else {
        problem(
            None,
            format!("the database holds no record of digest {id}: it was removed"),
        )?;
        return Ok(Datum::from(0usize));
    };
    let Some(marks) = marks else {
        problem(
            None,
            format!("the database's record of digest {id} is damaged"),
        )?;
        return Ok(Datum::from(0usize));
    };
    let mut fine = true;
    if recorded_root != root || ledger_root(&marks) != root {
        fine = false;
        problem(
            None,
            format!("the database's record of digest {id} is not the digest given: it was changed"),
        )?;
    }
    let mut now = chain::Root::default();
    let mut steps = 0i64;
    let mut purged = 0usize;
    for m in &marks {
        steps += m.length;
        let Some(run) = run_row(&m.run)? else {
            fine = false;
            problem(
                Some(&m.run),
                format!("the run was removed (the digest saw {} steps)", m.length),
            )?;
            continue;
        };
        match head_at(&run, m.length, |_, _, _, _| {})? {
            HeadAt::Unchained => {
                fine = false;
                problem(
                    Some(&m.run),
                    "the run's chain was removed from its row".into(),
                )?;
            }
            HeadAt::Short(seen) => {
                fine = false;
                problem(
                    Some(&m.run),
                    format!(
                        "steps were removed: the digest saw {} steps, the trail holds {seen}",
                        m.length
                    ),
                )?;
            }
            HeadAt::Purged => {
                // what purge() removed cannot be shown again; the run's chain goes on from
                // the cut it recorded, which verify() checks
                purged += 1;
                now.push(&chain::head_leaf(&m.run.0, m.length, &m.head));
            }
            HeadAt::Head(h) if h != m.head => {
                fine = false;
                let located = check_prefix(&run, m)?;
                problem(
                    Some(&m.run),
                    format!(
                        "its first {} steps are not the ones the digest saw: {located}",
                        m.length
                    ),
                )?;
            }
            HeadAt::Head(h) => now.push(&chain::head_leaf(&m.run.0, m.length, &h)),
        }
    }
    if fine && now.finish() == root {
        out.push(&[
            Some(Datum::from(true)),
            None,
            Some(text_datum(&format!(
                "today's trail extends digest {id} of {}: its {} runs and {steps} steps are all there, unchanged{}",
                taken_at.text(),
                marks.len(),
                if purged > 0 { format!(" (the steps of {purged} runs as far as purge() removed them since)") } else { String::new() }
            ))?),
        ]);
    } else if fine {
        problem(
            None,
            "the runs' heads do not lead to the digest's root".into(),
        )?;
    }
    Ok(Datum::from(0usize))
}
