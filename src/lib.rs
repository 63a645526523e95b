//! pg_labels: data barriers for AI-agent platforms, enforced inside PostgreSQL.
//!
//! This crate is the thin SQL layer over `pg_labels_core`, in four layers, each using only
//! those below it (ARCHITECTURE.md):
//!
//! - [`pg`]: PostgreSQL plumbing (calling convention, errors, SPI, table access, triggers);
//! - [`types`]: the SQL types `scope` and `labelset`;
//! - [`platform`]: the platform tables and their enforcement;
//! - [`access`]: what analysts use (entered scopes, lineage).
//!
//! The SQL surface is written by hand, in `sql/`.

pub mod access;
pub mod pg;
pub mod platform;
pub mod types;

::pgrx::pg_module_magic!(name, version);

/// On loading the library into a backend: the callbacks that end entered scopes.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::error::init_panic_location();
    access::session::init();
    platform::state::init();
    platform::approvals::init();
    platform::refused::init();
}

// The whole SQL surface is written by hand, grouped by kind, in these files.
::pgrx::extension_sql_file!("../sql/types.sql", name = "types", bootstrap);
::pgrx::extension_sql_file!(
    "../sql/functions.sql",
    name = "functions",
    requires = ["types"]
);
::pgrx::extension_sql_file!(
    "../sql/schema.sql",
    name = "schema",
    requires = ["functions"]
);
::pgrx::extension_sql_file!("../sql/citus.sql", name = "citus", requires = ["schema"]);
::pgrx::extension_sql_file!(
    "../sql/finish.sql",
    name = "finish",
    requires = ["citus"],
    finalize
);

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
    include!("pg/tests.rs");
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
