// `#[pg_test]`s: what needs a backend but is not a SQL scenario (those are in
// `tests/pg_regress`). Included into `mod tests` by lib.rs.

use pgrx::prelude::*;

/// An error raised through `error::raise` reaches PL/pgSQL with its SQLSTATE (not XX000).
#[pg_test(error = "caught 22P02")]
fn raised_errors_keep_their_sqlstate() {
    Spi::run(
        "DO $$ BEGIN PERFORM 'Acme'::scope; EXCEPTION WHEN OTHERS THEN
           RAISE EXCEPTION 'caught %', SQLSTATE; END $$",
    )
    .unwrap();
}

/// The aggregate's transition function hands back its state when nothing new arrives.
#[pg_test]
fn union_aggregate_over_many_rows() {
    Spi::run(
        "CREATE TEMP TABLE pu AS SELECT labelset(ARRAY['tag:t' || (i % 50)]) l
         FROM generate_series(1, 20000) i",
    )
    .unwrap();
    let serial = Spi::get_one::<String>("SELECT labelset_union(l)::text FROM pu").unwrap();
    assert_eq!(serial.map(|s| s.matches(',').count()), Some(49));
}

