//! Boundary crossings: explicit, recorded authorizations for data of one scope to be carried
//! into another.
//!
//! A crossing `from → to` lets a run (or a share) whose scope lies within `to` carry scope labels
//! whose scope lies within `from`. It never rewrites or drops a label: the labels stay on the
//! data, and the barrier accepts the ones a crossing covers. Which crossings are *active* (not
//! expired, not revoked) is the database's business; the functions here get only active ones.

use crate::label::Label;
use crate::labelset::LabelSet;
use crate::scope;

/// An active crossing: its id and its two scopes (paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crossing<'a> {
    pub id: i64,
    pub from: &'a [u8],
    pub to: &'a [u8],
}

/// An active crossing, owned (as read from the database).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owned {
    pub id: i64,
    pub from: Vec<u8>,
    pub to: Vec<u8>,
}

impl Owned {
    pub fn view(&self) -> Crossing<'_> {
        Crossing {
            id: self.id,
            from: &self.from,
            to: &self.to,
        }
    }
}

impl Crossing<'_> {
    /// Does this crossing let a scope label naming `label_scope` into `target` (the scope of a
    /// run, or of a share)? Only for targets inside its `to`, only for labels inside its `from`.
    #[inline]
    pub fn covers(&self, label_scope: &[u8], target: &[u8]) -> bool {
        scope::reaches(self.to, target) && scope::reaches(self.from, label_scope)
    }

    fn covers_label(&self, l: Label<'_>, target: &[u8]) -> bool {
        l.scope().is_some_and(|s| self.covers(s, target))
    }
}

/// Every escaping scope label may use its own crossing (tool calls and context reads): the ids
/// of the crossings used, ascending, each once, or the labels (a body) no crossing covers.
/// Each label uses the first crossing of `crossings` that covers it.
pub fn cover_each(
    escaping: LabelSet<'_>,
    target: &[u8],
    crossings: &[Crossing<'_>],
) -> Result<Vec<i64>, Vec<u8>> {
    let mut used = Vec::new();
    let uncovered =
        escaping.filter(
            |l| match crossings.iter().find(|c| c.covers_label(l, target)) {
                Some(c) => {
                    used.push(c.id);
                    false
                }
                None => l.scope().is_some(),
            },
        );
    if !uncovered.is_empty() {
        return Err(uncovered);
    }
    used.sort_unstable();
    used.dedup();
    Ok(used)
}

/// One crossing for all the escaping scope labels (a share records the one crossing it used):
/// the first of `crossings` that covers every one of them. Callers ask only when something
/// escapes (with nothing escaping, any crossing "covers" it).
pub fn cover_all(escaping: LabelSet<'_>, target: &[u8], crossings: &[Crossing<'_>]) -> Option<i64> {
    crossings
        .iter()
        .find(|c| {
            escaping
                .iter()
                .all(|l| l.scope().is_none() || c.covers_label(l, target))
        })
        .map(|c| c.id)
}

#[cfg(test)]
mod tests;
