# The trail at scale (scripts/bench.sh scale, issues 18 and 38): a trail of SCALE_STEPS steps over
# SCALE_RUNS runs (bench/scale_setup.sql), the same rows in the bare table, the floor and the run
# floor (bench/run_floor.c and .sql, built here with PGXS); every write into all four in
# SCALE_ROUNDS rounds, bursts (bench/burst.py), COPY and INSERT ... SELECT, and the analysts'
# queries. The variables and what is printed: scripts/bench.sh's usage, BENCHMARKS.md.
# Sourced by scripts/bench.sh, which calls bench_scale in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_scale() {
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
}
