#!/usr/bin/env bash
# Benchmarks, run on demand (not in CI): builds the release build, starts a throwaway cluster
# and prints, from one run, ratios of pg_labels against PostgreSQL's own types.
#   scripts/bench.sh            the types (bench/types.sql)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup
install_extension release
PG_EXTRA_OPTS="-c shared_buffers=1GB -c work_mem=64MB -c max_wal_size=4GB -c synchronous_commit=off" start_cluster
psql_q -c "CREATE EXTENSION pg_labels"
log "types: 1M rows against ltree and text[] (a few minutes)"
"$PGBIN/psql" -X -q -f "$ROOT/bench/types.sql"
