#!/usr/bin/env bash
# Instructions per COPY row (scripts/bench.sh copy_instructions, issue 50), counted by callgrind:
# where a bulk row's time goes, repeatable whatever else the machine does.
#
# A throwaway cluster of $PGBIN with a trail of COPY_STEPS steps (200,000) over 10,000 runs
# loaded by bench/scale_setup.sql, and the run floor (bench/run_floor.c, built here with PGXS)
# and the floor as bench/scale.sh builds them. Then, in a backend in single-user mode, one COPY
# of N and one of 3N steps (N = COPY_N, 10,000) over 150 runs (every run touched about 70 and
# 200 times: a COPY of 1,000,000 over 10,000 runs touches each 100 times) into each table: the
# difference divided by 2N is the instructions of one row, without start-up and per-run costs.
# Printed per table: the whole row, and for the trail the trigger (pgl_steps_insert,
# inclusive) and SHA-256's compression, which valgrind runs in software (this CPU's SHA
# extensions run it in about 1.4% of a COPY's time, by perf). COPY_KEEP=dir keeps the
# callgrind files (callgrind_annotate --inclusive=yes for a function's share). Then the same for
# single-row inserts (goal 1): COPY_SINGLE_N (2,000) and twice as many prepared inserts over the
# same 150 runs, each its own transaction, the difference divided by COPY_SINGLE_N. Needs the
# extension installed in the server of $PGBIN, its pg_config's PGXS, and valgrind.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PG_CONFIG=${PG_CONFIG:-$PGBIN/pg_config}
n=${COPY_N:-10000}
steps=${COPY_STEPS:-200000}
command -v valgrind >/dev/null || { apt-get install -y -qq valgrind >/dev/null; }
work=$(mktemp -d /tmp/pg_labels_copy_instructions.XXXXXX)
chmod 755 "$work"
chown postgres: "$work"
trap 'runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

runuser -u postgres -- "$PGBIN/initdb" -D "$work/data" -U postgres -A trust --no-sync >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/data" -l "$work/log" -w \
    -o "-c listen_addresses='' -k $work -p 5436 -c shared_buffers=512MB -c max_wal_size=4GB" start >/dev/null
psql_b() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5436 -U postgres -d bench_scale "$@"; }
"$PGBIN/psql" -X -q -h "$work" -p 5436 -U postgres -d postgres -c "CREATE DATABASE bench_scale"
psql_b -c "CREATE EXTENSION pg_labels" -f "$here/trail_setup.sql" >/dev/null
psql_b -v steps="$steps" -v runs=10000 -f "$here/scale_setup.sql" >/dev/null
build=$work/run_floor
mkdir "$build"
cp "$here/run_floor.c" "$build/"
printf '%s\n' "MODULES = run_floor" "PG_CONFIG = $PG_CONFIG" 'PGXS := $(shell $(PG_CONFIG) --pgxs)' \
    'include $(PGXS)' >"$build/Makefile"
make -s -C "$build" >/dev/null
rm -f "$("$PG_CONFIG" --pkglibdir)/bench_run_floor.so"
cp "$build/run_floor.so" "$("$PG_CONFIG" --pkglibdir)/bench_run_floor.so"
psql_b -f "$here/run_floor.sql" >/dev/null
# the rows: the benchmark's tool call, over 150 runs
for count in "$n" $((3 * n)); do
    psql_b -c "COPY (SELECT md5('scale' || (1 + (i * 104729) % 150))::uuid, 'tool_called', 'tickets.read',
                            '{area:acme/platform}', '{\"ticket\": 42}'
                       FROM generate_series(1::bigint, $count) i) TO '$work/copy.$count.tsv'"
done
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null

# callgrind of one COPY of $2 rows into $1.steps (or, with $3 = single, of $2 single-row
# inserts, one transaction each, prepared as pgbench -M prepared runs them): the file
count() {
    local out=$work/callgrind.$1.$2${3:-}
    if [ "${3:-}" = single ]; then
        single "$1" "$2" >"$work/in.sql"
    else
        echo "COPY $1.steps (run_id, kind, tool, labels, args) FROM '$work/copy.$2.tsv';" >"$work/in.sql"
    fi
    runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$PGBIN/postgres" --single -D "$work/data" -c fsync=off -c synchronous_commit=off \
        bench_scale <"$work/in.sql" >/dev/null 2>"$work/valgrind.log"
    if [ -n "${COPY_KEEP:-}" ]; then
        mkdir -p "$COPY_KEEP"
        cp "$out" "$COPY_KEEP/"
    fi
    echo "$out"
}
# $2 executions of one prepared insert into $1.steps over the same 150 runs (a statement a line:
# single-user mode ends one at a newline)
single() {
    local i
    echo "PREPARE ins(bigint) AS INSERT INTO $1.steps (run_id, kind, tool, labels, args) VALUES (md5('scale' || (1 + (\$1 * 104729) % 150))::uuid, 'tool_called', 'tickets.read', '{area:acme/platform}', '{\"ticket\": 42}');"
    for ((i = 1; i <= $2; i++)); do
        echo "EXECUTE ins($i);"
    done
}
total() { awk '/^summary:/ { print $2 }' "$1"; }
# a function's inclusive instructions in a callgrind file
inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk -v f="$2" 'index($0, f) { gsub(",", "", $1); print $1; exit }'
}
# per table: $1 the heading, $2 what a unit is, $3 and $4 the two counts, $5 count()'s mode
# (empty: COPY; single: single-row inserts); the difference divided by $4 - $3 is one unit's
per() { echo $(( ($2 - $1) / span )); }
report() {
    local t few many span=$(($4 - $3))
    printf '\n%-48s %14s\n' "$1" "instructions"
    for t in pg_labels bench_run_floor bench_floor; do
        few=$(count $t "$3" ${5:-})
        many=$(count $t "$4" ${5:-})
        printf '%-48s %14d\n' "$t.steps, the whole $2" "$(per "$(total "$few")" "$(total "$many")")"
        if [ $t = pg_labels ]; then
            printf '%-48s %14d\n' "  the trigger (pgl_steps_insert)" \
                "$(per "$(inclusive "$few" ':pgl_steps_insert ')" "$(inclusive "$many" ':pgl_steps_insert ')")"
            printf '%-48s %14d\n' "  of which SHA-256 (software under valgrind)" \
                "$(per "$(inclusive "$few" 'sha256::compress256 ')" "$(inclusive "$many" 'sha256::compress256 ')")"
        fi
    done
}

report "one COPY row (single-user backend, callgrind)" row "$n" $((3 * n))
# single-row inserts (COPY_SINGLE_N, 2,000, and twice as many; 0 skips them): where the time of
# goal 1's writes goes, each a transaction that locks its run, as from pgbench
ns=${COPY_SINGLE_N:-2000}
[ "$ns" -gt 0 ] || exit 0
report "one single-row INSERT (a transaction each)" insert "$ns" $((2 * ns)) single
