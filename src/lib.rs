//! pg_labels: data barriers for AI-agent platforms, enforced inside PostgreSQL.
//!
//! This crate is the thin SQL layer over `pg_labels_core`: the calling convention
//! ([`fmgr`]), the error mapping ([`error`]), one module per SQL type or concern, and the
//! hand-written SQL script in `sql/`.
//!
//! Nearly every function here is `unsafe` for the same reason: it reads datums, tuples or
//! trigger data handed over by PostgreSQL, valid for the duration of the call. Each module's
//! header says what it relies on; the functions do not repeat it.
#![allow(clippy::missing_safety_doc)]
// sql_function! bodies are unsafe by design: they read fcinfo's arguments.
#![allow(clippy::macro_metavars_in_unsafe)]

pub mod approval;
pub mod catch;
pub mod crossing;
pub mod error;
pub mod fmgr;
pub mod heap;
pub mod labelset;
pub mod labelset_gin;
pub mod provenance;
pub mod publication;
pub mod refusal;
pub mod retention;
pub mod scope;
pub mod scope_support;
pub mod seal;
pub mod session;
pub mod sharing;
pub mod spi;
pub mod trail;

::pgrx::pg_module_magic!(name, version);

/// On loading the library into a backend: the callbacks that end entered scopes.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    unsafe { session::init() }
}

// The whole SQL surface is written by hand, grouped by kind, in these files.
::pgrx::extension_sql_file!("../sql/types.sql", name = "types", bootstrap);
::pgrx::extension_sql_file!(
    "../sql/platform.sql",
    name = "platform",
    requires = ["types"]
);
::pgrx::extension_sql_file!(
    "../sql/sharing.sql",
    name = "sharing",
    requires = ["platform"]
);
::pgrx::extension_sql_file!(
    "../sql/publication.sql",
    name = "publication",
    requires = ["sharing"]
);
::pgrx::extension_sql_file!("../sql/rls.sql", name = "rls", requires = ["publication"]);
::pgrx::extension_sql_file!(
    "../sql/provenance.sql",
    name = "provenance",
    requires = ["rls"],
    finalize
);

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
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
