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

log "pg_regress"
REGRESS_OUT=$(mktemp -d /tmp/pg_labels_regress.XXXXXX)
mkdir -p "$REGRESS_OUT/results"
if ! "$($PG_CONFIG --pkglibdir)/pgxs/src/test/regress/pg_regress" \
        --bindir="$PGBIN" --host="$PGHOST" --port="$PGPORT" --user=postgres \
        --dbname=pg_labels_regress --load-extension=pg_labels \
        --inputdir="$ROOT/tests/pg_regress" --outputdir="$REGRESS_OUT" \
        --schedule="$ROOT/tests/pg_regress/schedule"; then
    cat "$REGRESS_OUT/regression.diffs" >&2 || true
    echo "pg_regress failed; outputs in $REGRESS_OUT" >&2
    exit 1
fi
rm -rf "$REGRESS_OUT"

log "isolation (concurrent sessions)"
ISOLATION_OUT=$(mktemp -d /tmp/pg_labels_isolation.XXXXXX)
if ! "$($PG_CONFIG --pkglibdir)/pgxs/src/test/isolation/pg_isolation_regress" \
        --bindir="$PGBIN" --host="$PGHOST" --port="$PGPORT" --user=postgres \
        --dbname=pg_labels_isolation --load-extension=pg_labels \
        --inputdir="$ROOT/tests/isolation" --outputdir="$ISOLATION_OUT" \
        --schedule="$ROOT/tests/isolation/schedule"; then
    cat "$ISOLATION_OUT/regression.diffs" >&2 || true
    echo "isolation tests failed; outputs in $ISOLATION_OUT" >&2
    exit 1
fi
rm -rf "$ISOLATION_OUT"

log "concurrency storm (pgbench, commit order checked)"
"$ROOT/tests/concurrency/run.sh"

log "pg_dump keeps the trail"
"$ROOT/tests/dump/run.sh"

log "all tests passed"
