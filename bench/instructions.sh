#!/usr/bin/env bash
# Instructions per single-row trail insert (scripts/bench.sh instructions), counted by
# callgrind: repeatable whatever else the machine does, where pgbench's transactions per second
# on a shared two-core machine move by a factor of two from run to run.
#
# A backend in single-user mode (postgres --single, autocommit: one transaction per INSERT)
# runs N, then 2N executions of the trail benchmark's insert, prepared, into (a)
# pg_labels.steps, (b) bench_plain.steps (bench/trail_setup.sql), (c) bench_part.steps, (b)
# partitioned as the trail is, and (e) bench_floor.steps, (c) with a trigger that does almost
# nothing (the floor of any trigger's cost); the difference between the two runs, divided by
# N, is the cost of one insert, without start-up and first-use costs. Needs the extension
# installed in the server of $PGBIN and valgrind.
#   bench/instructions.sh [N]   (default 2000)
# INSTR_KEEP=dir keeps the callgrind files there (callgrind.<table>.<count>), for per-function
# differences with callgrind_annotate --inclusive=yes. INSTR_RUNS (default 100) is how many runs
# the inserts go round (issue 38: 10,000 active runs, more than a backend kept places of);
# INSTR_TIME_ROUNDS=0 skips the timed part; INSTR_ENFORCED_ONLY=1 counts (a) alone (a change
# to the trigger compared before and after).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
n=${1:-2000}
runs=${INSTR_RUNS:-100}
command -v valgrind >/dev/null || { apt-get install -y -qq valgrind >/dev/null; }
work=$(mktemp -d /tmp/pg_labels_instructions.XXXXXX)
chmod 755 "$work"
chown postgres: "$work"
trap 'runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

runuser -u postgres -- "$PGBIN/initdb" -D "$work/data" -U postgres -A trust --no-sync >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/data" -l "$work/log" -w \
    -o "-c listen_addresses='' -k $work -p 5435" start >/dev/null
"$PGBIN/psql" -X -q -h "$work" -p 5435 -U postgres -d postgres -c "CREATE DATABASE bench_trail"
"$PGBIN/psql" -X -q -h "$work" -p 5435 -U postgres -d bench_trail -c "CREATE EXTENSION pg_labels" \
    -f "$here/trail_setup.sql" -v runs="$runs" -f - >/dev/null <<'SQL'
-- the runs past the setup's 100 the inserts go round (INSTR_RUNS)
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(101, :runs) i;
-- (c) the bare table partitioned as the trail is (a ring of monthly partitions by slot): the
-- cost of routing a row to its partition, which the trail pays for O(1) retention
CREATE SCHEMA bench_part;
CREATE TABLE bench_part.steps (LIKE pg_labels.steps INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY LIST (slot);
ALTER TABLE bench_part.steps ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
ALTER TABLE bench_part.steps ADD PRIMARY KEY (id, slot);
DO $$ BEGIN
    FOR s IN 0..23 LOOP
        EXECUTE format('CREATE TABLE bench_part.steps_%s PARTITION OF bench_part.steps FOR VALUES IN (%s)', s, s);
    END LOOP;
END $$;
CREATE INDEX ON bench_part.steps (created_at);
CREATE INDEX ON bench_part.steps (run_id, id);
CREATE INDEX ON bench_part.steps USING gin (labels);
CREATE INDEX ON bench_part.steps (artifact_id) WHERE artifact_id IS NOT NULL;
CREATE INDEX ON bench_part.steps (request_id) WHERE request_id IS NOT NULL;
CREATE INDEX ON bench_part.steps (run_id) WHERE kind = 'context_read';
CREATE INDEX ON bench_part.steps (created_at) WHERE kind = 'gate_decided' AND decision IN ('block', 'ask');
-- (e) the least a trigger costs there: (c) with a BEFORE ROW trigger written in C that only
-- sets the writer's name (contrib's insert_username). PostgreSQL fires it per row and then
-- checks the row's partition again; no enforcement can cost less than this
CREATE EXTENSION insert_username;
CREATE SCHEMA bench_floor;
CREATE TABLE bench_floor.steps (LIKE bench_part.steps INCLUDING ALL) PARTITION BY LIST (slot);
DO $$ BEGIN
    FOR s IN 0..23 LOOP
        EXECUTE format('CREATE TABLE bench_floor.steps_%s PARTITION OF bench_floor.steps FOR VALUES IN (%s)', s, s);
    END LOOP;
END $$;
CREATE TRIGGER floor BEFORE INSERT ON bench_floor.steps FOR EACH ROW EXECUTE FUNCTION insert_username(actor);
SQL
# (d) the trail without its hash chain (issue 17's "ratio without it", same build): the
# chain's columns dropped, so the trigger takes the path of a table that has none
"$PGBIN/psql" -X -q -h "$work" -p 5435 -U postgres -d postgres -c "CREATE DATABASE bench_nochain"
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5435 -U postgres -d bench_nochain -c "CREATE EXTENSION pg_labels" \
    -c "ALTER TABLE pg_labels.steps DROP COLUMN prev_hash, DROP COLUMN hash" \
    -c "ALTER TABLE pg_labels.runs DROP COLUMN opened_labels, DROP COLUMN chain_head, DROP COLUMN chain_slot, DROP COLUMN chain_cut, DROP COLUMN chain_cut_length" \
    -f "$here/trail_setup.sql" -v runs="$runs" \
    -c "INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(101, $runs) i" >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null

