//! The barrier's decisions on context: a share of an artifact (the crossing it uses, or the
//! refusal), the share that offers an artifact to a run, and a context read.

use super::Answer;
use crate::crossing::{self, Crossing, Owned};
use crate::labelset::LabelSet;
use crate::refusal;
use crate::scope;

/// The artifact a share or read is about, for messages.
#[derive(Clone, Copy, Debug)]
pub struct ArtifactFacts<'a> {
    pub id: &'a str,
    pub origin_run: &'a str,
    pub labels: LabelSet<'a>,
}

/// A share of an artifact to `target` (a scope, or the scope of the run `to_run`): the one
/// crossing it uses when the target cannot carry all of the artifact's labels (`None` when it
/// can), or the refusal. `named`: the crossing the writer asked to use, if any. `active`
/// (asked only when something escapes) returns the active crossings into the target.
pub fn share<E>(
    artifact: &ArtifactFacts<'_>,
    target: &[u8],
    to_run: Option<&str>,
    named: Option<i64>,
    active: impl FnOnce() -> Result<Vec<Owned>, E>,
) -> Result<Answer<Option<i64>>, E> {
    let escaping = artifact.labels.escaping(target);
    if escaping.is_empty() {
        return Ok(Ok(None));
    }
    let active = active()?;
    let candidates: Vec<Crossing<'_>> = active
        .iter()
        .map(Owned::view)
        .filter(|c| named.is_none_or(|n| n == c.id))
        .collect();
    Ok(
        match crossing::cover_all(LabelSet::from_canonical(&escaping), target, &candidates) {
            Some(id) => Ok(Some(id)),
            None => Err(refusal::share_refused(
                artifact.id,
                artifact.origin_run,
                target,
                to_run,
                &escaping,
                named,
            )),
        },
    )
}

/// A share of an artifact, as a read sees it.
#[derive(Clone, Copy, Debug)]
pub struct ShareFacts<'a> {
    pub id: i64,
    /// Shared with one run: is it the reading run?
    pub to_this_run: Option<bool>,
    pub to_scope: &'a [u8],
}

/// The first share (in the order given) that offers the artifact to a run in `run_scope`: one
/// to this very run, or to a scope reaching the run's.
pub fn covering_share<'a>(
    run_scope: &[u8],
    shares: impl IntoIterator<Item = ShareFacts<'a>>,
) -> Option<i64> {
    shares
        .into_iter()
        .find(|s| match s.to_this_run {
            Some(this) => this,
            None => scope::reaches(s.to_scope, run_scope),
        })
        .map(|s| s.id)
}

/// What a context read brings into the run: the step's labels with the artifact's, and the
/// crossings that let those the run's scope cannot carry through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOutcome {
    pub labels: Vec<u8>,
    pub share: i64,
    pub crossings: Vec<i64>,
}

/// Judge a context read of `artifact` by run `run` (in `run_scope`): a share must offer it to
/// the run (`share`, from [`covering_share`]), and the run's scope must carry its labels or
/// active crossings into it (asked only when something escapes) must cover each of the rest.
pub fn read<E>(
    run: &str,
    run_scope: &[u8],
    artifact: &ArtifactFacts<'_>,
    share: Option<i64>,
    step_labels: LabelSet<'_>,
    active: impl FnOnce() -> Result<Vec<Owned>, E>,
) -> Result<Answer<ReadOutcome>, E> {
    let Some(share) = share else {
        return Ok(Err(refusal::not_shared(run, run_scope, artifact.id)));
    };
    let labels = step_labels.union(artifact.labels);
    let escaping = LabelSet::from_canonical(&labels).escaping(run_scope);
    let crossings = if escaping.is_empty() {
        Vec::new()
    } else {
        let active = active()?;
        let views: Vec<Crossing<'_>> = active.iter().map(Owned::view).collect();
        match crossing::cover_each(LabelSet::from_canonical(&escaping), run_scope, &views) {
            Ok(ids) => ids,
            Err(uncovered) => {
                return Ok(Err(refusal::read_refused(
                    run,
                    run_scope,
                    artifact.id,
                    &uncovered,
                )))
            }
        }
    };
    Ok(Ok(ReadOutcome {
        labels,
        share,
        crossings,
    }))
}
