# Retention (scripts/bench.sh purge): removing a month of a PURGE_STEPS-step trail (10,000,000),
# purge() against DELETE and VACUUM (bench/purge.sql).
# Sourced by scripts/bench.sh, which calls bench_purge in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_purge() {
    psql_q -c "DROP DATABASE IF EXISTS bench_purge" -c "CREATE DATABASE bench_purge"
    psql_q -d bench_purge -c "CREATE EXTENSION pg_labels"
    log "purge: a month of ${PURGE_STEPS:-10000000} steps, purge() against DELETE and VACUUM"
    "$PGBIN/psql" -X -q -d bench_purge -v steps="${PURGE_STEPS:-10000000}" -f "$ROOT/bench/purge.sql"
}
