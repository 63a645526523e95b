#!/usr/bin/env bash
# Benchmarks, run on demand (not in CI): builds the release build, starts a throwaway cluster
# and prints, from one run, ratios of pg_labels against PostgreSQL's own types and against a
# plain table and a PL/pgSQL implementation of the same rules, and the publication check's time.
#   scripts/bench.sh            both
#   scripts/bench.sh types      the types (bench/types.sql)
#   scripts/bench.sh trail      trail inserts with pgbench (bench/trail_*.sql), then
#                               verify_all() over that trail (steps/s); TRAIL_ROUNDS,
#                               TRAIL_SECONDS; TRAIL_STORAGE=1 adds the chain's hashes stored
#                               without the chain (its cost split into storing and computing)
#   scripts/bench.sh grants     single-row steps/s of a writer bound to its area by its grants
#                               against a writer granted * (issue 46): pgbench -M prepared, 1
#                               client, GRANTS_ROUNDS rounds (7) of GRANTS_SECONDS (10) each,
#                               the order reversed every other round; the rounds' ratios,
#                               median and 95% interval
#   scripts/bench.sh publication  the publication check on 10,000-step declarations
#   scripts/bench.sh lineage    lineage over a 10,000-run chain
#   scripts/bench.sh bigrun     a run carrying 100,000 labels against one carrying one
#   scripts/bench.sh instructions  instructions per trail insert, counted by callgrind (a
#                               repeatable figure on a noisy machine; not part of "all"), with
#                               and without the trail's hash chain
#   scripts/bench.sh citus      step inserts through a Citus coordinator and two workers next
#                               to one node (not part of "all")
#   scripts/bench.sh flood      a flood of refusals from 16 sessions against other roles'
#                               allowed writes, this tree against release 0.3.0 (a worker per
#                               refusing backend), each built into its own PostgreSQL 16, and
#                               what one worker writes a second (bench/flood.sh; FLOOD_ROUNDS,
#                               FLOOD_SECONDS, FLOOD_CLIENTS; not part of "all": ~25 minutes
#                               with the builds)
#   scripts/bench.sh shm        /dev/shm with 20 idle sessions that refused once, 0.3.0 against
#                               this tree, on the servers "flood" built (bench/shm.sh)
#   scripts/bench.sh purge      removing a month of a 10M-step trail: purge() against DELETE
#                               (PURGE_STEPS=n for another size; not part of "all": ~10 minutes)
#   scripts/bench.sh readers    what the index-page reader (src/pg/btree.rs) pays for: single-row
#                               inserts into a trail of READERS_STEPS steps (10,000,000) over
#                               10,000 runs, this build against one whose runs' last steps are
#                               found by PostgreSQL's index scan (feature bench_api_probe), the
#                               two libraries swapped with a restart between rounds
#                               (READERS_ROUNDS, 5; READERS_SECONDS, 20; not part of "all")
#   scripts/bench.sh scale      the trail at scale (issues 18, 38): a trail of SCALE_STEPS steps
#                               (default 10,000,000) over SCALE_RUNS runs (10,000), and the
#                               same rows in the bare table, in the floor (the bare table
#                               partitioned as the trail, with a C trigger that does almost
#                               nothing) and in the run floor (the floor's trigger also locking
#                               the run and reading its row and last step, bench/run_floor.c,
#                               built here with PGXS); then every write into all four, in
#                               SCALE_ROUNDS rounds (7) with the order reversed every other
#                               round, each ratio
#                               reported with its rounds' median and 95% interval: single-row
#                               inserts and their WAL (over SCALE_WAL_STEPS steps, 40,000, the
#                               same for each), 8 clients on one run and on 8 runs, bursts of 8
#                               parallel calls on one run (SCALE_BURSTS a round, 500;
#                               bench/burst.py), COPY (SCALE_COPY rows, 1,000,000) and
#                               INSERT ... SELECT (100,000) in SCALE_BULK_ROUNDS rounds (6), and
#                               the analysts' queries against the superuser's (not part of "all";
#                               about 40 minutes)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
what=${1:-all}

