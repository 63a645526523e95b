-- The analysts' three queries of issue 18 (the trail of one run, refusals by day, the runs
-- carrying a label) under row-level security, as a role that is not a superuser: each plan uses
-- the index it is meant to (EXPLAIN), and each answer is exactly the rows the analyst's scope
-- can carry, counted by the superuser without row-level security. A step is visible with its
-- run: the steps' policy (pg_labels.step_readable()) reads the run once per run of a query (its
-- answer is kept while what the query sees cannot change), and a run whose labels grow, or a
-- savepoint rolled back, changes the next statement's answer.
\pset null '(null)'
CREATE ROLE regress_aq_analyst LOGIN;
CREATE ROLE regress_aq_writer LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO regress_aq_analyst, regress_aq_writer;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.trail, pg_labels.refusals, pg_labels.refused_writes TO regress_aq_analyst;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_aq_writer;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_aq_writer', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_aq_writer;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_aq_analyst', 'acme');
INSERT INTO pg_labels.tools (name, effect) VALUES ('aq.read', 'read'), ('aq.wipe', 'destructive');
-- finance data may enter acme/platform runs: a run that takes some in is no longer one an
-- analyst of acme/platform can see
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'month-end reports') > 0 AS crossing;

-- 60 runs: 40 in acme/platform, 20 in acme/finance (run n is in finance when n % 3 = 0),
-- every fourth carrying tag:pii; 6,000 steps, one in ten a gate that blocked
SET ROLE regress_aq_writer;
INSERT INTO pg_labels.runs (id, scope)
SELECT ('ae000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid,
       CASE WHEN i % 3 = 0 THEN 'acme/finance' ELSE 'acme/platform' END::scope
FROM generate_series(1, 60) i;
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT id, 'input', CASE WHEN right(id::text, 2)::int % 4 = 0 THEN '{tag:pii}' ELSE '{origin:slack}' END::labelset
FROM pg_labels.runs WHERE id::text LIKE 'ae%' ORDER BY id;
INSERT INTO pg_labels.steps (run_id, kind, tool, labels)
SELECT ('ae000000-0000-0000-0000-' || lpad((1 + n % 60)::text, 12, '0'))::uuid,
       CASE WHEN n % 10 = 0 THEN 'gate_decided' ELSE 'tool_called' END,
       CASE WHEN n % 10 = 0 THEN 'aq.wipe' ELSE 'aq.read' END, '{}'
FROM generate_series(1, 5940) n;
RESET ROLE;
-- and 2,000 runs of another company with no steps: a trail's runs span more than a few pages,
-- so a run is found through its primary key, as in production
INSERT INTO pg_labels.runs (id, scope)
SELECT ('af000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid, 'globex/ops' FROM generate_series(1, 2000) i;
ANALYZE pg_labels.runs, pg_labels.steps;

-- what an analyst in acme/platform may see, counted by the superuser (no row-level security)
CREATE TABLE public.aq_expected AS
SELECT (SELECT count(*) FROM pg_labels.steps WHERE run_id = 'ae000000-0000-0000-0000-000000000007') AS run7_steps,
       (SELECT count(*) FROM pg_labels.refusals WHERE run_scope = 'acme/platform') AS refusals_seen,
       (SELECT count(*) FROM pg_labels.refusals) AS refusals_all,
       (SELECT count(*) FROM pg_labels.runs WHERE scope = 'acme/platform' AND labels @> '{tag:pii}') AS pii_runs_seen,
       (SELECT count(*) FROM pg_labels.runs WHERE labels @> '{tag:pii}') AS pii_runs_all;
SELECT * FROM public.aq_expected;
GRANT SELECT ON public.aq_expected TO regress_aq_analyst;

\c - regress_aq_analyst
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
-- (the trail is a ring of 24 partitions: a plan is shown with each kind of line once and how
-- many partitions it covers)
CREATE FUNCTION pg_temp.plan_summary(q text) RETURNS TABLE (plan_line text, partitions bigint)
LANGUAGE plpgsql AS $$
DECLARE l text; lines text[] := '{}';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    lines := lines || regexp_replace(regexp_replace(btrim(l), ' s_[0-9]+$', ''),
                                     'steps_[0-9]{2}', 'steps_NN', 'g');
    lines[cardinality(lines)] := regexp_replace(lines[cardinality(lines)], '''\d+''::oid', '''<oid>''::oid', 'g');
  END LOOP;
  RETURN QUERY SELECT x, count(*) FROM unnest(lines) WITH ORDINALITY AS u(x, n) GROUP BY x ORDER BY min(n);
END $$;
-- the trail of one run: its steps through (run_id, id), its row through the primary key; the
-- policy is a filter with no subquery
SELECT * FROM pg_temp.plan_summary($$SELECT * FROM pg_labels.trail WHERE run_id = 'ae000000-0000-0000-0000-000000000007' ORDER BY id$$);
SELECT count(*) = (SELECT run7_steps FROM public.aq_expected) AS run7_as_expected
FROM pg_labels.trail WHERE run_id = 'ae000000-0000-0000-0000-000000000007';
SELECT count(*) AS run9_in_finance FROM pg_labels.trail WHERE run_id = 'ae000000-0000-0000-0000-000000000009';
-- refusals by day: the index on the time of gate decisions that blocked or asked
SELECT * FROM pg_temp.plan_summary($$SELECT date_trunc('day', created_at), count(*) FROM pg_labels.refusals GROUP BY 1$$);
SELECT sum(n) = (SELECT refusals_seen FROM public.aq_expected) AS refusals_as_expected
FROM (SELECT date_trunc('day', created_at), count(*) AS n FROM pg_labels.refusals GROUP BY 1) d;
-- the runs carrying tag:pii: the runs' GIN index
SET LOCAL enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pg_labels.runs WHERE labels @> '{tag:pii}';
RESET enable_seqscan;
SELECT count(*) = (SELECT pii_runs_seen FROM public.aq_expected) AS pii_runs_as_expected
FROM pg_labels.runs WHERE labels @> '{tag:pii}';
COMMIT;

-- a kept answer never outlives what it was given for: in one transaction, as run 1's labels
-- grow past the analyst's scope (a writer's step) its steps disappear from the next statement,
-- and come back when that write is rolled back to a savepoint
\c - postgres
BEGIN;
SET ROLE regress_aq_analyst;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
PREPARE run1 AS SELECT count(*) FROM pg_labels.trail WHERE run_id = 'ae000000-0000-0000-0000-000000000001';
PREPARE run1_steps AS SELECT count(*) FROM pg_labels.steps WHERE run_id = 'ae000000-0000-0000-0000-000000000001';
EXECUTE run1;
EXECUTE run1_steps;
SAVEPOINT before_finance;
SET ROLE regress_aq_writer;
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('ae000000-0000-0000-0000-000000000001', 'input', '{area:acme/finance}');
SET ROLE regress_aq_analyst;
EXECUTE run1;
EXECUTE run1_steps;
ROLLBACK TO SAVEPOINT before_finance;
EXECUTE run1;
EXECUTE run1_steps;
-- the same statement under another scope, or as a writer (who reads every row)
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS wider;
EXECUTE run1_steps;
SET ROLE regress_aq_writer;
EXECUTE run1_steps;
COMMIT;

-- a concurrent writer's committed steps change the next statement's answer (a new snapshot):
-- one more step, and one the scope cannot read (finance data entered the run with it; the
-- run's earlier steps stay readable, its row does not)
BEGIN;
SET ROLE regress_aq_analyst;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
EXECUTE run1_steps;
\setenv PGDATABASE :DBNAME
\! "$PG_LABELS_PSQL" -X -q -U postgres -c "SET ROLE regress_aq_writer" -c "INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('ae000000-0000-0000-0000-000000000001', 'input', '{tag:concurrent}'), ('ae000000-0000-0000-0000-000000000001', 'input', '{area:acme/finance}')"
EXECUTE run1_steps;
COMMIT;

-- a writer of a table reads every row of it: the policies ask per row (no subquery) and keep
-- the answer for the statement, so INSERT granted in the transaction, directly or through a
-- role, counts from the next statement, and so does its revoke
BEGIN;
SET ROLE regress_aq_analyst;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT count(*) AS runs_in_scope FROM pg_labels.runs WHERE id::text LIKE 'ae%';
EXECUTE run1_steps;
RESET ROLE;
GRANT INSERT ON pg_labels.runs, pg_labels.steps TO regress_aq_analyst;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_aq_analyst', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_as_writer FROM pg_labels.runs WHERE id::text LIKE 'ae%';
EXECUTE run1_steps;
RESET ROLE;
REVOKE INSERT ON pg_labels.runs, pg_labels.steps FROM regress_aq_analyst;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_revoked FROM pg_labels.runs WHERE id::text LIKE 'ae%';
EXECUTE run1_steps;
RESET ROLE;
GRANT regress_aq_writer TO regress_aq_analyst;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_as_member_of_writer FROM pg_labels.runs WHERE id::text LIKE 'ae%';
EXECUTE run1_steps;
RESET ROLE;
REVOKE regress_aq_writer FROM regress_aq_analyst;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_no_longer_member FROM pg_labels.runs WHERE id::text LIKE 'ae%';
EXECUTE run1_steps;
COMMIT;

-- a privilege granted in a savepoint that is rolled back goes with it, also under REPEATABLE
-- READ (where the snapshot stays the same), granted directly or through a role; a cursor
-- fetched after a REVOKE reads as the role could when it was declared: what the policies
-- decide by is fixed when the query starts, as PostgreSQL checks the query's own privileges
-- then (0.3.1: found at the first row, it told which hidden rows matched)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET ROLE regress_aq_analyst;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT count(*) AS runs_in_scope FROM pg_labels.runs WHERE id::text LIKE 'ae%';
RESET ROLE;
SAVEPOINT grant_insert;
GRANT INSERT ON pg_labels.runs TO regress_aq_analyst;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_aq_analyst', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_as_writer FROM pg_labels.runs WHERE id::text LIKE 'ae%';
RESET ROLE;
ROLLBACK TO SAVEPOINT grant_insert;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_grant_rolled_back FROM pg_labels.runs WHERE id::text LIKE 'ae%';
RESET ROLE;
SAVEPOINT grant_role;
GRANT regress_aq_writer TO regress_aq_analyst;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_as_member_of_writer FROM pg_labels.runs WHERE id::text LIKE 'ae%';
RESET ROLE;
ROLLBACK TO SAVEPOINT grant_role;
SET ROLE regress_aq_analyst;
SELECT count(*) AS runs_membership_rolled_back FROM pg_labels.runs WHERE id::text LIKE 'ae%';
COMMIT;
RESET ROLE;
BEGIN;
GRANT INSERT ON pg_labels.runs TO regress_aq_analyst;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_aq_analyst', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_aq_analyst;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT count(*) AS runs_as_writer FROM pg_labels.runs WHERE id::text LIKE 'ae%';
DECLARE runs_cursor CURSOR FOR SELECT count(*) AS runs_fetched_after_revoke FROM pg_labels.runs WHERE id::text LIKE 'ae%';
RESET ROLE;
REVOKE INSERT ON pg_labels.runs FROM regress_aq_analyst;
SET ROLE regress_aq_analyst;
FETCH runs_cursor;
COMMIT;
RESET ROLE;

-- the policies' functions called directly: a table that does not exist has no writers (as
-- has_table_privilege() answers it, not an error); a writer reads every row, whatever it entered
SET ROLE regress_aq_analyst;
SELECT pg_labels.readable(4000000000::oid::regclass, '{tag:pii}') AS no_such_table,
       pg_labels.readable_in(4000000000::oid::regclass, 'acme/platform') AS no_such_trail,
       pg_labels.readable('pg_labels.runs', '{company:globex}') AS not_a_writer;
SET ROLE regress_aq_writer;
SELECT pg_labels.readable('pg_labels.runs', '{company:globex}') AS writer_of_runs,
       pg_labels.readable_in('pg_labels.steps', 'globex') AS writer_of_steps,
       pg_labels.readable('pg_labels.artifacts', '{company:globex}') AS not_a_writer_of_artifacts;
RESET ROLE;

-- a role that may read the steps but not the runs reads the steps its scope reaches: the
-- steps' policy reads no other table, so no error depends on which hidden rows a query matches
RESET ROLE;
CREATE ROLE regress_aq_steps_only;
GRANT USAGE ON SCHEMA pg_labels TO regress_aq_steps_only;
GRANT SELECT ON pg_labels.steps TO regress_aq_steps_only;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_aq_steps_only', 'acme');
SET ROLE regress_aq_steps_only;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
SELECT count(*) FROM pg_labels.steps WHERE run_id = 'ae000000-0000-0000-0000-000000000002';
ROLLBACK;
SELECT count(*) AS without_a_scope FROM pg_labels.steps WHERE run_id = 'ae000000-0000-0000-0000-000000000002';
RESET ROLE;
DEALLOCATE ALL;
DELETE FROM pg_labels.grants WHERE role::text LIKE 'regress_aq%';
DELETE FROM pg_labels.tools WHERE name LIKE 'aq.%';
DROP TABLE public.aq_expected;
DROP OWNED BY regress_aq_analyst, regress_aq_writer, regress_aq_steps_only;
DROP ROLE regress_aq_analyst, regress_aq_writer, regress_aq_steps_only;
