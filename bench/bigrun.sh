# Big runs (scripts/bench.sh bigrun): a run carrying 100,000 labels against one carrying one,
# tool calls that add no label, pgbench -M prepared, 1 client, BIGRUN_SECONDS (10), 3 rounds
# (bench/bigrun_*.sql).
# Sourced by scripts/bench.sh, which calls bench_bigrun in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_bigrun() {
    psql_q -c "DROP ROLE IF EXISTS bench_analyst" -c "DROP DATABASE IF EXISTS bench_bigrun" -c "CREATE DATABASE bench_bigrun"
    psql_q -d bench_bigrun -c "CREATE EXTENSION pg_labels" -f "$ROOT/bench/bigrun_setup.sql"
    seconds=${BIGRUN_SECONDS:-10}
    log "bigrun: tool calls that add no label, pgbench -M prepared, 1 client, ${seconds}s, 3 rounds each, interleaved"
    small=""
    big=""
    for round in 1 2 3; do
        for v in small big; do
            tps=$("$PGBIN/pgbench" -n -M prepared -c 1 -T "$seconds" -f "$ROOT/bench/bigrun_$v.sql" bench_bigrun 2>&1 | awk '/^tps/ { print $3 }')
            if [ $v = small ]; then small="$small $tps"; else big="$big $tps"; fi
        done
    done
    s=$(echo "$small" | median)
    b=$(echo "$big" | median)
    printf '\n%-34s %10s\n' "run carrying" "tps"
    printf '%-34s %10.0f\n' "1 label" "$s" "100,000 labels" "$b"
    printf 'ratio (100,000 / 1): %.2f   goal: about 1 (the cost does not depend on the labels a run carries)\n' \
        "$(echo "$b / $s" | bc -l)"
    "$PGBIN/psql" -X -q -d bench_bigrun -f "$ROOT/bench/bigrun_after.sql"
    psql_q -d bench_bigrun -c "DROP OWNED BY bench_analyst" -c "DROP ROLE bench_analyst"
}