# (its own servers and builds: none of the cluster below)
if [ "$what" = flood ]; then
    setup
    ROOT=$ROOT exec "$ROOT/bench/flood.sh"
fi
if [ "$what" = shm ]; then
    ROOT=$ROOT exec "$ROOT/bench/shm.sh"
fi

setup
install_extension release
SERVER_RUST_BACKTRACE=0 PG_EXTRA_OPTS="-c shared_buffers=1GB -c work_mem=64MB -c max_wal_size=4GB -c synchronous_commit=off" start_cluster

source "$ROOT/bench/stats.sh"

# A fresh database with the extension, then one benchmark script in it: $1 name, $2 what it
# measures (for the log). The scripts are in bench/<name>.sql.
bench_in_db() {
    psql_q -c "DROP DATABASE IF EXISTS bench_$1" -c "CREATE DATABASE bench_$1"
    psql_q -d "bench_$1" -c "CREATE EXTENSION pg_labels"
    log "$1: $2"
    "$PGBIN/psql" -X -q -d "bench_$1" -f "$ROOT/bench/$1.sql"
}

if [ "$what" = all ] || [ "$what" = types ]; then
    bench_in_db types "1M rows against ltree and text[] (a few minutes)"
fi

if [ "$what" = all ] || [ "$what" = trail ]; then
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
fi

if [ "$what" = all ] || [ "$what" = grants ]; then
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
fi

if [ "$what" = all ] || [ "$what" = publication ]; then
    bench_in_db publication "10,000-step declarations, checked against unchecked"
fi

if [ "$what" = all ] || [ "$what" = lineage ]; then
    psql_q -c "DROP ROLE IF EXISTS bench_analyst"
    bench_in_db lineage "a 10,000-run chain"
    psql_q -d bench_lineage -c "DROP OWNED BY bench_analyst" -c "DROP ROLE bench_analyst"
fi

if [ "$what" = all ] || [ "$what" = bigrun ]; then
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
fi

if [ "$what" = citus ]; then
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
fi

if [ "$what" = purge ]; then
    psql_q -c "DROP DATABASE IF EXISTS bench_purge" -c "CREATE DATABASE bench_purge"
    psql_q -d bench_purge -c "CREATE EXTENSION pg_labels"
    log "purge: a month of ${PURGE_STEPS:-10000000} steps, purge() against DELETE and VACUUM"
    "$PGBIN/psql" -X -q -d bench_purge -v steps="${PURGE_STEPS:-10000000}" -f "$ROOT/bench/purge.sql"
fi

