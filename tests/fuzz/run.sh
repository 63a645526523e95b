#!/usr/bin/env bash
# Random queries as an attacker would send them: Debian's sqlsmith, connected as a role with
# USAGE on schema pg_labels and nothing else of the extension's (plus a table of its own with
# labelset and scope columns), over a database holding the dump suite's workload. Any function,
# operator, view or table it can see is fair game, in any combination.
#
# Fails if the server log shows a backend that died (a crash restarts every backend), or an
# internal error raised from the extension's Rust code (a panic: "pg_labels: internal error",
# which names its Rust location in the server log only; or an XX000 located in a .rs file).
# PostgreSQL's own XX000s (e.g. "invalid INTERVAL typmod" for a random typmod) are not ours.
# Then every function of the extension is called as three roles under odd settings
# (every_function.py), and nothing a client should never see may come back.
# Needs PGHOST/PGPORT/PGUSER of a cluster where pg_labels is installed and SERVER_LOG, its log.
#   FUZZ_QUERIES=N (default 4000), FUZZ_SEED=N (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${PGHOST:?}" "${PGPORT:?}" "${PGUSER:?}" "${SERVER_LOG:?set SERVER_LOG to the log file of the server}"
export PGHOST PGPORT PGUSER
db=pg_labels_fuzz
psql_() { "${PGBIN:+$PGBIN/}psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS regress_fuzz" >/dev/null 2>&1 || true' EXIT
psql_ -d "$db" -c "CREATE EXTENSION pg_labels"
psql_ -d "$db" >/dev/null <<'SQL'
DO $$ DECLARE r text; BEGIN
    FOREACH r IN ARRAY ARRAY['dump_platform', 'dump_alice', 'dump_bob', 'dump_analyst', 'regress_fuzz'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I LOGIN', r);
        END IF;
    END LOOP;
END $$;
SQL
psql_ -d "$db" -f tests/workload/setup.sql -f tests/workload/data.sql >/dev/null
psql_ -d "$db" >/dev/null <<'SQL'
GRANT USAGE ON SCHEMA pg_labels TO regress_fuzz;
CREATE SCHEMA fuzz AUTHORIZATION regress_fuzz;
SET ROLE regress_fuzz;
CREATE TABLE fuzz.t (id int, l labelset, s scope);
INSERT INTO fuzz.t SELECT i, '{origin:slack,area:acme/ops}', 'acme/ops' FROM generate_series(1, 100) i;
RESET ROLE;
ALTER ROLE regress_fuzz SET statement_timeout = '5s';
-- the SQLSTATE and the source location of every error in the log
ALTER ROLE regress_fuzz SET log_error_verbosity = 'verbose';
-- count the calls of every function (the extension's included) the fuzzer's queries make
ALTER ROLE regress_fuzz SET track_functions = 'all';
SQL

from=$(($(stat -c %s "$SERVER_LOG") + 1))
queries=${FUZZ_QUERIES:-4000}
set +e
timeout 600 sqlsmith --target="host=$PGHOST port=$PGPORT dbname=$db user=regress_fuzz" \
    --seed="${FUZZ_SEED:-1}" --max-queries="$queries" >/dev/null 2>"${TMPDIR:-/tmp}/pg_labels_fuzz.err"
status=$?
set -e
tail -c +"$from" "$SERVER_LOG" >"${TMPDIR:-/tmp}/pg_labels_fuzz.log"
log=${TMPDIR:-/tmp}/pg_labels_fuzz.log

errors=$(grep -c 'ERROR:  [0-9A-Z]\{5\}:' "$log" || true)
# the extension raises its errors with no source location: an ERROR with no LOCATION line
ours=$(awk '/ERROR:  [0-9A-Z]{5}:/ { if (open) n++; open = 1; next } /LOCATION:/ { open = 0 } END { if (open) n++; print n + 0 }' "$log")
echo "sqlsmith: $queries queries (exit $status); $errors errors in the log, $ours raised by pg_labels"
fail=0
if grep -E 'terminated by signal|was terminated|PANIC' "$log"; then
    echo "a backend died"; fail=1
fi
# an internal error whose location is the extension's Rust code
if awk '/ERROR:  XX000:/ { x = $0; next } x && /LOCATION:/ { if ($0 ~ /\.rs:[0-9]/) { print x; print; bad = 1 } x = "" } END { exit !bad }' "$log"; then
    echo "an internal error (XX000) from the extension"; fail=1
fi
if grep -E 'panicked at|pg_labels: internal error' "$log"; then
    echo "a Rust panic reached the log"; fail=1
fi
[ "$status" -le 1 ] || { echo "sqlsmith itself failed ($status)"; tail -5 "${TMPDIR:-/tmp}/pg_labels_fuzz.err"; fail=1; }
# what of the extension the queries reached: calls of its functions (operators, casts and
# I/O included), counted once the fuzzer's backend has gone and reported its statistics
sleep 1
calls=$(psql_ -d "$db" -At -c "SELECT pg_stat_force_next_flush()" -c "
    SELECT count(DISTINCT f.funcid) || ' functions, ' || coalesce(sum(f.calls), 0) || ' calls'
      FROM pg_stat_user_functions f
      JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = f.funcid AND d.deptype = 'e'
      JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_labels'" | tail -1)
echo "the queries called the extension's code: $calls"
case "$calls" in 0\ functions*|"") echo "no query reached the extension: the fuzzing did not test it"; fail=1 ;; esac
# every function, as three roles, under odd settings
PGBIN=${PGBIN:-} python3 tests/fuzz/every_function.py "$db" || fail=1
[ "$fail" = 0 ] && echo "fuzz: ok"
exit "$fail"