# $1 table, $2 count: that many executions of one prepared insert (as pgbench -M prepared
# and a platform service run it), over the 100 runs of the setup; one statement per line
# (single-user mode ends a statement at a newline)
statements() {
    local i
    echo "PREPARE ins(int) AS INSERT INTO $1 (run_id, kind, tool, labels, args) VALUES (md5(\$1::text)::uuid, 'tool_called', 'tickets.read', '{area:acme/platform}', '{\"ticket\": 42}');"
    for ((i = 1; i <= $2; i++)); do
        echo "EXECUTE ins($((i % runs + 1)));"
    done
}

# instructions for $2 inserts into $1 (in database $3, bench_trail if not given)
count() {
    local out=$work/callgrind.$RANDOM
    statements "$1" "$2" >"$work/in.sql"
    runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$PGBIN/postgres" --single -D "$work/data" -c fsync=off -c synchronous_commit=off \
        "${3:-bench_trail}" <"$work/in.sql" >/dev/null 2>"$work/valgrind.log"
    awk '/^summary:/ { print $2 }' "$out"
    if [ -n "${INSTR_KEEP:-}" ]; then
        mkdir -p "$INSTR_KEEP"
        cp "$out" "$INSTR_KEEP/callgrind.${3:-bench_trail}.$1.$2"
    fi
}

# CPU seconds (user + system) of a single-user backend running $2 inserts into $1 (in database
# $3): the same work as count(), on the machine's own CPU (SHA extensions included), timed
seconds() {
    statements "$1" "$2" >"$work/in.sql"
    runuser -u postgres -- /usr/bin/time -f '%U %S' -o "$work/time" \
        "$PGBIN/postgres" --single -D "$work/data" -c fsync=off -c synchronous_commit=off \
        "$3" <"$work/in.sql" >/dev/null 2>&1
    awk '{ print $1 + $2 }' "$work/time"
}

declare -A per
tables=(pg_labels.steps bench_plain.steps bench_part.steps bench_floor.steps)
if [ -n "${INSTR_ENFORCED_ONLY:-}" ]; then
    one=$(count pg_labels.steps "$n")
    two=$(count pg_labels.steps $((2 * n)))
    printf '(a) pg_labels.steps, enforced: %d instructions per insert (%d runs)\n' $(( (two - one) / n )) "$runs"
    exit 0
fi
for t in "${tables[@]}"; do
    one=$(count "$t" "$n")
    two=$(count "$t" $((2 * n)))
    per[$t]=$(( (two - one) / n ))
done
a=${per[pg_labels.steps]}
b=${per[bench_plain.steps]}
printf '\n%-44s %14s\n' "one INSERT (single-user backend, callgrind)" "instructions"
printf '%-44s %14d\n' "(a) pg_labels.steps, enforced" "$a" "(b) bench_plain.steps, no trigger" "$b"
c=${per[bench_part.steps]}
printf '%-44s %14d\n' "(c) bench_part.steps, partitioned, no trigger" "$c"
printf 'ratio b/a (the speed ratio a/b of pgbench): %.2f\n' "$(echo "$b / $a" | bc -l)"
printf 'ratio c/a (against the same partitioning):  %.2f\n' "$(echo "$c / $a" | bc -l)"
e=${per[bench_floor.steps]}
printf '%-44s %14d\n' "(e) (c) with a C trigger setting one column" "$e"
printf 'ratio b/e (the most a/b can be, as a trigger): %.2f\n' "$(echo "$b / $e" | bc -l)"
one=$(count pg_labels.steps "$n" bench_nochain)
two=$(count pg_labels.steps $((2 * n)) bench_nochain)
d=$(( (two - one) / n ))
printf '%-44s %14d\n' "(d) pg_labels.steps without its hash chain" "$d"
printf 'ratio c/d (the same, without the chain):     %.2f\n' "$(echo "$c / $d" | bc -l)"
printf 'the chain: ratio with it / without it (d/a): %.3f (issue 17: >= 0.97)\n' "$(echo "$d / $a" | bc -l)"

# The chain's cost on this CPU, where SHA-256 runs on the SHA extensions valgrind does not
# have: CPU time per insert, (2N - N) / N inserts as above with N = INSTR_TIME_N (default 20000),
# INSTR_TIME_ROUNDS rounds (default 5), with and without the chain interleaved; medians.
tn=${INSTR_TIME_N:-20000}
rounds=${INSTR_TIME_ROUNDS:-5}
[ "$rounds" -gt 0 ] || exit 0
ta="" td=""
for ((r = 1; r <= rounds; r++)); do
    for db in bench_trail bench_nochain; do
        one=$(seconds pg_labels.steps "$tn" $db)
        two=$(seconds pg_labels.steps $((2 * tn)) $db)
        us=$(echo "($two - $one) * 1000000 / $tn" | bc -l)
        if [ $db = bench_trail ]; then ta="$ta $us"; else td="$td $us"; fi
    done
done
source "$here/stats.sh"
ma=$(echo "$ta" | median)
md=$(echo "$td" | median)
printf '\nCPU time per INSERT (single-user backend, no valgrind; median of %d rounds of %d)\n' "$rounds" "$tn"
printf '(a) with the chain:    %6.2f us   (rounds:%s)\n' "$ma" "$(printf ' %.2f' $ta)"
printf '(d) without the chain: %6.2f us   (rounds:%s)\n' "$md" "$(printf ' %.2f' $td)"
printf 'the chain on this CPU: ratio with it / without it (d/a): %.3f (issue 17: >= 0.97)\n' "$(echo "$md / $ma" | bc -l)"
