#!/usr/bin/env bash
# Backup and restore as a DBA does them, in every natural form, as the superuser:
#   custom     pg_dump -Fc, pg_restore into a new database
#   plain      pg_dump | psql into a new database (ON_ERROR_STOP: not one error)
#   directory  pg_dump -Fd -j2, pg_restore -j2 into a new database
#   dumpall    pg_dumpall | psql into a new cluster (roles included)
#   data-only  pg_restore --data-only into an existing install (setup.sql)
# After each: every platform table holds the same rows (sorted COPY), the same sequences,
# privileges and policies; the sequences continue past the restored ids; and enforcement is on:
# a tainted tool call is refused, the trail is append-only, a restored crossing is honored,
# an analyst sees the scope granted, and a non-superuser cannot write a decided row.
# Uses the cluster of test.sh (PGHOST, PGPORT) and starts a second one for pg_dumpall.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
work=$(mktemp -d /tmp/pg_labels_dump.XXXXXX)
chmod 755 "$work"
chown postgres: "$work"  # the second cluster puts its socket and log here
second=""
cleanup() {
    [ -n "$second" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/cluster" -m immediate stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
q() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "dump: FAILED ($*)" >&2; exit 1; }

DATABASES=(dump_src dump_custom dump_plain dump_directory dump_data)
for db in "${DATABASES[@]}"; do q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db"; done
q -d postgres <<'SQL'
DO $$ BEGIN
  PERFORM 1 FROM pg_roles WHERE rolname = 'dump_platform';
  IF NOT FOUND THEN
    CREATE ROLE dump_platform LOGIN; CREATE ROLE dump_alice LOGIN;
    CREATE ROLE dump_bob LOGIN; CREATE ROLE dump_analyst LOGIN;
  END IF;
END $$;
SQL

# What must survive: every table of the schema (sorted rows), sequences, privileges, policies.
snapshot() { # $@: psql connection options
    q "$@" -At <<'SQL'
SELECT 'extension ' || extversion FROM pg_extension WHERE extname = 'pg_labels';
SELECT format('sequence %s %s', c.relname, s.last_value)
  FROM pg_class c, LATERAL (SELECT * FROM pg_sequences WHERE schemaname = 'pg_labels' AND sequencename = c.relname) s
 WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind = 'S' ORDER BY 1;
SELECT format('acl %s %s', c.relname, c.relacl) FROM pg_class c
 WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S') ORDER BY 1;
SELECT format('acl %s %s', p.oid::regprocedure, p.proacl) FROM pg_proc p
 WHERE p.pronamespace = 'pg_labels'::regnamespace ORDER BY 1;
SELECT format('policy %s %s %s %s %s %s', tablename, policyname, permissive, roles, cmd, qual)
  FROM pg_policies WHERE schemaname = 'pg_labels' ORDER BY 1;
SELECT format('rls %s %s %s', relname, relrowsecurity, relforcerowsecurity) FROM pg_class
 WHERE relnamespace = 'pg_labels'::regnamespace AND relkind IN ('r', 'p') ORDER BY 1;
SELECT format('trigger %s %s %s', tgrelid::regclass, tgname, tgenabled) FROM pg_trigger
 WHERE tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'pg_labels'::regnamespace) ORDER BY 1;
SELECT format('rows %s: %s', c.relname, x.rows) FROM pg_class c,
  LATERAL (SELECT (xpath('/row/r/text()', query_to_xml(format(
    'SELECT coalesce(string_agg(t::text, %L ORDER BY t::text), %L) AS r FROM pg_labels.%I t',
    E'\n', '', c.relname), false, true, '')))[1]::text AS rows) x
 WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
 ORDER BY c.relname;
SQL
}

