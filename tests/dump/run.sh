#!/usr/bin/env bash
# Backup and restore as a DBA does them, in every natural form, as the superuser:
#   custom     pg_dump -Fc, pg_restore into a new database
#   plain      pg_dump | psql into a new database (ON_ERROR_STOP: not one error)
#   directory  pg_dump -Fd -j2, pg_restore -j2 into a new database
#   dumpall    pg_dumpall | psql into a new cluster (roles included)
#   data-only  pg_restore --data-only into an existing install (tests/workload/setup.sql)
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
source "$here/../workload/checks.sh"

DATABASES=(dump_src dump_custom dump_plain dump_directory dump_data)
for db in "${DATABASES[@]}"; do q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db"; done
workload_roles
snapshot() { data_snapshot "$@"; schema_snapshot "$@"; }
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
q -d dump_src -c "CREATE EXTENSION pg_labels" -f "$here/../workload/setup.sql" -f "$here/../workload/data.sql" >/dev/null
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
q -d dump_data -c "CREATE EXTENSION pg_labels" -f "$here/../workload/setup.sql" >/dev/null
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
