use crate::{Error, LabelSet};
use pg_labels_core::scope;
use std::fmt;
use std::str::FromStr;

/// A value of the SQL type `scope`: `*` (the installation), a company (`acme`), an area
/// (`acme/platform`) or a sub-area.
///
/// It holds the core's internal path, so comparisons are the core's (and the server's):
/// `Ord` is the btree order of `scope`, in which a scope sorts right before its descendants.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Scope {
    path: Vec<u8>,
}

impl Scope {
    pub(crate) const TYPE_NAME: &'static str = "scope";

    /// `*`, the root of the tree: it reaches every scope.
    pub fn installation() -> Self {
        Scope { path: Vec::new() }
    }

    /// Parse the text form, as `'...'::scope` does.
    pub fn parse(text: &str) -> Result<Self, Error> {
        Self::from_text(text.as_bytes())
    }

    /// Parse text from the wire, which need not be UTF-8 (the grammar refuses what is not).
    pub(crate) fn from_text(text: &[u8]) -> Result<Self, Error> {
        scope::parse(text)
            .map(|path| Scope { path })
            .map_err(|e| Error::invalid(Self::TYPE_NAME, text, e))
    }

    /// Wrap a path the core made (always valid).
    pub(crate) fn from_path(path: Vec<u8>) -> Self {
        Scope { path }
    }

    pub(crate) fn path(&self) -> &[u8] {
        &self.path
    }

    pub(crate) fn write_text(&self, out: &mut Vec<u8>) {
        scope::write_text(&self.path, out);
    }

    pub fn is_installation(&self) -> bool {
        self.path.is_empty()
    }

    /// `self @> other`: `self` is `other` or one of its ancestors.
    pub fn reaches(&self, other: &Scope) -> bool {
        scope::reaches(&self.path, &other.path)
    }

    /// `self @> labels`: a run in this scope may hold the data, i.e. the scope reaches the
    /// scope of every scope label (origin and tag labels never block). The barrier rule.
    pub fn carries(&self, labels: &LabelSet) -> bool {
        labels.core().carried_by(&self.path)
    }

    /// `scope_depth`: 0 for `*`, 1 for a company, 2 for an area, ...
    pub fn depth(&self) -> usize {
        scope::depth(&self.path)
    }

    /// `scope_parent`: the enclosing scope, `None` for `*`.
    pub fn parent(&self) -> Option<Scope> {
        scope::parent(&self.path).map(|p| Scope { path: p.to_vec() })
    }
}

impl FromStr for Scope {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Scope::parse(s)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&scope::to_text(&self.path))
    }
}

// The derived Debug would show the internal path bytes; the text form is what people read.
impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scope({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Scope {
        t.parse().unwrap()
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(s("acme/platform").to_string(), "acme/platform");
        assert_eq!(s("*"), Scope::installation());
        assert_eq!(Scope::installation().to_string(), "*");
        assert_eq!(format!("{:?}", s("acme")), "Scope(acme)");
        let e = "acme/".parse::<Scope>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid input syntax for type scope: \"acme/\": Trailing \"/\" at character 5."
        );
        assert!("".parse::<Scope>().is_err());
        assert!("Acme".parse::<Scope>().is_err());
    }

    #[test]
    fn tree() {
        assert!(s("acme").reaches(&s("acme/platform")));
        assert!(s("acme/platform").reaches(&s("acme/platform")));
        assert!(!s("acme/platform").reaches(&s("acme")));
        assert!(!s("acme/plat").reaches(&s("acme/platform")));
        assert!(Scope::installation().reaches(&s("globex")));
        assert_eq!(s("acme/platform/infra").depth(), 3);
        assert_eq!(s("acme/platform").parent(), Some(s("acme")));
        assert_eq!(s("acme").parent(), Some(Scope::installation()));
        assert_eq!(Scope::installation().parent(), None);
        // Tree order: a scope sorts right before its descendants.
        let mut v = vec![s("acme-x"), s("acme/b"), s("acme"), s("*")];
        v.sort();
        assert_eq!(v, [s("*"), s("acme"), s("acme/b"), s("acme-x")]);
    }
}
