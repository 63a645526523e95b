# Shared by the dump and upgrade suites (sourced): the roles of the workload (setup.sql,
# data.sql), what must survive a restore or an update, and the enforcement that must hold
# after one. Needs q() (psql with ON_ERROR_STOP) and fail().

workload_roles() {
    q -d postgres <<'SQL'
DO $$ BEGIN
  PERFORM 1 FROM pg_roles WHERE rolname = 'dump_platform';
  IF NOT FOUND THEN
    CREATE ROLE dump_platform LOGIN; CREATE ROLE dump_alice LOGIN;
    CREATE ROLE dump_bob LOGIN; CREATE ROLE dump_analyst LOGIN;
  END IF;
END $$;
SQL
}

# What the DBA's data is, whatever the release: every row of every table of the schema
# (sorted; the 0.2.0 ring slot aside, which is the month of created_at), the sequences, and
# the privileges granted on tables, views, sequences and functions. $@: psql connection options.
# SNAPSHOT_DROP: the row keys left out (a text[] literal; the ring slot by default);
# SNAPSHOT_DROP_STEPS: those left out of the trail's rows besides.
data_snapshot() {
    q -v drop="${SNAPSHOT_DROP:-"{slot}"}" -v drop_steps="${SNAPSHOT_DROP_STEPS:-"{}"}" "$@" -At <<'SQL'
SELECT format('sequence %s %s', c.relname, s.last_value)
  FROM pg_class c, LATERAL (SELECT * FROM pg_sequences WHERE schemaname = 'pg_labels' AND sequencename = c.relname) s
 WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind = 'S' ORDER BY 1;
SELECT format('acl %s %s', c.relname, c.relacl) FROM pg_class c
 WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S') AND NOT c.relispartition ORDER BY 1;
SELECT format('acl %s %s', p.oid::regprocedure, p.proacl) FROM pg_proc p
 WHERE p.pronamespace = 'pg_labels'::regnamespace AND p.proacl IS NOT NULL ORDER BY 1;
SELECT format('rows %s: %s', c.relname, x.rows) FROM pg_class c,
  LATERAL (SELECT (:'drop'::text[] || CASE c.relname WHEN 'steps' THEN :'drop_steps'::text[] ELSE '{}' END)::text AS keys) d,
  LATERAL (SELECT (xpath('/row/r/text()', query_to_xml(format(
    'SELECT coalesce(string_agg((to_jsonb(t) - %L::text[])::text, %L ORDER BY (to_jsonb(t) - %L::text[])::text), %L) AS r FROM pg_labels.%I t',
    d.keys, E'\n', d.keys, '', c.relname), false, true, '')))[1]::text AS rows) x
 WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
 ORDER BY c.relname;
SQL
}

# What the extension made around the data: its version, policies, row security, triggers.
schema_snapshot() {
    q "$@" -At <<'SQL'
SELECT 'extension ' || extversion FROM pg_extension WHERE extname = 'pg_labels';
SELECT format('policy %s %s %s %s %s %s', tablename, policyname, permissive, roles, cmd, qual)
  FROM pg_policies WHERE schemaname = 'pg_labels' ORDER BY 1;
SELECT format('rls %s %s %s', relname, relrowsecurity, relforcerowsecurity) FROM pg_class
 WHERE relnamespace = 'pg_labels'::regnamespace AND relkind IN ('r', 'p') ORDER BY 1;
SELECT format('trigger %s %s %s', tgrelid::regclass, tgname, tgenabled) FROM pg_trigger
 WHERE tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'pg_labels'::regnamespace) ORDER BY 1;
SQL
}

# Enforcement on the workload's database. $@: psql connection options (the database included).
enforced() {
    local out max_step max_crossing
    # ids continue: a new step and crossing take ids past the existing ones
    max_step=$(q "$@" -At -c "SELECT max(id) FROM pg_labels.steps")
    max_crossing=$(q "$@" -At -c "SELECT max(id) FROM pg_labels.crossings")
    # run 1 read finance data shared under crossing 1: its call passes only if the crossing is
    # honored
    q "$@" -c "SET ROLE dump_platform" \
        -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.read')" \
        || fail "a crossing is not honored"
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
    # the analyst sees what the scope granted can carry (run 3; run 1 read finance data), only
    # once entered
    out=$(q "$@" -At -c "SET ROLE dump_analyst" -c "SELECT count(*) FROM pg_labels.runs" \
        -c "SELECT pg_labels.enter_scope('acme/ops', true) IS NOT NULL" \
        -c "SELECT count(*) FROM pg_labels.runs" -c "SELECT count(*) > 0 FROM pg_labels.trail" | tr '\n' ' ')
    [ "$out" = "0 t 1 t " ] || fail "the analyst's grant does not work as before: $out"
    # every run's hash chain holds, the steps just written included
    out=$(q "$@" -At -c "SET client_min_messages = warning" \
        -c "SELECT count(*) FROM pg_labels.runs" -c "SELECT count(*) FROM pg_labels.verify_all()" | tr '\n' ' ')
    [[ "$out" =~ ^[1-9][0-9]*\ 0\ $ ]] || fail "the hash chains do not hold (runs, broken): $out"
}
