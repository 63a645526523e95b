#!/usr/bin/env bash
# Concurrency tests: pgbench clients (real connections) hold their transactions open a few
# milliseconds while they write to the same few runs; then a check reads the commit order.
#   1. the barrier: tool calls and Slack inputs on 40 runs (check.sql);
#   2. crossings: reads, tool calls and shares under a crossing that people revoke and
#      authorize again, as roles that are not superusers (crossings_check.sql);
#   3. a flood of refusals: 10,000 refused calls in a loop from one role, then 4 clients
#      refusing at once for FLOOD_SECONDS (30): the server stays up, every call is refused, and
#      every refusal is on the record (pg_labels.refused_writes, counted past the budget);
#   4. 16 sessions refusing at once: another role's refusal is recorded meanwhile, a parallel
#      query launches every worker it planned, one recorder at most, every refusal recorded.
# Needs a cluster with track_commit_timestamp = on (scripts/test.sh starts one). Fails if any
# violation is found or if a storm did not exercise both outcomes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
DB=pg_labels_stress
cd "$here"

# storm SETUP CHECK PGBENCH_SCRIPT_ARGS...: prints the check's output in $out
storm() {
    local setup=$1 check=$2
    shift 2
    # the roles a setup creates are the cluster's: gone with the database's objects, before and after
    local reset=(-c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS stress_platform, stress_bob")
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres "${reset[@]}" -c "CREATE DATABASE $DB"
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d $DB -f "$here/$setup" >/dev/null
    bench=$("$PGBIN/pgbench" -n -c 8 -j 2 -T "${STRESS_SECONDS:-10}" "$@" $DB 2>&1) || { echo "$bench" >&2; exit 1; }
    echo "$bench" | grep -E "^(number of clients|number of transactions|tps)" || true
    out=$("$PGBIN/psql" -X -v ON_ERROR_STOP=1 -d $DB -f "$here/$check")
    echo "$out"
    quiesce
    "$PGBIN/psql" -X -q -d postgres "${reset[@]}"
}
# the background workers that record refusals are connected to the database until their queues
# are empty: waited for before the database is dropped
quiesce() {
    "$PGBIN/psql" -X -q -d postgres -c "DO \$\$ BEGIN FOR i IN 1..1200 LOOP
        EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE datname = '$DB' AND backend_type = 'pg_labels refusal recorder');
        PERFORM pg_sleep(0.05); END LOOP; END \$\$" >/dev/null 2>&1 || true
}
field() { echo "$out" | awk -v h="$1" '
    $0 ~ h { split($0, hs, "|"); for (i in hs) { gsub(/ /, "", hs[i]); if (hs[i] == h) col = i }; getline; getline; split($0, vs, "|"); gsub(/ /, "", vs[col]); print vs[col]; exit }'; }

storm setup.sql check.sql -f call.sql@10 -f input.sql@1 -f noise.sql@4
violations=$(field violations)
mismatched=$(field runs_whose_labels_are_not_the_union_of_their_steps)
allowed=$(field wipes_allowed)
refused=$(field wipes_refused)
interleaved=$(field runs_with_wipes_then_refusals)
unrecorded=$(field refusals_unrecorded)
if [ "$violations" != 0 ] || [ "$mismatched" != 0 ]; then
    echo "concurrency: FAILED ($violations commit-order violations, $mismatched runs with wrong labels)" >&2
    exit 1
fi
if [ "$unrecorded" != 0 ]; then
    echo "concurrency: FAILED (the record of refused writes counts $unrecorded more refusals than were made, or fewer)" >&2
    exit 1
fi
if [ "${allowed:-0}" -eq 0 ] || [ "${refused:-0}" -eq 0 ] || [ "${interleaved:-0}" -eq 0 ]; then
    echo "concurrency: FAILED (the storm did not exercise both outcomes: $allowed allowed, $refused refused)" >&2
    exit 1
fi
echo "concurrency: barrier ok ($allowed wipes allowed, $refused refused, 0 violations)"

storm crossings_setup.sql crossings_check.sql \
    -f crossings_read.sql@6 -f crossings_call.sql@6 -f crossings_share.sql@2 -f crossings_flip.sql@1
late=$(field used_after_revocation)
unmarked=$(field calls_through_without_crossing)
used=$(field steps_under_crossings)
revoked=$(field revoked)
refused=$(field refused)
if [ "$late" != 0 ] || [ "$unmarked" != 0 ]; then
    echo "concurrency: FAILED ($late uses committed after their crossing's revocation, $unmarked calls on foreign data without a crossing)" >&2
    exit 1
fi
if [ "${used:-0}" -eq 0 ] || [ "${refused:-0}" -eq 0 ] || [ "${revoked:-0}" -lt 2 ]; then
    echo "concurrency: FAILED (the storm did not exercise both outcomes: $used uses, $refused refusals, $revoked revocations)" >&2
    exit 1
fi
echo "concurrency: crossings ok ($used steps under crossings, $refused refused, $revoked revocations, 0 late uses)"

# 3. the flood: as a writer that is not a superuser
flood_setup=(-c "CREATE EXTENSION pg_labels" -c "CREATE ROLE stress_platform"
    -c "GRANT USAGE ON SCHEMA pg_labels TO stress_platform"
    -c "GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO stress_platform"
    -c "INSERT INTO pg_labels.grants (role, scope) VALUES ('stress_platform', 'acme')"
    -c "INSERT INTO pg_labels.tools (name, effect) VALUES ('flood.pay', 'financial')"
    -c "INSERT INTO pg_labels.runs (id, scope) VALUES ('f1000000-0000-0000-0000-000000000001', 'acme/ops')"
    -c "INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('f1000000-0000-0000-0000-000000000001', 'input', '{origin:webhook}')"
    -c "CREATE TABLE refused (n bigint)" -c "GRANT INSERT ON refused TO stress_platform"
    -c "CREATE FUNCTION try_pay(n int) RETURNS void LANGUAGE plpgsql AS \$\$
        DECLARE made bigint := 0;
        BEGIN
            FOR i IN 1..n LOOP
                BEGIN
                    INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('f1000000-0000-0000-0000-000000000001', 'tool_called', 'flood.pay');
                    RAISE EXCEPTION 'flood: a call went through';
                EXCEPTION WHEN SQLSTATE '23L02' THEN made := made + 1;
                END;
            END LOOP;
            INSERT INTO refused VALUES (made);
        END \$\$")
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS stress_platform" -c "CREATE DATABASE $DB"
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d $DB "${flood_setup[@]}" >/dev/null
# (the server's log, where scripts/lib.sh starts it: each refusal is counted in one LOG line)
server_log=${SERVER_LOG:-${PGHOST:-}/server.log}
log_from=$(stat -c %s "$server_log" 2>/dev/null || echo -1)
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d $DB -c "SET ROLE stress_platform" -c "SELECT try_pay(10000)" >/dev/null
echo "SET ROLE stress_platform; SELECT try_pay(50);" >"$here/.flood.sql"
bench=$("$PGBIN/pgbench" -n -c 4 -j 2 -T "${FLOOD_SECONDS:-30}" -f "$here/.flood.sql" $DB 2>&1) || { echo "$bench" >&2; rm -f "$here/.flood.sql"; exit 1; }
rm -f "$here/.flood.sql"
echo "$bench" | grep -E "^(number of transactions|tps)" || true
out=$("$PGBIN/psql" -X -v ON_ERROR_STOP=1 -d $DB <<'SQL'
\pset footer off
DO $$
BEGIN
    FOR i IN 1..1200 LOOP
        EXIT WHEN (SELECT coalesce(sum(count), 0) FROM pg_labels.refused_writes) >= (SELECT sum(n) FROM refused);
        PERFORM pg_sleep(0.05);
    END LOOP;
END $$;
SELECT (SELECT sum(n) FROM refused) AS refusals_made,
       (SELECT coalesce(sum(count), 0) FROM pg_labels.refused_writes) AS refusals_recorded,
       (SELECT count(*) FROM pg_labels.refused_writes) AS records,
       (SELECT count(*) FROM pg_labels.steps WHERE tool = 'flood.pay') AS calls_through;
SQL
)
echo "$out"
quiesce
"$PGBIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS stress_platform"
made=$(field refusals_made)
recorded=$(field refusals_recorded)
through=$(field calls_through)
if [ "${made:-0}" -lt 10000 ] || [ "$made" != "$recorded" ] || [ "$through" != 0 ]; then
    echo "concurrency: FAILED (the flood: $made refusals made, $recorded recorded, $through calls through)" >&2
    exit 1
fi
logged=$(field records)
if [ "$log_from" -ge 0 ]; then
    # the LOG lines of the flood's refusals: one each within the budget, one per counted record past it
    logged=$(python3 - "$server_log" "$log_from" <<'PY'
import json, sys
lines = counted = 0
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2]))
    for raw in f:
        text = raw.decode("utf-8", "replace")
        at = text.find("pg_labels: refused {")
        if at < 0:
            continue
        rec = json.loads(text[at + len("pg_labels: refused "):])
        if rec.get("actor") == "stress_platform" and rec.get("tool") == "flood.pay":
            lines += 1
            counted += rec.get("count", 1)
