#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine as root: installs what is missing, then runs
#   1. the core's unit and property tests (plain cargo test, no database),
#   2. the #[pg_test]s (cargo pgrx test, in a cluster of their own),
#   3. the pg_regress suite, the isolation suite (concurrent sessions, step by step) and a
#      concurrency storm (pgbench clients on shared runs, commit order checked) and a pg_dump
#      round trip, against a throwaway PostgreSQL 15 cluster.
# Exits non-zero on the first failure; a second run reuses what is installed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup
cd "$ROOT"

log "core: unit and property tests"
cargo test -p pg_labels_core --release

log "#[pg_test]s"
PGTEST_DATA=/tmp/pg_labels_pgtest
rm -rf "$PGTEST_DATA"
cargo pgrx test pg15 --runas postgres --pgdata "$PGTEST_DATA"
rm -rf "$PGTEST_DATA"

# cargo pgrx test leaves its debug build installed: put the tested build in its place.
install_extension ci
PG_EXTRA_OPTS="-c track_commit_timestamp=on" start_cluster
export PG_LABELS_SCRATCH=$CLUSTER_DIR

# Run a pg_regress-style suite: $1 the driver (under pgxs/src/test), $2 the directory under
# tests/ with its schedule, sql or specs, and expected outputs.
run_suite() {
    local out
    out=$(mktemp -d "/tmp/pg_labels_$2.XXXXXX")
    mkdir -p "$out/results"
    if ! "$($PG_CONFIG --pkglibdir)/pgxs/src/test/$1" \
            --bindir="$PGBIN" --host="$PGHOST" --port="$PGPORT" --user=postgres \
            --dbname="pg_labels_$2" --load-extension=pg_labels \
            --inputdir="$ROOT/tests/$2" --outputdir="$out" \
            --schedule="$ROOT/tests/$2/schedule"; then
        cat "$out/regression.diffs" >&2 || true
        echo "$2 failed; outputs in $out" >&2
        exit 1
    fi
    rm -rf "$out"
}

log "pg_regress"
run_suite regress/pg_regress pg_regress

log "isolation (concurrent sessions)"
run_suite isolation/pg_isolation_regress isolation

log "concurrency storm (pgbench, commit order checked)"
"$ROOT/tests/concurrency/run.sh"

log "pg_dump keeps the trail"
"$ROOT/tests/dump/run.sh"

log "all tests passed"
