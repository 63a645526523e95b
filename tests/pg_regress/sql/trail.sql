-- The platform tables: runs and steps, the rules on tool calls with their error contract,
-- labels accumulating, the gate. (Roles, approvals and write paths: approvals.sql,
-- write_paths.sql; the sealed trail: sealed.sql.)
\pset null '(null)'

-- the tables are the extension's, and pg_dump keeps their rows
SELECT c.relname, c.relkind,
       EXISTS (SELECT FROM pg_extension e WHERE c.oid = ANY (e.extconfig)) AS dumped
FROM pg_class c WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind IN ('r', 'S')
ORDER BY 1;

INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('tickets.read', 'read', false),
  ('kb.search', 'read', true),
  ('tickets.update', 'reversible_write', false),
  ('stripe.refund', 'financial', false),
  ('db.drop', 'destructive', false);
INSERT INTO pg_labels.tools (name, effect, created_at) VALUES ('bad', 'explode', '2026-01-01 00:00:00+00');

-- opening a run seals its scope and adds the run's own scope label
INSERT INTO pg_labels.runs (id, agent, scope)
VALUES ('11111111-1111-1111-1111-111111111111', 'support-bot', 'acme/platform')
RETURNING id, scope, labels;
INSERT INTO pg_labels.runs (id, agent, scope, labels)
VALUES ('22222222-2222-2222-2222-222222222222', 'finance-bot', 'acme/finance', '{tag:pii,origin:webhook}')
RETURNING id, scope, labels;
INSERT INTO pg_labels.runs (id, scope) VALUES ('33333333-3333-3333-3333-333333333333', 'acme')
RETURNING scope, labels;
-- a run whose initial labels escape its scope is not even opened
\set VERBOSITY verbose
INSERT INTO pg_labels.runs (id, scope, labels) VALUES ('a0000000-0000-0000-0000-000000000001', 'acme/finance', '{area:acme/platform}');
\set VERBOSITY default
INSERT INTO pg_labels.runs (id, scope, labels) VALUES ('a0000000-0000-0000-0000-000000000002', 'acme', '{company:globex}');
INSERT INTO pg_labels.runs (id, scope, labels) VALUES ('a0000000-0000-0000-0000-000000000003', 'acme', '{installation}');
INSERT INTO pg_labels.runs (scope) VALUES (NULL);
-- nor a run whose listener is bound elsewhere
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('support-bot', 'acme/platform', 'ticket.created') RETURNING id;
INSERT INTO pg_labels.runs (id, scope, listener_id) VALUES ('a0000000-0000-0000-0000-000000000004', 'acme/finance', 1);
INSERT INTO pg_labels.runs (id, scope, listener_id) VALUES ('a0000000-0000-0000-0000-000000000005', 'globex', 1);
INSERT INTO pg_labels.runs (scope, listener_id) VALUES ('acme/platform', 99);
INSERT INTO pg_labels.runs (id, scope, listener_id)
VALUES ('44444444-4444-4444-4444-444444444444', 'acme/platform', 1) RETURNING scope, labels, listener_id;
SELECT count(*) AS runs_opened FROM pg_labels.runs;

-- labels accumulate: every step unions its labels into the run
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('11111111-1111-1111-1111-111111111111', 'input', '{area:acme/platform}');
SELECT labels FROM pg_labels.runs WHERE id = '11111111-1111-1111-1111-111111111111';
INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels) VALUES
  ('11111111-1111-1111-1111-111111111111', 'tool_called', 'tickets.read', '{"id": 7}', '{area:acme/platform}')
RETURNING kind, tool, decision, rule, reason;
-- a result of an untrusted tool came from outside: it carries origin:tool
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES
  ('11111111-1111-1111-1111-111111111111', 'tool_result', 'tickets.read', '{tag:pii}')
RETURNING kind, labels;
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES
  ('33333333-3333-3333-3333-333333333333', 'tool_result', 'kb.search', '{}')
RETURNING kind, labels;
SELECT id, labels FROM pg_labels.runs ORDER BY id;

