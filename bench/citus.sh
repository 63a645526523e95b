# Step inserts on Citus (scripts/bench.sh citus): through a Citus coordinator and two workers
# (scripts/citus.sh) next to one node, CITUS_SECONDS (10) per variant, 3 rounds
# (bench/citus_setup.sql, bench/trail_*.sql).
# Sourced by scripts/bench.sh, which calls bench_citus in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_citus() {
    # Step inserts through a Citus coordinator (two workers, all on this machine) next to one
    # node, in the same run: the same tool_called insert (bench/trail_labels.sql) on 100 runs.
    source "$ROOT/scripts/citus.sh"
    citus_build
    trap 'citus_stop; stop_cluster' EXIT
    CITUS_EXTRA_CONF=$'fsync = off\nsynchronous_commit = off\nshared_buffers = 512MB' \
        SERVER_RUST_BACKTRACE=0 citus_cluster 9710 9711 9712
    psql_q -c "DROP DATABASE IF EXISTS bench_single" -c "CREATE DATABASE bench_single"
    psql_q -d bench_single -c "CREATE EXTENSION pg_labels" -f "$ROOT/bench/citus_setup.sql"
    cq 9710 postgres -c "CREATE EXTENSION pg_labels" -c "SELECT pg_labels.distribute()" -f "$ROOT/bench/citus_setup.sql" >/dev/null
    seconds=${CITUS_SECONDS:-10}
    log "citus: tool_called inserts, pgbench -M prepared, ${seconds}s per variant, 3 rounds, interleaved"
    declare -A tps
    for clients in 1 4 8; do
        for round in 1 2 3; do
            for v in single single_bare citus citus_bare; do
                case $v in
                    single*) conn=(-h "$PGHOST" -p "$PGPORT" bench_single) ;;
                    citus*) conn=(-h "$CITUS_BASE/9710" -p 9710 postgres) ;;
                esac
                script=labels
                [[ $v == *_bare ]] && script=plain
                t=$("$PGBIN/pgbench" -n -M prepared -c "$clients" -j "$clients" -T "$seconds" -U postgres \
                        -f "$ROOT/bench/trail_$script.sql" "${conn[@]}" 2>&1 | awk '/^tps/ { print $3 }')
                tps[$clients,$v]="${tps[$clients,$v]:-} $t"
            done
        done
    done
    printf '\n%-8s %14s %14s %14s %14s %10s %10s %12s\n' clients "(a) one node" "(b) one, bare" \
        "(c) Citus" "(d) Citus, bare" "a/b" "c/d" "c/a"
    for clients in 1 4 8; do
        a=$(echo "${tps[$clients,single]}" | median)
        b=$(echo "${tps[$clients,single_bare]}" | median)
        c=$(echo "${tps[$clients,citus]}" | median)
        d=$(echo "${tps[$clients,citus_bare]}" | median)
        printf '%-8s %14.0f %14.0f %14.0f %14.0f %10.2f %10.2f %12.2f\n' "$clients" "$a" "$b" "$c" "$d" \
            "$(echo "$a / $b" | bc -l)" "$(echo "$c / $d" | bc -l)" "$(echo "$c / $a" | bc -l)"
    done
    echo "tps, median of 3 rounds: (a) enforced steps on one node, (b) the bare table there, (c) enforced"
    echo "steps through the Citus coordinator (two workers), (d) the bare table distributed the same way;"
    echo "the three Citus nodes and pgbench share this machine's cores"
    cq 9710 postgres -c "SELECT 'steps through the coordinator: ' || count(*) FROM pg_labels.steps"
}
