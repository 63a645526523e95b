//! Statements built at run time: [`Sql`], made only of the extension's own text, quoted
//! identifiers and quoted literals.

/// A statement built at run time, for what a saved plan cannot name: a table found at run
/// time, DDL. It is made only of the extension's own text (`&'static str`) and identifiers,
/// each quoted ([`Sql::ident`]); values never enter it: they go as parameters
/// ([`crate::pg::spi::run_with`]), or, where a statement takes none (`SET`), as a quoted
/// [`Sql::literal`].
/// (`tests/structure` refuses SQL text built any other way.)
pub struct Sql(String);

impl Sql {
    pub fn new(text: &'static str) -> Sql {
        Sql(text.to_string())
    }

    /// More of the statement's own text.
    pub fn push(mut self, text: &'static str) -> Sql {
        self.0.push_str(text);
        self
    }

    /// An identifier, always double-quoted (as `quote_ident` would when it must).
    pub fn ident(mut self, name: &str) -> Sql {
        self.0.push('"');
        self.0.push_str(&name.replace('"', "\"\""));
        self.0.push('"');
        self
    }

    /// `pg_labels."name"`.
    pub fn platform(self, name: &str) -> Sql {
        self.push("pg_labels.").ident(name)
    }

    /// Several pieces joined by `sep`.
    pub fn join(mut self, parts: impl IntoIterator<Item = Sql>, sep: &'static str) -> Sql {
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                self.0.push_str(sep);
            }
            self.0.push_str(&part.0);
        }
        self
    }

    /// A literal of the extension's own making (a scope's text, say), quoted as
    /// `quote_literal` quotes: doubled single quotes, and the `E'...'` form with doubled
    /// backslashes when there are any, so that `standard_conforming_strings` cannot change
    /// what it says.
    pub fn literal(mut self, value: &str) -> Sql {
        if value.contains('\\') {
            self.0.push_str(" E'");
            self.0
                .push_str(&value.replace('\\', "\\\\").replace('\'', "''"));
        } else {
            self.0.push('\'');
            self.0.push_str(&value.replace('\'', "''"));
        }
        self.0.push('\'');
        self
    }

    pub fn text(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Sql;

    #[test]
    fn quoting() {
        let s = Sql::new("SELECT ")
            .ident("a\"b")
            .push(", ")
            .literal("it's")
            .push(", ")
            .literal("a\\'b");
        assert_eq!(s.text(), "SELECT \"a\"\"b\", 'it''s',  E'a\\\\''b'");
        let j =
            Sql::new("DROP VIEW ").join(["x", "y"].iter().map(|n| Sql::new("").platform(n)), ", ");
        assert_eq!(j.text(), "DROP VIEW pg_labels.\"x\", pg_labels.\"y\"");
    }
}
