//! The table of refusals in docs/reference.md ("What the triggers enforce", the error contract) says what `refusal.rs` does:
//! every rule and every check appears with its SQLSTATE and constraint name, and every
//! constraint name the table mentions is one the code raises.

use pg_labels_core::refusal::{CHECKS, RULES};
use pg_labels_core::sqlstate;

fn table() -> Vec<(String, String, String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/reference.md"))
            .expect("docs/reference.md");
    let start = readme
        .find("## What the triggers enforce")
        .expect("docs/reference.md has the table of refusals");
    let rows: Vec<(String, String, String, String)> = readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect();
            (
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                cells[3].clone(),
            )
        })
        .collect();
    assert!(rows.len() > 10, "the table was found");
    rows
}

#[test]
fn every_rule_and_check_is_in_the_readme() {
    let rows = table();
    for r in RULES {
        let name = format!("`{}`", r.rule.name());
        let state = format!("`{}`", sqlstate::text(&r.sqlstate));
        assert!(
            rows.iter()
                .any(|(rule, _, st, c)| *rule == name && *st == state && c.contains(&name)),
            "docs/reference.md: no row for rule {name} with SQLSTATE {state}"
        );
    }
    for c in CHECKS {
        let name = format!("`{}`", c.constraint);
        let state = format!("`{}`", sqlstate::text(&c.sqlstate));
        assert!(
            rows.iter()
                .any(|(_, _, st, cons)| cons.contains(&name) && *st == state),
            "docs/reference.md: no row naming constraint {name} with SQLSTATE {state}"
        );
    }
}

#[test]
fn every_constraint_the_readme_names_is_raised() {
    for (_, _, _, cons) in table() {
        for name in cons.split(", ").map(|c| c.trim_matches('`')) {
            if name == "—" || name.is_empty() {
                continue;
            }
            assert!(
                RULES.iter().any(|r| r.rule.name() == name)
                    || CHECKS.iter().any(|c| c.constraint == name),
                "docs/reference.md names constraint {name}, which no refusal carries"
            );
        }
    }
}
