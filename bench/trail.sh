# Trail inserts with pgbench (scripts/bench.sh trail; BENCHMARKS.md, "Trail inserts" and "The
# hash chain"): (a) the enforced trail against (b) a plain table, (c) a PL/pgSQL implementation
# of the same rules (bench/trail_*.sql) and (d) the same trail without its hash chain, TRAIL_ROUNDS
# (3) rounds of TRAIL_SECONDS (10) per variant, interleaved; TRAIL_STORAGE=1 adds (e), the
# chain's hashes stored without the chain. Then verify_all() over the trail just written.
# Sourced by scripts/bench.sh, which calls bench_trail in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_trail() {
    psql_q -c "DROP DATABASE IF EXISTS bench_trail" -c "CREATE DATABASE bench_trail"
    psql_q -d bench_trail -c "CREATE EXTENSION pg_labels" -f "$ROOT/bench/trail_setup.sql"
    # (d) the same trail without its hash chain (its columns dropped: the trigger then takes
    # the path of a table that has none), for the chain's cost in the same run
    psql_q -c "DROP DATABASE IF EXISTS bench_nochain" -c "CREATE DATABASE bench_nochain"
    no_chain=(-c "ALTER TABLE pg_labels.steps DROP COLUMN prev_hash, DROP COLUMN hash"
              -c "ALTER TABLE pg_labels.runs DROP COLUMN opened_labels, DROP COLUMN chain_head, DROP COLUMN chain_slot, DROP COLUMN chain_cut, DROP COLUMN chain_cut_length")
    psql_q -d bench_nochain -c "CREATE EXTENSION pg_labels" "${no_chain[@]}" -f "$ROOT/bench/trail_setup.sql"
    # (e), with TRAIL_STORAGE=1: (d) with room for the chain's two hashes stored in every row
    # (two 32-byte bytea columns filled by their defaults), which splits the chain's cost into
    # storing its hashes (e against d) and computing them (a against e)
    dbs=(bench_trail bench_nochain)
    if [ -n "${TRAIL_STORAGE:-}" ]; then
        dbs+=(bench_stored)
        psql_q -c "DROP DATABASE IF EXISTS bench_stored" -c "CREATE DATABASE bench_stored"
        psql_q -d bench_stored -c "CREATE EXTENSION pg_labels" "${no_chain[@]}" \
            -c "ALTER TABLE pg_labels.steps ADD COLUMN room_prev bytea DEFAULT decode(repeat('ab', 32), 'hex'), ADD COLUMN room_hash bytea DEFAULT decode(repeat('cd', 32), 'hex')" \
            -f "$ROOT/bench/trail_setup.sql"
    fi
    # Same conditions for every run: no autovacuum in the middle of one, and each starts after a
    # VACUUM (which also empties the GIN pending lists).
    for db in "${dbs[@]}"; do
        for t in pg_labels.runs bench_plain.steps bench_plpgsql.steps bench_plpgsql.runs; do
            psql_q -d $db -c "ALTER TABLE $t SET (autovacuum_enabled = off)"
        done
        # the trail is partitioned: the setting is each partition's
        echo "SELECT format('ALTER TABLE %s SET (autovacuum_enabled = off)', inhrelid::regclass)
                FROM pg_inherits WHERE inhparent = 'pg_labels.steps'::regclass \gexec" | psql_q -d $db
    done
    seconds=${TRAIL_SECONDS:-10}
    rounds=${TRAIL_ROUNDS:-3}
    log "trail: tool_called inserts, pgbench -M prepared, $rounds rounds of ${seconds}s per variant, variants interleaved"
    declare -A runs pairs
    for clients in 1 2; do
        for round in $(seq "$rounds"); do
            # the order reversed from round to round; (a) and (d) always one right after the
            # other, so that each round's a/d compares the two under the same conditions
            order=(labels nochain plain plpgsql)
            [ $((round % 2)) = 0 ] && order=(plpgsql plain nochain labels)
            [ -n "${TRAIL_STORAGE:-}" ] && order=(stored "${order[@]}")
            for v in "${order[@]}"; do
                db=bench_trail script=$v
                [ "$v" = nochain ] && db=bench_nochain script=labels
                [ "$v" = stored ] && db=bench_stored script=labels
                psql_q -d $db -c "VACUUM pg_labels.steps, pg_labels.runs, bench_plain.steps, bench_plpgsql.steps, bench_plpgsql.runs"
                tps=$("$PGBIN/pgbench" -n -M prepared -c "$clients" -j "$clients" -T "$seconds" \
                        -f "$ROOT/bench/trail_$script.sql" $db 2>&1 | awk '/^tps/ { print $3 }')
                runs[$clients,$v]="${runs[$clients,$v]:-} $tps"
                [ "$v" = nochain ] && d_tps=$tps
                [ "$v" = labels ] && a_tps=$tps
            done
            pairs[$clients]="${pairs[$clients]:-} $(echo "$a_tps / $d_tps" | bc -l)"
        done
    done
    printf '\n%-8s %14s %14s %14s %14s %8s %8s %8s %8s %10s\n' clients "(a) enforced" "(b) plain" "(c) plpgsql" "(d) no chain" "a/b" "a/c" "d/b" "a/d" "rounds a/d"
    for clients in 1 2; do
        a=$(echo "${runs[$clients,labels]}" | median)
        b=$(echo "${runs[$clients,plain]}" | median)
        c=$(echo "${runs[$clients,plpgsql]}" | median)
        d=$(echo "${runs[$clients,nochain]}" | median)
        p=$(echo "${pairs[$clients]}" | median)
        printf '%-8s %14.0f %14.0f %14.0f %14.0f %8.2f %8.2f %8.2f %8.3f %10.3f\n' "$clients" "$a" "$b" "$c" "$d" \
            "$(echo "$a / $b" | bc -l)" "$(echo "$a / $c" | bc -l)" "$(echo "$d / $b" | bc -l)" "$(echo "$a / $d" | bc -l)" "$p"
        echo "         rounds' a/d: $(echo "${pairs[$clients]}" | tr ' ' '\n' | grep -v '^$' | xargs printf '%.3f ')"
        echo "         95% interval of the rounds' median a/d: $(echo "${pairs[$clients]}" | interval)"
        if [ -n "${TRAIL_STORAGE:-}" ]; then
            e=$(echo "${runs[$clients,stored]}" | median)
            printf '         (e) the hashes stored, no chain: %.0f tps; e/d %.3f (storing), a/e %.3f (computing)\n' \
                "$e" "$(echo "$e / $d" | bc -l)" "$(echo "$a / $e" | bc -l)"
        fi
    done
    echo "tps, median of $rounds rounds; goals: a/b >= 0.75, a/c >= 1.5; the hash chain: a/d >= 0.97 (issue 17)"
    echo "(rounds a/d: the median of each round's a/d, (a) and (d) run one right after the other)"
    "$PGBIN/psql" -X -q -d bench_trail -c "SELECT 'pg_labels.steps' AS t, count(*) FROM pg_labels.steps UNION ALL SELECT 'bench_plain.steps', count(*) FROM bench_plain.steps UNION ALL SELECT 'bench_plpgsql.steps', count(*) FROM bench_plpgsql.steps"
    # the hash chains of the trail just written, checked again (issue 17)
    log "verify_all() over the trail just written"
    start=$(date +%s.%N)
    steps=$("$PGBIN/psql" -X -qAt -d bench_trail -c "SET client_min_messages = warning" \
        -c "SELECT count(*) FILTER (WHERE how IS NOT NULL) FROM pg_labels.verify_all()" \
        -c "SELECT count(*) FROM pg_labels.steps" | tail -2 | paste -sd' ')
    secs=$(echo "$(date +%s.%N) - $start" | bc -l)
    printf 'verify_all(): broken runs and steps checked: %s, in %.1f s: %.0f steps/s\n' "$steps" "$secs" \
        "$(echo "${steps#* } / $secs" | bc -l)"
}
