-- The sealed trail: a run's scope never changes, labels only grow, steps are never updated or
-- deleted, nothing is truncated; for superusers too. Retention goes through purge().
\pset null '(null)'
INSERT INTO pg_labels.runs (id, scope) VALUES ('55555555-5555-5555-5555-555555555555', 'globex/ops');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('55555555-5555-5555-5555-555555555555', 'input', '{origin:event,tag:pii}');
SELECT current_setting('is_superuser') AS superuser;

\set VERBOSITY verbose
UPDATE pg_labels.runs SET scope = 'globex' WHERE id = '55555555-5555-5555-5555-555555555555';
\set VERBOSITY default
UPDATE pg_labels.runs SET labels = '{area:globex/ops}' WHERE id = '55555555-5555-5555-5555-555555555555';
UPDATE pg_labels.runs SET agent = 'other' WHERE id = '55555555-5555-5555-5555-555555555555';
UPDATE pg_labels.runs SET opened_at = opened_at - interval '1 day' WHERE id = '55555555-5555-5555-5555-555555555555';
DELETE FROM pg_labels.runs WHERE id = '55555555-5555-5555-5555-555555555555';
TRUNCATE pg_labels.runs CASCADE;
\set VERBOSITY verbose
UPDATE pg_labels.steps SET labels = '{}' WHERE run_id = '55555555-5555-5555-5555-555555555555';
\set VERBOSITY default
DELETE FROM pg_labels.steps WHERE run_id = '55555555-5555-5555-5555-555555555555';
TRUNCATE pg_labels.steps;
-- labels may grow directly (more restrictive, never less)
UPDATE pg_labels.runs SET labels = labels || '{tag:audited}' WHERE id = '55555555-5555-5555-5555-555555555555'
RETURNING labels;
-- the data is all still there
SELECT r.scope, r.labels, count(s.*) AS steps FROM pg_labels.runs r JOIN pg_labels.steps s ON s.run_id = r.id
WHERE r.id = '55555555-5555-5555-5555-555555555555' GROUP BY 1, 2;

-- retention: purge() deletes whole runs with nothing newer than the cutoff; EXECUTE is the DBA's
SELECT pg_labels.purge(now() - interval '1 year') AS purged_nothing;
CREATE ROLE regress_pg_labels_nobody;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_nobody;
SET ROLE regress_pg_labels_nobody;
SELECT pg_labels.purge(now() - interval '1 year');
RESET ROLE;
REVOKE USAGE ON SCHEMA pg_labels FROM regress_pg_labels_nobody;
DROP ROLE regress_pg_labels_nobody;
-- it never removes the present: a cutoff later than the start of the month before this one
-- (UTC), an infinite one or none is refused, for a superuser too (the messages name today's
-- dates: their first words here)
DO $$
DECLARE
  cutoff timestamptz;
BEGIN
  FOREACH cutoff IN ARRAY ARRAY[now() - interval '1 day', now() + interval '1 day', 'infinity', '-infinity', NULL,
                                 date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 month' + interval '1 second']
  LOOP
    BEGIN
      PERFORM pg_labels.purge(cutoff);
      RAISE NOTICE 'purged';
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE '%: %', SQLSTATE, split_part(SQLERRM, ':', 1);
    END;
  END LOOP;
END $$;
-- the latest cutoff it takes: the start of the month before this one (UTC)
SELECT pg_labels.purge(date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 month') AS purged_runs;
SELECT (SELECT count(*) FROM pg_labels.runs) AS runs, (SELECT count(*) FROM pg_labels.steps) AS steps;
-- after purge, deletes are refused again (the permission does not leak)
DELETE FROM pg_labels.steps WHERE run_id = '55555555-5555-5555-5555-555555555555';

-- the extension cannot be dropped while the trail holds rows (with CASCADE neither); a
-- superuser removes it on purpose around the triggers, as the refusal's HINT says, and creates
-- it again in the same session: the triggers find the new tables
DROP EXTENSION pg_labels;
DROP EXTENSION pg_labels CASCADE;
BEGIN;
SET LOCAL session_replication_role = replica;
DROP EXTENSION pg_labels CASCADE;
COMMIT;
CREATE EXTENSION pg_labels;
INSERT INTO pg_labels.tools VALUES ('again.read', 'read');
INSERT INTO pg_labels.runs (id, scope) VALUES ('66666666-6666-6666-6666-666666666666', 'acme');
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES
  ('66666666-6666-6666-6666-666666666666', 'tool_called', 'again.read', '{tag:again}')
RETURNING decision;
SELECT labels FROM pg_labels.runs;