# Enforcement after a restore. $@: psql connection options (the database included).
enforced() {
    local out
    # ids continue: a new step, share and crossing take ids past the restored ones
    local max_step max_crossing
    max_step=$(q "$@" -At -c "SELECT max(id) FROM pg_labels.steps")
    max_crossing=$(q "$@" -At -c "SELECT max(id) FROM pg_labels.crossings")
    # run 1 read finance data shared under crossing 1: its call passes only if the restored
    # crossing is honored
    q "$@" -c "SET ROLE dump_platform" \
        -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.read')" \
        || fail "a restored crossing is not honored"
    [ "$(q "$@" -At -c "SELECT max(id) > $max_step FROM pg_labels.steps")" = t ] || fail "step ids do not continue"
    out=$(q "$@" -At -c "SET ROLE dump_bob" -c "SELECT pg_labels.authorize_crossing('acme/finance', 'acme/ops', 'after restore')")
    [ "$out" -gt "$max_crossing" ] || fail "crossing ids do not continue (got $out after $max_crossing)"
    # refusals, by SQLSTATE: a tainted financial call; an UPDATE of the trail, even by the
    # superuser; a decided row written by a non-superuser with row security off
    out=$("$PGBIN/psql" -X -q "$@" -c '\set VERBOSITY sqlstate' -c "SET ROLE dump_platform" \
        -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.pay')" 2>&1 || true)
    [[ "$out" == *"ERROR:  23L02"* ]] || fail "a tainted tool call is not refused: $out"
    out=$("$PGBIN/psql" -X -q "$@" -c '\set VERBOSITY sqlstate' \
        -c "UPDATE pg_labels.steps SET decision = 'allowed' WHERE id = (SELECT min(id) FROM pg_labels.steps)" 2>&1 || true)
    [[ "$out" == *"ERROR:  23L05"* ]] || fail "the trail is not append-only: $out"
    out=$("$PGBIN/psql" -X -q "$@" -c '\set VERBOSITY sqlstate' -c "SET ROLE dump_platform" -c "SET row_security = off" \
        -c "INSERT INTO pg_labels.steps (run_id, kind, tool, decision) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.pay', 'allowed')" 2>&1 || true)
    [[ "$out" == *"ERROR:  42501"* ]] || fail "a non-superuser wrote a decided row: $out"
    # the analyst sees what the scope granted can carry (run 3; run 1 read finance data), only once entered
    out=$(q "$@" -At -c "SET ROLE dump_analyst" -c "SELECT count(*) FROM pg_labels.runs" \
        -c "SELECT pg_labels.enter_scope('acme/ops', true) IS NOT NULL" \
        -c "SELECT count(*) FROM pg_labels.runs" -c "SELECT count(*) > 0 FROM pg_labels.trail" | tr '\n' ' ')
    [ "$out" = "0 t 1 t " ] || fail "the analyst's grant does not work as before: $out"
}

log() { printf '\n--- %s\n' "$*"; }
check() { # $1 form, then psql connection options
    local form=$1
    shift
    snapshot "$@" >"$work/$form.snapshot"
    diff -u "$work/source.snapshot" "$work/$form.snapshot" || fail "$form: the restored database differs"
    enforced "$@"
    echo "$form: ok"
}

log "source: the seed scenario and a sharing, crossing and approval workload"
q -d postgres -c "CREATE DATABASE dump_src"
q -d dump_src -f "$here/setup.sql" -f "$here/data.sql" >/dev/null
snapshot -d dump_src >"$work/source.snapshot"
grep -c "" "$work/source.snapshot" | xargs echo "snapshot lines:"
"$PGBIN/pg_dump" -d dump_src -Fc -f "$work/src.dump"
"$PGBIN/pg_dump" -d dump_src -f "$work/src.sql"
"$PGBIN/pg_dump" -d dump_src -Fd -j2 -f "$work/src.dir"

log "custom: pg_dump -Fc | pg_restore"
q -d postgres -c "CREATE DATABASE dump_custom"
"$PGBIN/pg_restore" --exit-on-error -d dump_custom "$work/src.dump"
check custom -d dump_custom

log "plain: pg_dump | psql"
q -d postgres -c "CREATE DATABASE dump_plain"
q -d dump_plain -f "$work/src.sql" >/dev/null
check plain -d dump_plain

log "directory: pg_dump -Fd -j2 | pg_restore -j2"
q -d postgres -c "CREATE DATABASE dump_directory"
"$PGBIN/pg_restore" --exit-on-error -j2 -d dump_directory "$work/src.dir"
check directory -d dump_directory

log "data-only: pg_restore --data-only into an install set up as before"
q -d postgres -c "CREATE DATABASE dump_data"
q -d dump_data -f "$here/setup.sql" >/dev/null
"$PGBIN/pg_restore" --exit-on-error --data-only -d dump_data "$work/src.dump"
check data-only -d dump_data

log "dumpall: pg_dumpall | psql into a new cluster"
mkdir "$work/cluster"
chown postgres: "$work/cluster"
runuser -u postgres -- "$PGBIN/initdb" -D "$work/cluster" -U postgres -A trust --no-sync \
    --encoding UTF8 --locale C.UTF-8 >/dev/null
second=1
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/cluster" -l "$work/cluster.log" -w \
    -o "-c listen_addresses='' -k $work -p 5433 -c fsync=off" start >/dev/null
# the whole cluster but the other suites' databases
exclude=()
while read -r db; do exclude+=("--exclude-database=$db"); done < <(q -d postgres -At -c \
    "SELECT datname FROM pg_database WHERE datname NOT IN ('dump_src', 'postgres', 'template0', 'template1')")
"$PGBIN/pg_dumpall" "${exclude[@]}" -f "$work/all.sql"
# the new cluster's bootstrap superuser exists already: the one error a DBA sees
"$PGBIN/psql" -X -q -h "$work" -p 5433 -d postgres -f "$work/all.sql" >"$work/all.out" 2>&1 || true
errors=$(grep "ERROR:" "$work/all.out" | grep -v 'role "postgres" already exists' || true)
[ -z "$errors" ] || fail "pg_dumpall | psql: $errors"
check dumpall -h "$work" -p 5433 -d dump_src

for db in "${DATABASES[@]}"; do q -d postgres -c "DROP DATABASE $db"; done
echo "dump: ok (five restore forms: same rows, sequences, privileges and policies; enforcement on; ids continue)"
