-- Every trigger function of the extension, attached by an ordinary role (USAGE on schema
-- pg_labels, nothing else) to tables of its own: with the platform tables' column names but
-- wrong types, with the right types, at the wrong timing, for the wrong event, statement-level,
-- for TRUNCATE, and INSTEAD OF on a view. Each is refused cleanly with 39P01 naming the function
-- and the table; nothing is written, nothing crashes (scripts/test.sh checks the server log).
\pset null '(null)'
CREATE ROLE regress_hostile LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO regress_hostile;
GRANT CREATE ON SCHEMA public TO regress_hostile;
\c - regress_hostile
SELECT current_setting('is_superuser') AS superuser;

-- look-alikes of the platform tables: the same column names, every type wrong
CREATE TEMP TABLE steps (id int8, run_id int8, kind int8, tool int8, labels int8, args int8,
  decision int8, rule int8, reason int8, request_id int8, actor int8, origin_run int8,
  artifact_id int8, digest int8, share_id int8, crossing_ids int8, created_at int8);
CREATE TEMP TABLE runs (id int8, agent int8, agent_version int8, scope int8, labels int8,
  listener_id int8, opened_at int8);
CREATE TEMP TABLE artifacts (id int8, origin_run int8, digest int8, labels int8, actor int8, created_at int8);
CREATE TEMP TABLE shares (id int8, artifact_id int8, to_scope int8, to_run int8, crossing_id int8,
  actor int8, created_at int8);
CREATE TEMP TABLE crossings (id int8, from_scope int8, to_scope int8, authorized_by int8,
  reason int8, expires_at int8, revoked_at int8, revoked_by int8, created_at int8);
CREATE TEMP TABLE agent_versions (agent int8, version int8, scope int8, steps int8,
  needs_approval int8, published_by int8, published_at int8);
-- and copies with the right types, tables of the role's own
CREATE TABLE regress_hostile_steps (id bigint, run_id uuid, kind text, tool text,
  labels labelset DEFAULT '{}', args jsonb, decision text, rule text, reason text,
  request_id bigint, actor text DEFAULT current_user, origin_run uuid, artifact_id uuid,
  digest text, share_id bigint, crossing_ids bigint[], created_at timestamptz DEFAULT now());
CREATE TABLE regress_hostile_runs (id uuid, agent text, agent_version int, scope scope,
  labels labelset DEFAULT '{}', listener_id bigint, opened_at timestamptz DEFAULT now());
CREATE VIEW regress_hostile_steps_view AS SELECT * FROM regress_hostile_steps;

CREATE TABLE regress_hostile_outcome (fn text, how text, sqlstate text, message text);
SET client_min_messages = warning;

-- every trigger function, every way of attaching it, one insert/update/delete/truncate each
DO $$
DECLARE
  fn text;
  t record;
  state text;
  msg text;