-- the rules on tool calls, each with its SQLSTATE, DETAIL, HINT and constraint name
\set VERBOSITY verbose
-- untrusted_to_irreversible: no approval changes it
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('11111111-1111-1111-1111-111111111111', 'tool_called', 'stripe.refund', '{"charge": "ch_1"}');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('11111111-1111-1111-1111-111111111111', 'tool_called', 'db.drop');
-- approval_required: a reversible write on untrusted data
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('11111111-1111-1111-1111-111111111111', 'tool_called', 'tickets.update', '{"id": 7}');
-- unknown_tool: fail closed
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('33333333-3333-3333-3333-333333333333', 'tool_called', 'mystery.tool');
INSERT INTO pg_labels.steps (run_id, kind) VALUES
  ('33333333-3333-3333-3333-333333333333', 'tool_called');
-- data_barrier: the step's own labels escape the run's scope
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES
  ('22222222-2222-2222-2222-222222222222', 'tool_called', 'tickets.read', '{area:acme/platform}');
-- a step for a run that does not exist
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('99999999-9999-9999-9999-999999999999', 'input');
\set VERBOSITY default

-- the refused statements wrote nothing: no step, no label
SELECT kind, tool, decision FROM pg_labels.steps ORDER BY id;
SELECT labels FROM pg_labels.runs WHERE id = '22222222-2222-2222-2222-222222222222';

-- trusted data may reach any known tool
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES
  ('33333333-3333-3333-3333-333333333333', 'tool_called', 'stripe.refund', '{area:acme/finance}'),
  ('33333333-3333-3333-3333-333333333333', 'tool_called', 'tickets.update', '{}'),
  ('33333333-3333-3333-3333-333333333333', 'tool_called', 'db.drop', '{company:acme}')
RETURNING tool, decision, rule;

-- the seed's scenario: once area:acme/platform has entered a finance run, every action is refused
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('22222222-2222-2222-2222-222222222222', 'input', '{area:acme/platform}');
SELECT labels, labels <@ scope AS within_scope FROM pg_labels.runs WHERE id = '22222222-2222-2222-2222-222222222222';
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('22222222-2222-2222-2222-222222222222', 'tool_called', 'tickets.read');

-- the gate: the same rules, recorded instead of raised
SELECT * FROM pg_labels.gate('22222222-2222-2222-2222-222222222222', 'tickets.read', '{"id": 1}');
SELECT * FROM pg_labels.gate('11111111-1111-1111-1111-111111111111', 'stripe.refund', '{"charge": "ch_1"}');
SELECT * FROM pg_labels.gate('11111111-1111-1111-1111-111111111111', 'tickets.update', '{"id": 7}');
SELECT * FROM pg_labels.gate('11111111-1111-1111-1111-111111111111', 'mystery.tool');
SELECT * FROM pg_labels.gate('33333333-3333-3333-3333-333333333333', 'tickets.read', '{"id": 1}', '{area:acme/platform}');
SELECT * FROM pg_labels.gate('99999999-9999-9999-9999-999999999999', 'tickets.read');
-- a gate_decided step written directly cannot bring its own decision: the decision is the
-- database's, and a writer's is refused
INSERT INTO pg_labels.steps (run_id, kind, tool, decision, rule, reason) VALUES
  ('11111111-1111-1111-1111-111111111111', 'gate_decided', 'stripe.refund', 'allow', 'none', 'trust me')
RETURNING decision, rule, reason;
-- decision and rule of other steps are the database's too; actor cannot be forged
INSERT INTO pg_labels.steps (run_id, kind, decision, rule, actor) VALUES
  ('33333333-3333-3333-3333-333333333333', 'planned', 'allow', 'x', 'someone_else')
RETURNING decision, rule, actor = current_user AS actor_is_writer;

-- the trail shows blocked calls by rule
SELECT rule, decision, count(*) FROM pg_labels.steps WHERE kind = 'gate_decided' GROUP BY 1, 2 ORDER BY 1, 2;

-- the constraint-name field carries the rule, for clients that branch on it
DO $$
DECLARE c text; s text;
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
    ('11111111-1111-1111-1111-111111111111', 'tool_called', 'db.drop');
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS c = CONSTRAINT_NAME, s = RETURNED_SQLSTATE;
  RAISE NOTICE 'sqlstate %, constraint %', s, c;
END $$;

