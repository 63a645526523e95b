//! Deciding a step, by the core, on what was gathered: what the step brings into its run
//! ([`barrier::brought`]), and for a tool call or a gate decision [`barrier::judge`]'s answer:
//! the verdict to record, or the refusal to raise.

use super::gather::{Facts, Step};
use super::Attempt;
use crate::pg::datum::Jsonb;
use crate::pg::error::Result;
use crate::pg::role::as_owner;
use crate::pg::spi::{with_spi, SavedPlan};
use crate::platform::crossings::active_into;
use crate::platform::refused;
use pg_labels_core::barrier::{self, Answer, Proposal, Summary, ToolFacts, Verdict};
use pg_labels_core::crossing::{self, Owned};
use pg_labels_core::LabelSet;
use std::borrow::Cow;

/// What the core decided of a step, for the write.
pub(super) struct Decided<'f> {
    /// What the step brings: its own labels (owned when they are not the row's as written).
    pub(super) own: Cow<'f, [u8]>,
    /// Does the run carry more once the step is written?
    pub(super) grows: bool,
    /// The run's labels, with the step's own, as the rules see them.
    pub(super) summary: Cow<'f, Summary>,
    /// A tool call's or gate decision's verdict (a call's allows it).
    pub(super) verdict: Option<Verdict>,
}

/// An unused, granted approval of exactly this call (same run, tool and arguments).
static FIND_APPROVAL: SavedPlan = SavedPlan::new(
    c"SELECT req.id FROM pg_labels.steps req
       WHERE req.run_id = $1 AND req.kind = 'approval_requested'
         AND req.tool = $2 AND req.args IS NOT DISTINCT FROM $3
         AND EXISTS (SELECT FROM pg_labels.steps d
                      WHERE d.request_id = req.id AND d.kind = 'approval_decided' AND d.decision = 'granted')
         AND NOT EXISTS (SELECT FROM pg_labels.steps u
                          WHERE u.request_id = req.id AND u.kind = 'tool_called')
       ORDER BY req.id
       LIMIT 1",
);

/// Decide the step on the facts gathered: [`Attempt::Again`] for a refusal on a run read
/// without its lock.
pub(super) fn decide<'f>(step: &'f Step<'_>, facts: &'f Facts) -> Result<Attempt<Decided<'f>>> {
    let run = &facts.run;
    // What the step brings: its own labels, and for a result of a tool whose output is not
    // trusted, origin:tool (barrier::brought); for a context read, the artifact's labels too
    // (barrier::read, asked as the read was gathered).
    let trusted_output = facts.tool.as_ref().map(|t| t.trusted_output);
    let mut own = barrier::brought(step.kind, step.labels, trusted_output);
    if let Some(r) = &facts.read {
        if r.outcome.labels != step.labels.body() {
            own = Cow::Owned(r.outcome.labels.clone());
        }
    }
    let own_set = LabelSet::from_canonical(&own);
    let grows = !run.labels.has_all(own_set);
    let summary: Cow<'_, Summary> = if grows {
        Cow::Owned(run.labels.summary.with(own_set, &run.scope))
    } else {
        Cow::Borrowed(&run.labels.summary)
    };
    let verdict = if step.kind.is_judged() {
        match judge(step, facts, &summary)? {
            Ok(verdict) => Some(verdict),
            Err(mut refusal) => {
                // a refusal is made on the run locked: a writer at it may be deciding an
                // approval
                if !run.locked {
                    return Ok(Attempt::Again);
                }
                refused::about(|a| a.labels = refusal.labels.take().map(|l| *l));
                return Err(refusal.into());
            }
        }
    } else {
        None
    };
    Ok(Attempt::Done(Decided {
        own,
        grows,
        summary,
        verdict,
    }))
}

/// Judge a tool call or gate decision: the core decides ([`barrier::judge`]); the crossings
/// and the approval are looked up only if it asks.
fn judge(step: &Step<'_>, facts: &Facts, summary: &Summary) -> Result<Answer<Verdict>> {
    let (run, run_id, owner, tool) = (&facts.run, &step.run_id, step.owner, step.tool);
    let args = step.row.get::<Jsonb>(step.c.args)?;
    let cover = |escaping: LabelSet<'_>| -> Result<std::result::Result<Vec<i64>, Vec<u8>>> {
        let active: Vec<Owned> = active_into(owner, &run.scope)?;
        let views: Vec<_> = active.iter().map(Owned::view).collect();
        Ok(crossing::cover_each(escaping, &run.scope, &views))
    };
    let approval = || -> Result<Option<i64>> {
        let tool_d = tool.map(crate::pg::datum::text_datum).transpose()?;
        as_owner(owner, || {
            with_spi(|spi| {
                // with the latest snapshot: under the run's lock, a use of the approval that
                // committed before counts, also in REPEATABLE READ
                let rows = FIND_APPROVAL.execute_latest(
                    spi,
                    &[
                        crate::pg::sys::types::UUIDOID,
                        crate::pg::sys::types::TEXTOID,
                        crate::pg::sys::types::JSONBOID,
                    ],
                    &[Some(run_id.datum()), tool_d, args.map(|a| a.0)],
                    1,
                )?;
                rows.get::<i64>(0, 1)
            })
        })
    };
    let proposal = Proposal {
        kind: step.kind,
        run: run_id,
        run_scope: &run.scope,
        summary,
        tool,
        facts: facts
            .tool
            .as_ref()
            .and_then(|t| t.effect)
            .map(|effect| ToolFacts { effect }),
    };
    barrier::judge(&proposal, cover, approval)
}
