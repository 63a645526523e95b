# Writers bound by their grants (scripts/bench.sh grants, issue 46): single-row steps/s of a
# writer bound to its area by its grants against a writer granted *, pgbench -M prepared, 1
# client, GRANTS_ROUNDS (7) rounds of GRANTS_SECONDS (10) each, the order reversed every other
# round; the rounds' ratios, median and 95% interval.
# Sourced by scripts/bench.sh, which calls bench_grants in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_grants() {
    psql_q -c "DROP DATABASE IF EXISTS bench_grants" -c "CREATE DATABASE bench_grants"
    psql_q -d bench_grants -c "CREATE EXTENSION pg_labels" -f - <<'SQL'
INSERT INTO pg_labels.tools (name, effect) VALUES ('tickets.read', 'read');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(1, 100) i;
DO $$ BEGIN
    DROP ROLE IF EXISTS bench_star;
    DROP ROLE IF EXISTS bench_scoped;
    CREATE ROLE bench_star LOGIN;
    CREATE ROLE bench_scoped LOGIN;
END $$;
GRANT USAGE ON SCHEMA pg_labels TO bench_star, bench_scoped;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO bench_star, bench_scoped;
GRANT SELECT ON pg_labels.tools TO bench_star, bench_scoped;
-- the scoped writer acts in its area, with two other grants beside (a role of a few areas)
INSERT INTO pg_labels.grants (role, scope) VALUES ('bench_star', '*'),
  ('bench_scoped', 'acme/platform'), ('bench_scoped', 'acme/finance'), ('bench_scoped', 'globex/support');
SQL
    echo "SELECT format('ALTER TABLE %s SET (autovacuum_enabled = off)', c) FROM unnest(ARRAY['pg_labels.runs'::regclass]
            || ARRAY(SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'pg_labels.steps'::regclass)) c \gexec" |
        psql_q -d bench_grants
    seconds=${GRANTS_SECONDS:-10}
    rounds=${GRANTS_ROUNDS:-7}
    log "grants: single-row tool_called inserts as a scoped writer and as a * writer, $rounds rounds of ${seconds}s each"
    declare -A gtps
    ratios=""
    for round in $(seq "$rounds"); do
        order=(bench_scoped bench_star)
        [ $((round % 2)) = 0 ] && order=(bench_star bench_scoped)
        for who in "${order[@]}"; do
            psql_q -d bench_grants -c "VACUUM pg_labels.steps, pg_labels.runs"
            t=$("$PGBIN/pgbench" -n -M prepared -c 1 -j 1 -T "$seconds" -U "$who" \
                    -f "$ROOT/bench/trail_labels.sql" bench_grants 2>&1 | awk '/^tps/ { print $3 }')
            gtps[$who]="${gtps[$who]:-} $t"
            echo "round $round: $who $t tps"
        done
        ratios="$ratios $(echo "${gtps[bench_scoped]##* } ${gtps[bench_star]##* }" | awk '{ printf "%.3f", $1 / $2 }')"
    done
    sc=$(echo "${gtps[bench_scoped]}" | median); st=$(echo "${gtps[bench_star]}" | median)
    echo "single-row steps, 1 client, medians of $rounds rounds: scoped writer $sc tps, * writer $st tps"
    echo "  scoped / *: $(echo "$sc $st" | awk '{ printf "%.3f", $1 / $2 }'); the rounds':$ratios;" \
         "median $(echo "$ratios" | median), 95% interval $(echo "$ratios" | interval) (goal: >= 0.97)"
}
