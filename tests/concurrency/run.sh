#!/usr/bin/env bash
# Concurrency test: pgbench clients (real connections) write tool calls and Slack inputs to
# 40 runs at once, holding their transactions open a few milliseconds; then check.sql verifies
# the commit order. Needs a cluster with track_commit_timestamp = on (scripts/test.sh starts
# one). Fails if any violation is found or if the storm did not exercise both outcomes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
DB=pg_labels_stress
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d $DB -f "$here/setup.sql"
cd "$here"
bench=$("$PGBIN/pgbench" -n -c 8 -j 2 -T "${STRESS_SECONDS:-10}" \
    -f call.sql@10 -f input.sql@1 -f noise.sql@4 $DB 2>&1) || { echo "$bench" >&2; exit 1; }
echo "$bench" | grep -E "^(number of clients|number of transactions|tps)" || true
out=$("$PGBIN/psql" -X -v ON_ERROR_STOP=1 -d $DB -f "$here/check.sql")
echo "$out"
"$PGBIN/psql" -X -q -d postgres -c "DROP DATABASE $DB"
field() { echo "$out" | awk -v h="$1" '
    $0 ~ h { split($0, hs, "|"); for (i in hs) { gsub(/ /, "", hs[i]); if (hs[i] == h) col = i }; getline; getline; split($0, vs, "|"); gsub(/ /, "", vs[col]); print vs[col]; exit }'; }
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
echo "concurrency: ok ($allowed wipes allowed, $refused refused, 0 violations)"