-- an error raised inside the statements a platform function runs (here by a DBA's own
-- trigger on crossings, fired by authorize_crossing()'s insert) reaches the client whole:
-- SQLSTATE, DETAIL, HINT, constraint name (but for a DETAIL of PostgreSQL's naming a row the
-- caller may not read: tests/pg_regress/sql/attacks.sql)
CREATE FUNCTION regress_crossings_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'custom refusal' USING ERRCODE = '23L99', DETAIL = 'inner detail',
    HINT = 'inner hint', CONSTRAINT = 'regress_guard';
END $$;
CREATE TRIGGER regress_guard BEFORE INSERT ON pg_labels.crossings
  FOR EACH ROW EXECUTE FUNCTION regress_crossings_guard();
\set VERBOSITY verbose
SELECT pg_labels.authorize_crossing('globex/finance', 'acme/platform', 'regress');
\set VERBOSITY default
DROP TRIGGER regress_guard ON pg_labels.crossings;
DROP FUNCTION regress_crossings_guard();

-- provenance queries on the platform tables can use their indexes
-- (the trail is a ring of 24 partitions; a plan is shown with each kind of line once and how
-- many partitions it covers)
CREATE FUNCTION pg_temp.plan_summary(q text) RETURNS TABLE (plan_line text, partitions bigint)
LANGUAGE plpgsql AS $$
DECLARE l text; lines text[] := '{}';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    lines := lines || regexp_replace(regexp_replace(btrim(l), ' steps_[0-9]+$', ''),
                                     'steps_[0-9]{2}', 'steps_NN', 'g');
  END LOOP;
  RETURN QUERY SELECT x, count(*) FROM unnest(lines) WITH ORDINALITY AS u(x, n) GROUP BY x ORDER BY min(n);
END $$;
SET enable_seqscan = off;
SELECT * FROM pg_temp.plan_summary($$SELECT id FROM pg_labels.steps WHERE labels ? 'origin:slack'$$);
-- (a btree: shown as an index scan, which the planner may or may not prefer to a bitmap one
-- for a table this small, depending on its pages)
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pg_labels.runs WHERE scope <@ 'acme';
RESET enable_bitmapscan;
EXPLAIN (COSTS OFF) SELECT id FROM pg_labels.runs WHERE labels @> '{origin:webhook}';
RESET enable_seqscan;
SELECT count(*) FROM pg_labels.steps WHERE labels ? 'origin:tool';
SELECT id FROM pg_labels.runs WHERE scope <@ 'acme' ORDER BY id;

-- a step finds its run again where it was found last time, confirmed by the run's id: a run
-- whose row was replaced (deleted by a superuser in replica mode, opened again) or moved by a rewrite of the
-- table is found at its new place, with its new labels
INSERT INTO pg_labels.runs (id, scope) VALUES ('b0000000-0000-0000-0000-000000000001', 'acme');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('b0000000-0000-0000-0000-000000000001', 'input', '{tag:first}');
SET session_replication_role = replica;
DELETE FROM pg_labels.runs WHERE id = 'b0000000-0000-0000-0000-000000000001';
RESET session_replication_role;
INSERT INTO pg_labels.runs (id, scope, labels) VALUES ('b0000000-0000-0000-0000-000000000001', 'acme', '{tag:replaced}');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('b0000000-0000-0000-0000-000000000001', 'input', '{tag:second}');
VACUUM FULL pg_labels.runs;
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('b0000000-0000-0000-0000-000000000001', 'input', '{tag:third}');
SELECT labels FROM pg_labels.runs WHERE id = 'b0000000-0000-0000-0000-000000000001';

-- the kinds and decisions a step may hold, checked by the trail's CHECK constraints (functions:
-- a list of constants would be read again at every statement), whether the trigger runs or not
SELECT k, pg_labels.is_step_kind(k) AS kind, pg_labels.is_step_decision(k) AS decision
  FROM unnest(ARRAY['input', 'context_read', 'allow', 'granted', 'Input', 'tool_call', '', 'allow ', NULL]) k;
-- (the refusal names the month's partition and the row: printed without them)
CREATE FUNCTION pg_temp.refused(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE state text; name text;
BEGIN
    EXECUTE sql;
    RETURN 'written';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, name = CONSTRAINT_NAME;
    RETURN state || ' ' || name;
END $$;
SELECT pg_temp.refused($$INSERT INTO pg_labels.steps (run_id, kind) VALUES ('b0000000-0000-0000-0000-000000000001', 'tool_call')$$);
SET session_replication_role = replica;
SELECT pg_temp.refused($$INSERT INTO pg_labels.steps (id, run_id, kind, decision)
                         VALUES (-1, 'b0000000-0000-0000-0000-000000000001', 'gate_decided', 'maybe')$$);
RESET session_replication_role;
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'pg_labels.steps'::regclass AND contype = 'c' ORDER BY 1;