if [ "$what" = scale ]; then
    steps=${SCALE_STEPS:-10000000}
    nruns=${SCALE_RUNS:-10000}
    ncopy=${SCALE_COPY:-1000000}
    seconds=${SCALE_SECONDS:-10}
    rounds=${SCALE_ROUNDS:-7}
    bulk_rounds=${SCALE_BULK_ROUNDS:-6}
    nwal=${SCALE_WAL_STEPS:-40000}
    psql_q -c "DROP DATABASE IF EXISTS bench_scale" -c "DROP ROLE IF EXISTS bench_analyst" -c "CREATE DATABASE bench_scale"
    psql_q -d bench_scale -c "CREATE EXTENSION pg_labels" -f "$ROOT/bench/trail_setup.sql"
    log "scale: loading a trail of $steps steps over $nruns runs, and the same steps into the bare table"
    start=$(date +%s)
    psql_q -d bench_scale -v steps="$steps" -v runs="$nruns" -f "$ROOT/bench/scale_setup.sql" >/dev/null
    # the run floor: the floor plus what any enforcement chaining and deciding a run's steps asks
    # of PostgreSQL (bench/run_floor.c), built against this server
    floor_build=$(mktemp -d /tmp/pg_labels_run_floor.XXXXXX)
    cp "$ROOT/bench/run_floor.c" "$floor_build/"
    printf '%s\n' "MODULES = run_floor" "PG_CONFIG = $PG_CONFIG" 'PGXS := $(shell $(PG_CONFIG) --pgxs)' \
        'include $(PGXS)' >"$floor_build/Makefile"
    make -s -C "$floor_build" >/dev/null
    rm -f "$("$PG_CONFIG" --pkglibdir)/bench_run_floor.so"
    cp "$floor_build/run_floor.so" "$("$PG_CONFIG" --pkglibdir)/bench_run_floor.so"
    rm -rf "$floor_build"
    psql_q -d bench_scale -f "$ROOT/bench/run_floor.sql" >/dev/null
    echo "loaded in $(($(date +%s) - start)) s"
    loaded=$("$PGBIN/psql" -X -qAt -d bench_scale -c "SELECT max(id) FROM pg_labels.steps")
    work=$(mktemp -d /tmp/pg_labels_scale.XXXXXX)
    chmod 755 "$work"
    chown postgres: "$work"
    # the pgbench scripts: $1 the table's schema, $2 which run (an expression)
    script() {
        printf '%s\n' "\\set r $2" \
            "INSERT INTO $1.steps (run_id, kind, tool, labels, args) VALUES (md5('scale' || :r)::uuid, 'tool_called', 'tickets.read', E'{area\\x3aacme/platform}', '{\"ticket\": 42}');"
    }
    for t in pg_labels bench_plain bench_floor bench_run_floor; do
        script $t "random(1, $nruns)" >"$work/random_$t.sql"
        script $t 1 >"$work/one_$t.sql"
        script $t ":client_id + 1" >"$work/own_$t.sql"
    done
    lsn() { "$PGBIN/psql" -X -qAt -d bench_scale -c "SELECT pg_current_wal_insert_lsn()"; }
    declare -A tps wal timed_wal
    # WAL per step from a checkpoint: most of it is full-page images, one per page first
    # written after the checkpoint (the runs' last index leaves, 10,000 of them), as many for
    # both tables when they write the same runs. Over a fixed time the slower table shares them
    # among fewer steps, so its WAL per step reads higher for being slower (the timed rounds'
    # figure, printed too); the WAL ratio is read over the same steps: the same number of
    # inserts, with the same random seed (the same runs in the same order), for both tables.
    walsteps() { # $1 workload, $2 table, $3 clients, $4 pgbench's arguments: WAL bytes per step
        psql_q -d bench_scale -c "CHECKPOINT"
        local l0 out n
        l0=$(lsn)
        out=$("$PGBIN/pgbench" -n -M prepared -c "$3" -j "$3" $4 -f "$work/${1}_$2.sql" bench_scale 2>&1)
        n=$(echo "$out" | awk '/number of transactions actually processed/ { print $NF }' | cut -d/ -f1)
        echo "$out" | awk '/^tps/ { print $3 }'
        "$PGBIN/psql" -X -qAt -d bench_scale -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$l0') / $n)"
    }
    # The counted rounds come first: the size of a full-page image depends on how full the
    # page is, so both tables must have had the same inserts before (after the timed rounds the
    # faster one has split more leaves, whose images are then smaller).
    log "scale: WAL per step, $nwal steps per variant, 3 rounds, interleaved"
    for round in 1 2 3; do
        for w in random one own; do
            clients=8
            [ $w = random ] && clients=1
            for t in pg_labels bench_plain; do
                out=$(walsteps $w $t $clients "-t $((nwal / clients)) --random-seed=$round")
                wal[$w,$t]="${wal[$w,$t]:-} $(echo "$out" | tail -1)"
            done
        done
    done
    log "scale: pgbench -M prepared, ${seconds}s per variant, $rounds rounds, interleaved"
    # each round's enforced / floor and enforced / bare, the three tables one right after the
    # other (in the reverse order every other round): their spread over rounds
    declare -A rf rb rr fr br
    for round in $(seq "$rounds"); do
        for w in random one own; do
            clients=8
            [ $w = random ] && clients=1
            order=(pg_labels bench_run_floor bench_floor bench_plain)
            [ $((round % 2)) = 0 ] && order=(bench_plain bench_floor bench_run_floor pg_labels)
            declare -A this
            for t in "${order[@]}"; do
                out=$(walsteps $w $t $clients "-T $seconds --random-seed=$round")
                this[$t]=$(echo "$out" | head -1)
                tps[$w,$t]="${tps[$w,$t]:-} ${this[$t]}"
                timed_wal[$w,$t]="${timed_wal[$w,$t]:-} $(echo "$out" | tail -1)"
            done
            rf[$w]="${rf[$w]:-} $(echo "${this[pg_labels]} / ${this[bench_floor]}" | bc -l)"
            rb[$w]="${rb[$w]:-} $(echo "${this[pg_labels]} / ${this[bench_plain]}" | bc -l)"
            rr[$w]="${rr[$w]:-} $(echo "${this[pg_labels]} / ${this[bench_run_floor]}" | bc -l)"
            fr[$w]="${fr[$w]:-} $(echo "${this[bench_run_floor]} / ${this[bench_floor]}" | bc -l)"
            br[$w]="${br[$w]:-} $(echo "${this[bench_run_floor]} / ${this[bench_plain]}" | bc -l)"
        done
    done
    # a burst on one run: eight parallel tool calls of one run against the same eight one after
    # another, per table (bench/burst.py)
    log "scale: bursts of 8 calls on one run, $rounds rounds of ${SCALE_BURSTS:-500}"
    source "$ROOT/tests/python/venv.sh"
    burst=$(PGDATABASE=bench_scale "$venv/bin/python" "$ROOT/bench/burst.py" bench_scale "$nruns" \
        "$rounds" "${SCALE_BURSTS:-500}" pg_labels bench_run_floor bench_floor bench_plain)
    echo "$burst"
    # bulk writes: the same rows (random runs) into each table, one statement each
    log "scale: COPY of $ncopy steps and INSERT ... SELECT of 100,000, into each table, $bulk_rounds rounds"
    psql_q -d bench_scale -c "COPY (SELECT * FROM bench_scale_input LIMIT $ncopy) TO '$work/copy.tsv'"
    timed() { # $1 SQL: milliseconds
        "$PGBIN/psql" -X -q -d bench_scale -c '\timing on' -c "$1" | awk '/^Time:/ { print $2 }'
    }
    declare -A ms
    for round in $(seq "$bulk_rounds"); do
        order=(pg_labels bench_run_floor bench_floor bench_plain)
        [ $((round % 2)) = 0 ] && order=(bench_plain bench_floor bench_run_floor pg_labels)
        for k in copy select; do
            declare -A this
            for t in "${order[@]}"; do
                psql_q -d bench_scale -c "CHECKPOINT"
                if [ $k = copy ]; then
                    this[$t]=$(timed "COPY $t.steps (run_id, kind, tool, labels, args) FROM '$work/copy.tsv'")
                else
                    this[$t]=$(timed "INSERT INTO $t.steps (run_id, kind, tool, labels, args) SELECT * FROM bench_scale_input LIMIT 100000")
                fi
                ms[$k,$t]="${ms[$k,$t]:-} ${this[$t]}"
            done
            rf[$k]="${rf[$k]:-} $(echo "${this[bench_floor]} / ${this[pg_labels]}" | bc -l)"
            rb[$k]="${rb[$k]:-} $(echo "${this[bench_plain]} / ${this[pg_labels]}" | bc -l)"
            rr[$k]="${rr[$k]:-} $(echo "${this[bench_run_floor]} / ${this[pg_labels]}" | bc -l)"
            fr[$k]="${fr[$k]:-} $(echo "${this[bench_floor]} / ${this[bench_run_floor]}" | bc -l)"
            br[$k]="${br[$k]:-} $(echo "${this[bench_plain]} / ${this[bench_run_floor]}" | bc -l)"
        done
    done
    # the chain of every step the benchmark wrote: linked to its run's step before it (the
    # loaded history's hashes are not its rows' own: verify() would fail them, not the writes)
    links=$("$PGBIN/psql" -X -qAt -d bench_scale -c "
        SELECT count(*) FILTER (WHERE prev_hash IS DISTINCT FROM prev) || ' of ' || count(*)
          FROM (SELECT id, prev_hash, lag(hash) OVER (PARTITION BY run_id ORDER BY id) AS prev
                  FROM pg_labels.steps WHERE id > $loaded - 100 * $nruns) s
         WHERE id > $loaded")
    log "scale: steps written by the benchmark not linked to their run's step before: $links"
    # the analysts' queries: as an analyst of acme (row-level security), and as the superuser
    log "scale: analysts' queries, as bench_analyst in scope acme and as the superuser, $rounds rounds of 5 s"
    run7=$("$PGBIN/psql" -X -qAt -d bench_scale -c "SELECT md5('scale7')::uuid")
    queries=(
        "trail of one run|SELECT * FROM pg_labels.trail WHERE run_id = '$run7' ORDER BY id"
        "refusals by day|SELECT date_trunc('day', created_at), count(*) FROM pg_labels.refusals GROUP BY 1"
        "runs carrying tag:pii|SELECT count(*) FROM pg_labels.runs WHERE labels @> '{tag:pii}'"
    )
    declare -A qtps qr
    for q in "${queries[@]}"; do
        name=${q%%|*}
        printf '%s\n' "BEGIN;" "SELECT pg_labels.enter_scope('acme');" "${q#*|};" "COMMIT;" >"$work/q.sql"
        for round in $(seq "$rounds"); do
            who_order=(bench_analyst postgres)
            [ $((round % 2)) = 0 ] && who_order=(postgres bench_analyst)
            declare -A this
            for who in "${who_order[@]}"; do
                this[$who]=$("$PGBIN/pgbench" -n -T 5 -U $who -f "$work/q.sql" bench_scale 2>&1 | awk '/^tps/ { print $3 }')
                qtps[$name,$who]="${qtps[$name,$who]:-} ${this[$who]}"
            done
            qr[$name]="${qr[$name]:-} $(echo "${this[bench_analyst]} / ${this[postgres]}" | bc -l)"
        done
        echo "-- $name, as bench_analyst:"
        "$PGBIN/psql" -X -q -d bench_scale -U bench_analyst -c "BEGIN" -c "SELECT FROM pg_labels.enter_scope('acme')" \
            -c "EXPLAIN (COSTS off) ${q#*|}" -c "COMMIT" | grep -v '^$'
    done
    rm -rf "$work"

    echo "$burst" | tail -4
    echo "steps written by the benchmark not linked to their run's step before: $links"
    printf '\n%-36s %9s %9s %9s %9s %9s %9s %9s %9s %s\n' "trail of $steps steps, $nruns runs" \
        "enforced" "run fl." "floor" "bare" "enf/fl." "enf/run" "run/fl." "enf/bare" "goal (issue 38)"
    row() { printf '%-36s %9.0f %9.0f %9.0f %9.0f %9.3f %9.3f %9.3f %9.3f %s\n' "$@"; }
    spread() { # $1 workload: the rounds' medians and intervals
        printf '%-36s %9s %9s %9s %9s %9.3f %9.3f %9.3f %9.3f\n' "  median of the rounds' ratios" "" "" "" "" \
            "$(echo "${rf[$1]}" | median)" "$(echo "${rr[$1]}" | median)" "$(echo "${fr[$1]}" | median)" \
            "$(echo "${rb[$1]}" | median)"
        printf '  95%% intervals: enf/floor %s; enf/run floor %s; run floor/floor %s; enf/bare %s; run floor/bare %s (median %.3f)\n' \
            "$(echo "${rf[$1]}" | interval)" "$(echo "${rr[$1]}" | interval)" "$(echo "${fr[$1]}" | interval)" \
            "$(echo "${rb[$1]}" | interval)" "$(echo "${br[$1]}" | interval)" "$(echo "${br[$1]}" | median)"
    }
    for w in random one own; do
        a=$(echo "${tps[$w,pg_labels]}" | median)
        r=$(echo "${tps[$w,bench_run_floor]}" | median)
        f=$(echo "${tps[$w,bench_floor]}" | median)
        b=$(echo "${tps[$w,bench_plain]}" | median)
        case $w in
            random) label="single-row inserts, 1 client (tps)" goal="enf/floor >= 0.90" ;;
            one) label="8 clients on one run (tps)" goal="enf/bare >= 0.6" ;;
            own) label="8 clients on 8 runs (tps)" goal="enf/floor >= 0.90" ;;
        esac
        row "$label" "$a" "$r" "$f" "$b" "$(echo "$a / $f" | bc -l)" "$(echo "$a / $r" | bc -l)" \
            "$(echo "$r / $f" | bc -l)" "$(echo "$a / $b" | bc -l)" "$goal"
        spread $w
        wa=$(echo "${wal[$w,pg_labels]}" | median)
        wb=$(echo "${wal[$w,bench_plain]}" | median)
        printf '  WAL per step, the same %s steps: %s enforced, %s bare (%.2f)\n' "$nwal" "$wa" "$wb" "$(echo "$wa / $wb" | bc -l)"
        wa=$(echo "${timed_wal[$w,pg_labels]}" | median)
        wb=$(echo "${timed_wal[$w,bench_plain]}" | median)
        printf '  WAL per step in the %ss rounds: %s enforced, %s bare (fewer steps share the images)\n' "$seconds" "$wa" "$wb"
    done
    for k in copy select; do
        a=$(echo "${ms[$k,pg_labels]}" | median)
        r=$(echo "${ms[$k,bench_run_floor]}" | median)
        f=$(echo "${ms[$k,bench_floor]}" | median)
        b=$(echo "${ms[$k,bench_plain]}" | median)
        case $k in
            copy) label="COPY of $ncopy steps (ms)" ;;
            select) label="INSERT ... SELECT of 100,000 (ms)" ;;
        esac
        row "$label" "$a" "$r" "$f" "$b" "$(echo "$f / $a" | bc -l)" "$(echo "$r / $a" | bc -l)" \
            "$(echo "$f / $r" | bc -l)" "$(echo "$b / $a" | bc -l)" "enf/floor >= 0.85"
        spread $k
    done
    for q in "${queries[@]}"; do
        name=${q%%|*}
        a=$(echo "${qtps[$name,bench_analyst]}" | median)
        b=$(echo "${qtps[$name,postgres]}" | median)
        printf '%-40s %12s %12s %12s %9s %9.3f %s\n' "analyst: $name (tps)" "$a" "" "$b" "" "$(echo "$a / $b" | bc -l)" "analyst/superuser >= 0.85"
        printf '  median of the rounds'"'"' ratios %.3f, 95%% interval %s\n' "$(echo "${qr[$name]}" | median)" "$(echo "${qr[$name]}" | interval)"
    done
    echo "ratios: throughput against the floor (the bare table partitioned as the trail, with a BEFORE ROW"
    echo "trigger in C that sets one column), the run floor (the floor's trigger also locking the run to the"
    echo "commit and reading its row and its last step: bench/run_floor.c) and the bare table (for the bulk"
    echo "writes: their time / enforced time); medians of $rounds pgbench rounds, $bulk_rounds bulk rounds; the"
    echo "analysts' queries against the same query as the superuser (no row-level security), in the"
    echo "analyst's transaction (enter_scope() included)"
    psql_q -d bench_scale -c "DROP OWNED BY bench_analyst" -c "DROP ROLE bench_analyst" 2>/dev/null || true