print(f"{counted} {lines}")
PY
)
    if [ "${logged% *}" != "$made" ]; then
        echo "concurrency: FAILED (the flood: $made refusals made, ${logged% *} counted in the server log's LOG lines)" >&2
        exit 1
    fi
    logged="$(field records) records, and in ${logged#* } LOG lines"
else
    logged="$logged records (the server log not found: its lines not counted)"
fi
echo "concurrency: flood ok ($made refusals, all recorded in $logged, none through)"

# 4. a flood cannot starve anyone: 16 sessions refusing as fast as they can, each refusal its
#    own transaction, as a writer; meanwhile another role's one refusal is on the record within
#    seconds, a query planned with 4 parallel workers launches all 4, and the database's
#    refusals take one background worker at most. Then every refusal of the flood is recorded.
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $DB" \
    -c "DROP ROLE IF EXISTS stress_platform, stress_other" -c "CREATE DATABASE $DB"
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d $DB "${flood_setup[@]}" \
    -c "CREATE ROLE stress_other" -c "GRANT USAGE ON SCHEMA pg_labels TO stress_other" \
    -c "GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO stress_other" \
    -c "INSERT INTO pg_labels.grants (role, scope) VALUES ('stress_other', 'acme')" \
    -c "CREATE TABLE big AS SELECT g AS n FROM generate_series(1, 400000) g" \
    -c "ALTER TABLE big SET (parallel_workers = 4)" -c "ANALYZE big" -c "GRANT SELECT ON big TO stress_other" >/dev/null
