//! One run's chain checked again from its stored steps (`pg_labels.verify()`,
//! `pg_labels.verify_all()`).

use super::*;

/// A run's genesis, from its row (`None`: the run has no chain).
pub(super) fn genesis(run: &RunRow) -> Option<Hash> {
    let opened = run.opened_labels.as_deref()?;
    let scope_text = scope::to_text(&run.scope);
    Some(chain::genesis(&chain::RunOpening {
        id: run.id.0,
        agent: run.agent.as_deref(),
        agent_version: run.agent_version,
        scope: &scope_text,
        labels: LabelSet::from_canonical(opened),
        listener_id: run.listener_id,
        opened_at: run.opened_at,
    }))
}

/// The step's leaf, given the digest of the run's labels after it.
pub(super) fn leaf(run: &RunRow, scope_text: &str, s: &StepRow, labels_after: &Hash) -> Hash {
    chain::leaf(&content(run, scope_text, s, labels_after))
}

pub(super) fn content<'a>(
    run: &RunRow,
    scope_text: &'a str,
    s: &'a StepRow,
    labels_after: &Hash,
) -> chain::StepContent<'a> {
    chain::StepContent {
        id: s.id,
        run_id: run.id.0,
        kind: &s.kind,
        tool: s.tool.as_deref(),
        labels: LabelSet::from_canonical(&s.labels),
        args: s.args.as_deref(),
        decision: s.decision.as_deref(),
        rule: s.rule.as_deref(),
        reason: s.reason.as_deref(),
        request_id: s.request_id,
        origin_run: s.origin_run.map(|u| u.0),
        artifact_id: s.artifact_id.map(|u| u.0),
        digest: s.digest.as_deref(),
        share_id: s.share_id,
        crossing_ids: s.crossing_ids.as_deref(),
        actor: &s.actor,
        created_at: s.created_at,
        scope: scope_text,
        labels_after: *labels_after,
        expires_at: s.expires_at,
    }
}

/// What checking one run found.
pub(super) struct Checked {
    pub(super) steps: i64,
    /// The first break: the step, how, and a sentence.
    pub(super) broken: Option<(Option<i64>, &'static str, String)>,
}

/// Check a run's chain against what is stored: its steps (from the purge's cut, if any), the
/// checkpoint its row keeps, and its labels.
pub(super) fn check_run(run: &RunRow) -> Result<Checked> {
    let (Some(genesis), Some(head), Some(opened)) =
        (genesis(run), run.head, run.opened_labels.as_deref())
    else {
        return Ok(Checked {
            steps: 0,
            broken: Some((
                None,
                "unchained",
                "the run has no hash chain (written without the database's triggers, or by a release without chains)".into(),
            )),
        });
    };
    let scope_text = scope::to_text(&run.scope);
    let mut v = Verifier::passing(run.cut.unwrap_or(genesis), run.cut_length, head);
    let mut carried = opened.to_vec();
    let mut steps = 0i64;
    each_step(&run.id, |s| {
        steps += 1;
        v.push(&stored(run, &scope_text, &s));
        carried = LabelSet::from_canonical(&carried).union(LabelSet::from_canonical(&s.labels));
        Ok(true)
    })?;
    let broken = match v.finish() {
        Some(b) => Some(describe(&b)),
        None => {
            let stored = LabelSet::from_canonical(&run.labels);
            let missing = LabelSet::from_canonical(&carried).filter(|l| !stored.contains(l.0));
            if missing.is_empty() {
                None
            } else {
                Some((
                    None,
                    "edited",
                    format!(
                        "the run's labels were edited: its steps brought {} it no longer carries",
                        LabelSet::from_canonical(&missing)
                            .to_text_capped(pg_labels_core::refusal::LIST_LIMIT)
                    ),
                ))
            }
        }
    };
    Ok(Checked { steps, broken })
}

/// A stored step for the verifier, with the hash its stored content links to.
pub(super) fn stored(run: &RunRow, scope_text: &str, s: &StepRow) -> Stored {
    let computed = s.prev.map(|p| {
        let after = chain::labels_next(&p, LabelSet::from_canonical(&s.labels));
        chain::link(&p, &leaf(run, scope_text, s, &after))
    });
    Stored {
        id: s.id,
        prev: s.prev,
        hash: s.hash,
        computed,
    }
}

pub(super) fn describe(b: &Break) -> (Option<i64>, &'static str, String) {
    (b.step, b.how.name(), b.to_string())
}

pub(super) fn verify_all(call: &Call<'_>) -> Result<Datum> {
    let out = srf::materialize(call, "pg_labels.verify_all()", 4)?;
    let (mut runs, mut steps, mut broken) = (0i64, 0i64, 0i64);
    each_run(|run| {
        let c = check_run(&run)?;
        runs += 1;
        steps += c.steps;
        if let Some((step, how, detail)) = &c.broken {
            broken += 1;
            out.push(&[
                Some(run.id.datum()),
                step.map(Datum::from),
                Some(text_datum(how)?),
                Some(text_datum(detail)?),
            ]);
        }
        if runs % 10_000 == 0 {
            notice(&format!(
                "pg_labels.verify_all: {runs} runs, {steps} steps checked, {broken} broken"
            ));
        }
        Ok(())
    })?;
    notice(&format!(
        "pg_labels.verify_all: {runs} runs, {steps} steps checked, {broken} broken"
    ));
    Ok(Datum::from(0usize))
}