BEGIN
  FOR fn IN SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'pg_labels' AND p.prorettype = 'trigger'::regtype ORDER BY 1
  LOOP
    FOR t IN SELECT * FROM (VALUES
        ('pg_temp.steps',   'BEFORE INSERT ON pg_temp.steps FOR EACH ROW',   'INSERT INTO pg_temp.steps (id, run_id, kind, labels) VALUES (1, 2, 3, 4)'),
        ('pg_temp.runs',    'BEFORE INSERT OR UPDATE OR DELETE ON pg_temp.runs FOR EACH ROW', 'INSERT INTO pg_temp.runs (id, scope, labels) VALUES (1, 2, 3)'),
        ('pg_temp.artifacts', 'BEFORE INSERT ON pg_temp.artifacts FOR EACH ROW', 'INSERT INTO pg_temp.artifacts (origin_run, digest) VALUES (1, 2)'),
        ('pg_temp.shares',  'BEFORE INSERT ON pg_temp.shares FOR EACH ROW',  'INSERT INTO pg_temp.shares (artifact_id, to_scope) VALUES (1, 2)'),
        ('pg_temp.crossings', 'BEFORE INSERT OR UPDATE OR DELETE ON pg_temp.crossings FOR EACH ROW', 'INSERT INTO pg_temp.crossings (from_scope, to_scope, reason) VALUES (1, 2, 3)'),
        ('pg_temp.agent_versions', 'BEFORE INSERT ON pg_temp.agent_versions FOR EACH ROW', 'INSERT INTO pg_temp.agent_versions (agent, version, steps) VALUES (1, 2, 3)'),
        ('own steps, right types', 'BEFORE INSERT ON regress_hostile_steps FOR EACH ROW',
            $q$INSERT INTO regress_hostile_steps (id, run_id, kind, labels) VALUES (1, gen_random_uuid(), 'tool_called', '{}')$q$),
        ('own runs, right types', 'BEFORE INSERT ON regress_hostile_runs FOR EACH ROW',
            $q$INSERT INTO regress_hostile_runs (id, scope, labels) VALUES (gen_random_uuid(), 'acme', '{}')$q$),
        ('AFTER ROW', 'AFTER INSERT ON regress_hostile_steps FOR EACH ROW',
            $q$INSERT INTO regress_hostile_steps (id, run_id, kind, labels) VALUES (1, gen_random_uuid(), 'input', '{}')$q$),
        ('statement-level', 'BEFORE INSERT ON regress_hostile_steps FOR EACH STATEMENT',
            $q$INSERT INTO regress_hostile_steps (id, run_id, kind, labels) VALUES (1, gen_random_uuid(), 'input', '{}')$q$),
        ('AFTER statement', 'AFTER UPDATE ON regress_hostile_steps FOR EACH STATEMENT',
            'UPDATE regress_hostile_steps SET kind = kind'),
        ('TRUNCATE', 'BEFORE TRUNCATE ON regress_hostile_steps FOR EACH STATEMENT',
            'TRUNCATE regress_hostile_steps'),
        ('DELETE row', 'BEFORE DELETE ON regress_hostile_runs FOR EACH ROW',
            'DELETE FROM regress_hostile_runs'),
        ('INSTEAD OF on a view', 'INSTEAD OF INSERT ON regress_hostile_steps_view FOR EACH ROW',
            $q$INSERT INTO regress_hostile_steps_view (id, run_id, kind, labels) VALUES (1, gen_random_uuid(), 'input', '{}')$q$)
      ) AS v(how, spec, stmt)
    LOOP
      BEGIN
        -- a row to update or delete, where the test needs one (no trigger yet)
        EXECUTE format('DROP TRIGGER IF EXISTS hostile ON %s', split_part(split_part(t.spec, ' ON ', 2), ' ', 1));
        IF t.how IN ('AFTER statement') THEN
          INSERT INTO regress_hostile_steps (id, run_id, kind, labels) VALUES (9, gen_random_uuid(), 'input', '{}');
        ELSIF t.how = 'DELETE row' THEN
          INSERT INTO regress_hostile_runs (id, scope, labels) VALUES (gen_random_uuid(), 'acme', '{}');
        END IF;
        EXECUTE format('CREATE TRIGGER hostile %s EXECUTE FUNCTION pg_labels.%I()', t.spec, fn);
        EXECUTE t.stmt;
        state := 'ok';
        msg := '';
      EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      END;
      INSERT INTO regress_hostile_outcome VALUES (fn, t.how, state, msg);
    END LOOP;
  END LOOP;
END $$;

-- every attempt refused with 39P01, by message naming the function
SELECT fn, count(*) AS attempts, string_agg(DISTINCT sqlstate, ',') AS sqlstates,
       bool_and(message LIKE 'pg_labels.' || fn || '() cannot be used as a trigger%') AS names_the_function
FROM regress_hostile_outcome GROUP BY fn ORDER BY fn;
-- two of them in full
SELECT how, regexp_replace(message, 'pg_temp_[0-9]+', 'pg_temp') AS message FROM regress_hostile_outcome
WHERE fn = 'steps_insert' AND how IN ('pg_temp.steps', 'AFTER ROW', 'INSTEAD OF on a view') ORDER BY how;
-- nothing was written by any of them
SELECT (SELECT count(*) FROM pg_temp.steps) AS temp_steps,
       (SELECT count(*) FROM regress_hostile_steps WHERE id <> 9) AS own_steps;

-- calling a trigger function directly is refused too
SELECT pg_labels.steps_insert();

RESET client_min_messages;
DROP VIEW regress_hostile_steps_view;
DROP TABLE regress_hostile_steps, regress_hostile_runs, regress_hostile_outcome;
\c - postgres
-- even on the extension's own table, a trigger function refuses another timing or event (a
-- superuser attaching it by mistake)
BEGIN;
CREATE TRIGGER regress_wrong AFTER INSERT ON pg_labels.steps FOR EACH ROW EXECUTE FUNCTION pg_labels.steps_insert();
INSERT INTO pg_labels.runs (id, scope) VALUES ('be000000-0000-0000-0000-000000000001', 'acme');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('be000000-0000-0000-0000-000000000001', 'input');
ROLLBACK;
BEGIN;
INSERT INTO pg_labels.runs (id, scope) VALUES ('be000000-0000-0000-0000-000000000002', 'acme');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('be000000-0000-0000-0000-000000000002', 'input');
CREATE TRIGGER regress_wrong BEFORE UPDATE ON pg_labels.steps FOR EACH ROW EXECUTE FUNCTION pg_labels.runs_seal();
UPDATE pg_labels.steps SET reason = reason WHERE run_id = 'be000000-0000-0000-0000-000000000002';
ROLLBACK;
BEGIN;
INSERT INTO pg_labels.tools (name, effect) VALUES ('regress.x', 'read');
CREATE TRIGGER regress_wrong2 BEFORE UPDATE ON pg_labels.tools FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
UPDATE pg_labels.tools SET description = 'x' WHERE name = 'regress.x';
ROLLBACK;
REVOKE CREATE ON SCHEMA public FROM regress_hostile;
DROP OWNED BY regress_hostile;
DROP ROLE regress_hostile;