fi

if [ "$what" = readers ]; then
    libdir=$("$PG_CONFIG" --pkglibdir)
    work=$(mktemp -d /tmp/pg_labels_readers.XXXXXX)
    cp "$libdir/pg_labels.so" "$work/paged.so"
    log "readers: building the variant with PostgreSQL's index scan (feature bench_api_probe)"
    (cd "$ROOT" && cargo pgrx install --pg-config "$PG_CONFIG" --profile release --features bench_api_probe 2>&1 |
        grep -vE '^\s+(Compiling|Checking|Fresh)\b' || true)
    cp "$libdir/pg_labels.so" "$work/api.so"
    cp "$work/paged.so" "$libdir/pg_labels.so"
    cmp -s "$work/paged.so" "$work/api.so" && { echo "readers: the two builds are the same library" >&2; exit 1; }
    steps=${READERS_STEPS:-10000000}
    psql_q -c "DROP DATABASE IF EXISTS bench_readers" -c "CREATE DATABASE bench_readers"
    psql_q -d bench_readers -c "CREATE EXTENSION pg_labels" -f "$ROOT/bench/trail_setup.sql"
    log "readers: loading a trail of $steps steps over 10,000 runs"
    psql_q -d bench_readers -v steps="$steps" -v runs=10000 -f "$ROOT/bench/scale_setup.sql" >/dev/null
    printf '%s\n' "\\set r random(1, 10000)" \
        "INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args) VALUES (md5('scale' || :r)::uuid, 'tool_called', 'tickets.read', E'{area\\x3aacme/platform}', '{\"ticket\": 42}');" \
        >"$work/insert.sql"
    chmod -R a+r "$work"
    declare -A rtps
    ratios=""
    for round in $(seq 1 "${READERS_ROUNDS:-5}"); do
        for v in paged api; do
            runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null
            cp "$work/$v.so" "$libdir/pg_labels.so"
            runuser -u postgres -- env RUST_BACKTRACE=0 "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w \
                -o "-c listen_addresses='' -k $CLUSTER_DIR -p 5432 -c fsync=off -c max_connections=100 ${PG_EXTRA_OPTS:-}" start >/dev/null
            "$PGBIN/pgbench" -n -M prepared -c 1 -T 5 -f "$work/insert.sql" bench_readers >/dev/null 2>&1  # warm-up
            t=$("$PGBIN/pgbench" -n -M prepared -c 1 -T "${READERS_SECONDS:-20}" --random-seed="$round" -f "$work/insert.sql" bench_readers 2>&1 |
                awk '/^tps/ { print int($3) }')
            rtps[$v]="${rtps[$v]:-} $t"
            echo "round $round: $v $t tps"
        done
        ratios="$ratios $(echo "${rtps[api]##* } ${rtps[paged]##* }" | awk '{ printf "%.3f", $1 / $2 }')"
    done
    cp "$work/paged.so" "$libdir/pg_labels.so"
    p=$(echo "${rtps[paged]}" | median); a=$(echo "${rtps[api]}" | median)
    echo "single-row inserts into a $steps-step trail, 1 client, medians of ${READERS_ROUNDS:-5} rounds:"
    echo "  index pages read by hand: $p tps; PostgreSQL's index scan: $a tps; ratio $(echo "$a $p" | awk '{ printf "%.3f", $1 / $2 }')"
    echo "  the rounds' ratios (scan / pages):$ratios; median $(echo "$ratios" | median)"
    echo "  (the reader stays if the scan is at most 0.98 of it: ARCHITECTURE.md)"
    rm -rf "$work"
fi

if [ "$what" = instructions ]; then
    log "instructions per trail insert (callgrind, single-user backend)"
    "$ROOT/bench/instructions.sh" "${INSTRUCTIONS_N:-2000}"
fi
