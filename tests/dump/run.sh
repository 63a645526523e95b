#!/usr/bin/env bash
# pg_dump keeps the platform tables' rows: dump a database with a trail, restore it into a new
# one, compare, and check that the restored trail is enforced and its ids continue.
# A restore replays rows that were judged when they were written, so it runs with triggers
# off, as pg_restore --disable-triggers does: session_replication_role = replica (superuser).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
q() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
q -d postgres -c "DROP DATABASE IF EXISTS dump_src" -c "DROP DATABASE IF EXISTS dump_dst" \
    -c "CREATE DATABASE dump_src" -c "CREATE DATABASE dump_dst"
q -d dump_src -f "$here/data.sql" >/dev/null
dump=$(mktemp /tmp/pg_labels_dump.XXXXXX.sql)
"$PGBIN/pg_dump" -d dump_src -f "$dump"
PGOPTIONS="-c session_replication_role=replica" q -d dump_dst -f "$dump" >/dev/null
before=$(q -d dump_src -At -f "$here/check.sql")
after=$(q -d dump_dst -At -f "$here/check.sql")
echo "source:   $before"
echo "restored: $after"
[ "$before" = "$after" ] || { echo "dump: FAILED (restored data differs)" >&2; exit 1; }
# enforcement is back, and new steps get new ids
refused=$(q -d dump_dst -At -c "SELECT count(*) FROM pg_labels.steps" \
    -c "DO \$\$ BEGIN INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.pay'); RAISE EXCEPTION 'not refused'; EXCEPTION WHEN SQLSTATE '23L02' THEN RAISE NOTICE 'refused'; END \$\$" 2>&1 | grep -c refused || true)
# run 1 read finance data under crossing 1: its call passes only if the restored crossing is honored
q -d dump_dst -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.read')"
[ "$refused" = 1 ] || { echo "dump: FAILED (the restored trail is not enforced)" >&2; exit 1; }
next=$(q -d dump_dst -At -c "SELECT pg_labels.authorize_crossing('acme/finance', 'acme/ops', 'after restore')")
[ "$next" = 3 ] || { echo "dump: FAILED (crossing ids do not continue: got $next)" >&2; exit 1; }
q -d postgres -c "DROP DATABASE dump_src" -c "DROP DATABASE dump_dst"
rm -f "$dump"
echo "dump: ok (rows kept by pg_dump, enforcement and ids continue after restore)"