echo "SET ROLE stress_platform; SELECT try_pay(1);" >"$here/.flood16.sql"
"$PGBIN/pgbench" -n -c 16 -j 2 -T "${FLOOD16_SECONDS:-20}" -f "$here/.flood16.sql" $DB >"$here/.flood16.out" 2>&1 &
flooding=$!
# the recorders of the database, sampled as the superuser every fifth of a second while it runs
( for i in $(seq 1 $(( ${FLOOD16_SECONDS:-20} * 5 - 10 ))); do
      "$PGBIN/psql" -X -At -d $DB -c "SELECT 'recorders ' || count(*) FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'pg_labels refusal recorder'" 2>/dev/null
      sleep 0.2
  done ) >"$here/.recorders16" &
sampling=$!
sleep 4
during=$("$PGBIN/psql" -X -v ON_ERROR_STOP=1 -d $DB -At <<'SQL'
-- (the recorders' rows of pg_stat_activity, as the superuser: they are the bootstrap superuser's)
SELECT 'recorders ' || count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND backend_type = 'pg_labels refusal recorder';
SET ROLE stress_other;
SET max_parallel_workers_per_gather = 4;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM big;
SELECT clock_timestamp() AS refused_at \gset
DO $$
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('f1000000-0000-0000-0000-000000000001', 'tool_called', 'flood.pay');
EXCEPTION WHEN SQLSTATE '23L02' THEN NULL;
END $$;
SELECT 'other recorded ' || pg_labels.refusals_recorded('10 seconds');
SELECT 'in ' || (extract(epoch FROM clock_timestamp() - :'refused_at') * 1000)::int || ' ms';
RESET ROLE;
SELECT 'recorders ' || count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND backend_type = 'pg_labels refusal recorder';
SQL
) || { echo "$during" >&2; kill $flooding 2>/dev/null; exit 1; }
wait $flooding || { cat "$here/.flood16.out" >&2; exit 1; }
wait $sampling || true
during+=$'\n'"$(cat "$here/.recorders16")"
rm -f "$here/.recorders16"
grep -E "^(number of transactions|tps)" "$here/.flood16.out" || true
rm -f "$here/.flood16.sql" "$here/.flood16.out"
echo "$during" | grep -E "Workers|other recorded|^in "
echo "recorders seen at once, by sample: $(echo "$during" | sed -n 's/^recorders //p' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
out=$("$PGBIN/psql" -X -v ON_ERROR_STOP=1 -d $DB <<'SQL'
\pset footer off
DO $$
BEGIN
    FOR i IN 1..1200 LOOP
        EXIT WHEN (SELECT coalesce(sum(count), 0) FROM pg_labels.refused_writes WHERE actor = 'stress_platform') >= (SELECT sum(n) FROM refused);
        PERFORM pg_sleep(0.05);
    END LOOP;
END $$;
SELECT (SELECT sum(n) FROM refused) AS flood_made,
       (SELECT coalesce(sum(count), 0) FROM pg_labels.refused_writes WHERE actor = 'stress_platform') AS flood_recorded,
       (SELECT count(*) FROM pg_labels.refused_writes WHERE actor = 'stress_other') AS other_recorded;
SQL
)
echo "$out"
quiesce
"$PGBIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS stress_platform, stress_other"
made=$(field flood_made); recorded=$(field flood_recorded); other=$(field other_recorded)
planned=$(echo "$during" | sed -n 's/.*Workers Planned: \([0-9]*\).*/\1/p')
launched=$(echo "$during" | sed -n 's/.*Workers Launched: \([0-9]*\).*/\1/p')
most=$(echo "$during" | sed -n 's/^recorders \([0-9]*\)$/\1/p' | sort -n | tail -1)
least_seen=$(echo "$during" | grep -c "^recorders 1$" || true)
if [ "$planned" != 4 ] || [ "$launched" != 4 ]; then
    echo "concurrency: FAILED (under a flood of 16 sessions a query planned $planned parallel workers and launched $launched)" >&2
    exit 1
fi
if [ "${most:-9}" -gt 1 ] || [ "$least_seen" -eq 0 ]; then
    echo "concurrency: FAILED (the flood's refusals took $most background workers at once; a recorder seen in $least_seen samples)" >&2
    exit 1
fi
if ! echo "$during" | grep -q "other recorded true" || [ "$other" != 1 ]; then
    echo "concurrency: FAILED (another role's refusal was not on the record during the flood: $during; $other records)" >&2
    exit 1
fi
if [ "${made:-0}" -lt 1000 ] || [ "$made" != "$recorded" ]; then
    echo "concurrency: FAILED (the flood of 16: $made refusals made, $recorded recorded)" >&2
    exit 1
fi
echo "concurrency: flood of 16 ok ($made refusals recorded; parallel query launched 4 of 4 workers; at most $most recorder; $(echo "$during" | sed -n 's/^in //p') for another role's refusal to be on the record)"
