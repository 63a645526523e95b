#!/usr/bin/env bash
# The client crate (client/, package pg_labels_types) against a running server:
# its unit and property tests, its round trip through the server (tests/roundtrip.rs) and the
# example. Needs PGHOST/PGPORT/PGUSER of a cluster where pg_labels is installed (this script
# does not install it); makes a fresh database pg_labels_client there and drops it at the end.
set -euo pipefail

cd "$(dirname "$0")/../.."
: "${PGHOST:?set PGHOST (host or socket directory) of a cluster with pg_labels installed}"
: "${PGPORT:?set PGPORT}"
: "${PGUSER:?set PGUSER}"
export PGHOST PGPORT PGUSER

db=pg_labels_client
admin() { "${PGBIN:+$PGBIN/}psql" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }

admin -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
# Drop it on the way out too, should a step fail (a failing test leaves no connection open).
trap 'admin -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT
"${PGBIN:+$PGBIN/}psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_labels"

export PGDATABASE=$db
PG_LABELS_CLIENT_DB=$db cargo test -p pg_labels_types
# The sqlx impls are behind a feature: build and unit-test them too.
cargo test -p pg_labels_types --features sqlx --lib
cargo run -q -p pg_labels_types --example platform

# (WITH FORCE: the refusal recorder of the database, which the example's refusal started, may
# still be connected to it; PostgreSQL waits 5 s only for autovacuum to leave)
admin -c "DROP DATABASE $db WITH (FORCE)"
trap - EXIT
echo "client: ok"
