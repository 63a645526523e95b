use crate::{Error, Scope};
use pg_labels_core::{label, labelset};
use std::fmt;
use std::str::FromStr;

/// A value of the SQL type `labelset`: a set of labels (`installation`, `company:acme`,
/// `area:acme/platform`, `origin:slack/T1`, `tag:pii`), like `{area:acme/platform,tag:pii}`.
///
/// It holds the core's canonical body (labels sorted, no duplicates), so equality is set
/// equality and `Ord` is the btree order of `labelset`, as on the server.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LabelSet {
    body: Vec<u8>,
}

impl LabelSet {
    pub(crate) const TYPE_NAME: &'static str = "labelset";

    /// `{}`, the empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse the text form, as `'...'::labelset` does: any order, duplicates, whitespace and
    /// double quotes allowed; the value is canonical whatever the input.
    pub fn parse(text: &str) -> Result<Self, Error> {
        Self::from_text(text.as_bytes())
    }

    /// Parse text from the wire, which need not be UTF-8 (the grammar refuses what is not).
    pub(crate) fn from_text(text: &[u8]) -> Result<Self, Error> {
        labelset::parse(text)
            .map(|body| LabelSet { body })
            .map_err(|e| Error::invalid(Self::TYPE_NAME, text, e))
    }

    /// The set of these labels, as `labelset(text[])` makes it (any order, duplicates allowed).
    pub fn from_labels<I>(labels: I) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let entries = labels
            .into_iter()
            .map(|l| {
                let l = l.as_ref().as_bytes();
                label::parse(l).map_err(|e| Error::invalid(Self::TYPE_NAME, l, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LabelSet {
            body: labelset::from_entries(entries),
        })
    }

    /// The borrowed core view, on which all the set algebra is defined.
    pub(crate) fn core(&self) -> pg_labels_core::LabelSet<'_> {
        pg_labels_core::LabelSet::from_canonical(&self.body)
    }

    pub(crate) fn write_text(&self, out: &mut Vec<u8>) {
        self.core().write_text(out);
    }

    pub fn len(&self) -> usize {
        self.core().len()
    }

    pub fn is_empty(&self) -> bool {
        self.body.is_empty()
    }

    /// The labels as text, in canonical order (`labelset_labels`).
    pub fn labels(&self) -> Labels<'_> {
        Labels(self.core().iter())
    }

    /// `self ? label`: the set holds this label. Like the SQL operator, a malformed label is
    /// simply not held (false), so check labels you build from input with [`LabelSet::parse`].
    pub fn has(&self, label: &str) -> bool {
        label::parse(label.as_bytes()).is_ok_and(|entry| self.core().contains(&entry))
    }

    /// `self @> other`: every label of `other` is in `self`.
    pub fn contains(&self, other: &LabelSet) -> bool {
        self.core().is_superset(other.core())
    }

    /// `self && other`: a label in both.
    pub fn overlaps(&self, other: &LabelSet) -> bool {
        self.core().overlaps(other.core())
    }

    /// `self || other`: the union.
    pub fn union(&self, other: &LabelSet) -> LabelSet {
        LabelSet {
            body: self.core().union(other.core()),
        }
    }

    /// `self <@ scope`: a run in `scope` may hold this data (see [`Scope::carries`]).
    pub fn within(&self, scope: &Scope) -> bool {
        scope.carries(self)
    }

    /// `labelset_is_trusted`: no origin label, nothing came from an untrusted source.
    pub fn is_trusted(&self) -> bool {
        self.core().is_trusted()
    }

    /// `labelset_origins`: the origin labels.
    pub fn origins(&self) -> LabelSet {
        LabelSet {
            body: self.core().origins(),
        }
    }

    /// `labelset_escaping`: the scope labels that `scope` cannot carry.
    pub fn escaping(&self, scope: &Scope) -> LabelSet {
        LabelSet {
            body: self.core().escaping(scope.path()),
        }
    }

