#!/usr/bin/env bash
# Concurrency tests: pgbench clients (real connections) hold their transactions open a few
# milliseconds while they write to the same few runs; then a check reads the commit order.
#   1. the barrier: tool calls and Slack inputs on 40 runs (check.sql);
#   2. crossings: reads, tool calls and shares under a crossing that people revoke and
#      authorize again, as roles that are not superusers (crossings_check.sql).
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
    "$PGBIN/psql" -X -q -d postgres "${reset[@]}"
}
field() { echo "$out" | awk -v h="$1" '
    $0 ~ h { split($0, hs, "|"); for (i in hs) { gsub(/ /, "", hs[i]); if (hs[i] == h) col = i }; getline; getline; split($0, vs, "|"); gsub(/ /, "", vs[col]); print vs[col]; exit }'; }

storm setup.sql check.sql -f call.sql@10 -f input.sql@1 -f noise.sql@4
violations=$(field violations)
mismatched=$(field runs_whose_labels_are_not_the_union_of_their_steps)
allowed=$(field wipes_allowed)
refused=$(field wipes_refused)
interleaved=$(field runs_with_wipes_then_refusals)
if [ "$violations" != 0 ] || [ "$mismatched" != 0 ]; then
    echo "concurrency: FAILED ($violations commit-order violations, $mismatched runs with wrong labels)" >&2
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
