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
mod tests {
    use super::*;
    use crate::labelset;

    fn p(s: &str) -> Vec<u8> {
        scope::parse(s.as_bytes()).unwrap()
    }

    fn set(s: &str) -> Vec<u8> {
        labelset::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn covers_only_inside_both_scopes() {
        let (from, to) = (p("acme/finance"), p("acme/platform"));
        let c = Crossing {
            id: 1,
            from: &from,
            to: &to,
        };
        assert!(c.covers(&p("acme/finance"), &p("acme/platform")));
        assert!(c.covers(&p("acme/finance/ledger"), &p("acme/platform/infra")));
        // not for a run outside its to_scope, not even the parent
        assert!(!c.covers(&p("acme/finance"), &p("acme")));
        assert!(!c.covers(&p("acme/finance"), &p("acme/sales")));
        // not for data outside its from_scope
        assert!(!c.covers(&p("acme/hr"), &p("acme/platform")));
        assert!(!c.covers(&p("acme"), &p("acme/platform")));
        assert!(!c.covers(&[], &p("acme/platform")));
    }

    #[test]
    fn each_label_may_use_its_own_crossing() {
        let (fin, hr, plat) = (p("acme/finance"), p("acme/hr"), p("acme/platform"));
        let cs = [
            Crossing {
                id: 7,
                from: &hr,
                to: &plat,
            },
            Crossing {
                id: 3,
                from: &fin,
                to: &plat,
            },
        ];
        let esc = set("{area:acme/finance,area:acme/hr,origin:slack,tag:x}");
        let esc = LabelSet::from_canonical(&esc);
        assert_eq!(cover_each(esc, &plat, &cs), Ok(vec![3, 7]));
        // no single crossing covers both
        assert_eq!(cover_all(esc, &plat, &cs), None);
        assert_eq!(
            cover_each(esc, &plat, &cs[..1]),
            Err(set("{area:acme/finance}"))
        );
        let one = set("{area:acme/finance/ledger}");
        assert_eq!(
            cover_all(LabelSet::from_canonical(&one), &plat, &cs),
            Some(3)
        );
        // nothing escaping needs nothing
        assert_eq!(cover_each(LabelSet::EMPTY, &plat, &[]), Ok(vec![]));
    }
}
