# Readers of PostgreSQL's formats (scripts/bench.sh readers, issue 34): what the index-page
# reader (src/pg/btree.rs) pays for, this build against one built with feature bench_api_probe
# (PostgreSQL's index scan), the two libraries swapped with a restart between rounds; a trail of
# READERS_STEPS steps (10,000,000), READERS_ROUNDS (5) of READERS_SECONDS (20).
# Sourced by scripts/bench.sh, which calls bench_readers in its cluster (lib.sh, bench/stats.sh,
# psql_q, bench_in_db, PGBIN, PG_CONFIG, ROOT).

bench_readers() {
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
}