    /// `labelset_scope`: the deepest scope that can carry the set; `None` without scope labels.
    pub fn scope(&self) -> Option<Scope> {
        self.core().scope().map(|p| Scope::from_path(p.to_vec()))
    }
}

/// `labelset(scope)`: the set holding the scope's own label (`{area:acme/platform}`).
impl From<&Scope> for LabelSet {
    fn from(scope: &Scope) -> Self {
        LabelSet {
            body: labelset::from_entries(vec![label::of_scope(scope.path())]),
        }
    }
}

impl FromStr for LabelSet {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        LabelSet::parse(s)
    }
}

impl fmt::Display for LabelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.core().to_text())
    }
}

// The derived Debug would show the internal body bytes; the text form is what people read.
impl fmt::Debug for LabelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LabelSet({self})")
    }
}

/// The labels of a [`LabelSet`] as text, in canonical order.
#[derive(Clone)]
pub struct Labels<'a>(labelset::Labels<'a>);

impl Iterator for Labels<'_> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        self.0.next().map(|l| l.to_text())
    }
}

impl<'a> IntoIterator for &'a LabelSet {
    type Item = String;
    type IntoIter = Labels<'a>;

    fn into_iter(self) -> Labels<'a> {
        self.labels()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ls(t: &str) -> LabelSet {
        t.parse().unwrap()
    }

    #[test]
    fn canonical() {
        let a = ls(r#" { tag:pii, "origin:slack/T1", area:acme/platform, tag:pii } "#);
        assert_eq!(
            a.to_string(),
            "{area:acme/platform,origin:slack/T1,tag:pii}"
        );
        assert_eq!(a.len(), 3);
        assert_eq!(
            a.labels().collect::<Vec<_>>(),
            ["area:acme/platform", "origin:slack/T1", "tag:pii"]
        );
        assert_eq!(ls("{}"), LabelSet::new());
        assert!(LabelSet::new().is_empty());
        assert_eq!(
            LabelSet::from_labels(["tag:b", "tag:a", "tag:b"]).unwrap(),
            ls("{tag:a,tag:b}")
        );
        assert!(LabelSet::from_labels(["tag:a", "secret:x"]).is_err());
        assert_eq!(
            LabelSet::from(&"acme".parse::<Scope>().unwrap()),
            ls("{company:acme}")
        );
        assert_eq!(format!("{:?}", ls("{tag:a}")), "LabelSet({tag:a})");
    }

    #[test]
    fn errors() {
        let e = "{tag:a,}".parse::<LabelSet>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid input syntax for type labelset: \"{tag:a,}\": Empty element at character 8."
        );
        let long = format!("{{{}", "tag:a,".repeat(1000));
        let Error::Invalid { text, .. } = long.parse::<LabelSet>().unwrap_err() else {
            panic!("expected Invalid");
        };
        assert_eq!(text.len(), Error::EXCERPT);
    }

    #[test]
    fn algebra() {
        let run = ls("{area:acme/platform,origin:slack}");
        assert!(run.contains(&ls("{origin:slack}")));
        assert!(!ls("{origin:slack}").contains(&run));
        assert!(run.has("origin:slack"));
        assert!(!run.has("origin:tool"));
        assert!(!run.has("not a label"));
        assert!(run.overlaps(&ls("{origin:slack,tag:x}")));
        assert!(!run.overlaps(&ls("{tag:x}")));
        assert_eq!(
            run.union(&ls("{tag:x,origin:slack}")).to_string(),
            "{area:acme/platform,origin:slack,tag:x}"
        );
        assert!(!run.is_trusted());
        assert!(ls("{tag:x}").is_trusted());
        assert_eq!(run.origins(), ls("{origin:slack}"));
        let platform: Scope = "acme/platform".parse().unwrap();
        let finance: Scope = "acme/finance".parse().unwrap();
        assert!(run.within(&platform));
        assert!(!run.within(&finance));
        assert_eq!(run.escaping(&finance), ls("{area:acme/platform}"));
        assert_eq!(run.scope(), Some(platform));
        assert_eq!(ls("{tag:x}").scope(), None);
    }
}
