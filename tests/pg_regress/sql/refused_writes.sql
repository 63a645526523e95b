-- Every refusal on the record, even when its statement rolls back: each kind of refused write,
-- made by the README's ordinary roles, is in pg_labels.refused_writes once (a background worker
-- writes it in a transaction of its own), and in pg_labels.refusals beside the gate's own
-- refusals; a refusal caught in a savepoint or a PL/pgSQL block is recorded once; no one but
-- the worker writes the record; an analyst reads the records of the scopes it entered; a flood
-- is counted, never dropped; purge() removes the record with the trail's months.
\pset null '(null)'
CREATE ROLE regress_rw_platform;
CREATE ROLE regress_rw_alice;
CREATE ROLE regress_rw_bob;
CREATE ROLE regress_rw_analyst;
GRANT USAGE ON SCHEMA pg_labels TO regress_rw_platform, regress_rw_alice, regress_rw_bob, regress_rw_analyst;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares TO regress_rw_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rw_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_rw_platform;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_rw_alice, regress_rw_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rw_alice', '*'), ('regress_rw_platform', '*') ON CONFLICT DO NOTHING;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz) TO regress_rw_bob;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rw_bob', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.trail, pg_labels.refusals, pg_labels.refused_writes
  TO regress_rw_analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rw_analyst', 'acme/platform');
INSERT INTO pg_labels.tools (name, effect) VALUES
  ('rw.read', 'read'), ('rw.update', 'reversible_write'), ('rw.refund', 'financial');

-- the worker writes a record within moments of the refusal; refusals_recorded() waits until
-- it has written every refusal of this session
CREATE VIEW public.rw_last AS
SELECT kind, rule, sqlstate, tool, run_id, run_scope, carried_scope, labels, actor, count
  FROM pg_labels.refused_writes ORDER BY id DESC LIMIT 1;

-- 1. a tool call escaping its run's scope, written with a plain INSERT: refused, rolled back,
--    and on the record (the run's scope, the labels that escaped, the role, the rule)
SET ROLE regress_rw_platform;
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('e3000000-0000-0000-0000-000000000001', 'acme/platform'),
  ('e3000000-0000-0000-0000-000000000002', 'acme/platform'),
  ('e3000000-0000-0000-0000-000000000009', 'globex/hr');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('e3000000-0000-0000-0000-000000000001', 'input', '{area:acme/finance}'),
  ('e3000000-0000-0000-0000-000000000002', 'input', '{origin:slack}'),
  ('e3000000-0000-0000-0000-000000000009', 'input', '{origin:webhook}');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000001', 'tool_called', 'rw.read');
RESET ROLE;
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT * FROM public.rw_last;
SELECT count(*) AS steps_of_the_refused_call FROM pg_labels.steps
 WHERE run_id = 'e3000000-0000-0000-0000-000000000001' AND kind = 'tool_called';

-- 2. the other refusals of the triggers, each recorded with what it was
SET ROLE regress_rw_platform;
-- untrusted data to a financial tool (the run's origins)
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.refund');
-- a reversible write without an approval
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.update', '{"t": 1}');
-- a tool not in the catalog
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.nothing');
-- a run not opened: its initial labels escape its scope
INSERT INTO pg_labels.runs (id, scope, labels) VALUES ('e3000000-0000-0000-0000-000000000003', 'acme/platform', '{company:globex}');
-- a share its target cannot carry, and a context read no share offers
INSERT INTO pg_labels.runs (id, scope) VALUES ('e3000000-0000-0000-0000-00000000000f', 'acme/finance');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('e3a00000-0000-0000-0000-00000000000f', 'e3000000-0000-0000-0000-00000000000f', pg_labels.digest('ledger'));
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('e3a00000-0000-0000-0000-00000000000f', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('e3000000-0000-0000-0000-000000000002', 'context_read', 'e3a00000-0000-0000-0000-00000000000f');
-- an approval decision forged by the writer, and a writer deciding its own request
INSERT INTO pg_labels.steps (run_id, kind, tool, decision, request_id) VALUES
  ('e3000000-0000-0000-0000-000000000002', 'approval_decided', 'rw.update', 'granted', 1);
SELECT pg_labels.request_approval('e3000000-0000-0000-0000-000000000002', 'rw.update', '{"t": 1}') AS request \gset
SELECT pg_labels.decide_approval(:request, true);
RESET ROLE;
-- a crossing from the root
SET ROLE regress_rw_bob;
SELECT pg_labels.authorize_crossing('*', 'acme/platform', 'everything');
RESET ROLE;
-- a change to the sealed trail, by its owner
UPDATE pg_labels.steps SET labels = '{}' WHERE run_id = 'e3000000-0000-0000-0000-000000000002';
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT kind, rule, sqlstate, tool, run_scope, carried_scope, labels, actor, count
  FROM pg_labels.refused_writes ORDER BY id;

-- 3. caught in a savepoint, or in a PL/pgSQL block, a refusal is still on the record, once
SET ROLE regress_rw_platform;
BEGIN;
SAVEPOINT s;
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.refund');
ROLLBACK TO SAVEPOINT s;
COMMIT;
DO $$
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.refund');
EXCEPTION WHEN SQLSTATE '23L02' THEN
  RAISE NOTICE 'caught %', SQLSTATE;
END $$;
-- the gate's refusals are rows of the trail, not records of refused writes: once each
SELECT decision, rule FROM pg_labels.gate('e3000000-0000-0000-0000-000000000002', 'rw.refund');
RESET ROLE;
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT source, kind, rule, count(*), sum(count) AS refusals FROM pg_labels.refusals
 WHERE run_id = 'e3000000-0000-0000-0000-000000000002' AND rule = 'untrusted_to_irreversible'
 GROUP BY 1, 2, 3 ORDER BY 1;

-- 4. no one but the worker writes the record: not the writer, not the analyst (no privilege),
--    and not the owner either (the record is sealed like the trail)
SET ROLE regress_rw_platform;
INSERT INTO pg_labels.refused_writes (refused_at, last_at, kind, sqlstate, reason, actor, session_actor, backend_pid)
VALUES (now(), now(), 'tool_called', '23L01', 'forged', 'nobody', 'nobody', 1);
UPDATE pg_labels.refused_writes SET reason = 'nothing happened';
DELETE FROM pg_labels.refused_writes;
RESET ROLE;
SET ROLE regress_rw_analyst;
DELETE FROM pg_labels.refused_writes;
RESET ROLE;
DELETE FROM pg_labels.refused_writes;
TRUNCATE pg_labels.refused_writes;
SELECT pg_labels.refusals_recorded() AS recorded;

-- 5. an analyst reads the records of the scopes it entered (its runs' refusals), nothing else
SET ROLE regress_rw_analyst;
SELECT count(*) AS without_a_scope FROM pg_labels.refused_writes;
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT DISTINCT carried_scope FROM pg_labels.refused_writes ORDER BY 1;
SELECT source, count(*) FROM pg_labels.refusals GROUP BY 1 ORDER BY 1;
COMMIT;
RESET ROLE;

-- 6. a flood: 1,000 refusals in a loop, counted past the budget a backend hands over one by
--    one in a second, never dropped (the records stand for exactly 1,000)
SET ROLE regress_rw_platform;
DO $$
BEGIN
  FOR i IN 1..1000 LOOP
    BEGIN
      INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000009', 'tool_called', 'rw.refund');
    EXCEPTION WHEN SQLSTATE '23L02' THEN NULL;
    END;
  END LOOP;
END $$;
RESET ROLE;
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT sum(count) AS refusals, count(*) < 1000 AS fewer_records
  FROM pg_labels.refused_writes WHERE run_id = 'e3000000-0000-0000-0000-000000000009';

-- 6b. counted refusals reach the record once their second is over, while the session that
--     made them does nothing more (one transaction: the refusals, a wait, the record read)
SET ROLE regress_rw_platform;
BEGIN;
DO $$
BEGIN
  FOR i IN 1..500 LOOP
    BEGIN
      INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.refund');
    EXCEPTION WHEN SQLSTATE '23L02' THEN NULL;
    END;
  END LOOP;
END $$;
SELECT pg_sleep(2.5);
RESET ROLE;
SELECT sum(count) AS refusals_written_meanwhile FROM pg_labels.refused_writes
 WHERE run_id = 'e3000000-0000-0000-0000-000000000002' AND tool = 'rw.refund';
COMMIT;

-- 6c. asking whether its refusals are recorded does not lift a session's budget
SET ROLE regress_rw_platform;
DO $$
BEGIN
  FOR i IN 1..1000 LOOP
    BEGIN
      INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-000000000002', 'tool_called', 'rw.nothing');
    EXCEPTION WHEN SQLSTATE '23L04' THEN PERFORM pg_labels.refusals_recorded('0');
    END;
  END LOOP;
END $$;
RESET ROLE;
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT sum(count) AS refusals, count(*) <= 500 AS counted_past_the_budget FROM pg_labels.refused_writes
 WHERE run_id = 'e3000000-0000-0000-0000-000000000002' AND tool = 'rw.nothing';

-- 6d. the records are written where the tables' owner cannot log in and the database takes no
--     connections (the worker connects as the bootstrap superuser, and writes as the owner)
SELECT current_database() AS regress_db \gset
CREATE ROLE regress_rw_keeper SUPERUSER NOLOGIN;
CREATE DATABASE regress_rw_closed OWNER regress_rw_keeper;
\c regress_rw_closed
SET ROLE regress_rw_keeper;
CREATE EXTENSION pg_labels;
GRANT USAGE ON SCHEMA pg_labels TO regress_rw_platform;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_rw_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rw_platform', '*') ON CONFLICT DO NOTHING;
INSERT INTO pg_labels.tools (name, effect) VALUES ('rw.refund', 'financial'), ('rw.unwritable', 'financial');
INSERT INTO pg_labels.runs (id, scope) VALUES ('e3000000-0000-0000-0000-0000000000c1', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('e3000000-0000-0000-0000-0000000000c1', 'input', '{origin:webhook}');
RESET ROLE;
-- (what ALTER DATABASE regress_rw_closed ALLOW_CONNECTIONS false does from another database)
UPDATE pg_database SET datallowconn = false WHERE datname = 'regress_rw_closed';
SELECT datallowconn FROM pg_database WHERE datname = current_database();
SELECT rolcanlogin AS owner_can_log_in FROM pg_roles r JOIN pg_class c ON c.relowner = r.oid
 WHERE c.oid = 'pg_labels.steps'::regclass;
SET ROLE regress_rw_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-0000000000c1', 'tool_called', 'rw.refund');
RESET ROLE;
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT kind, tool, rule, actor FROM pg_labels.refused_writes;

-- 6e. a record the worker cannot write is named in a WARNING in the server log, and
--     refusals_recorded() says so (false)
ALTER TABLE pg_labels.refused_writes ADD CONSTRAINT regress_rw_unwritable CHECK (tool IS DISTINCT FROM 'rw.unwritable');
SET ROLE regress_rw_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-0000000000c1', 'tool_called', 'rw.unwritable');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e3000000-0000-0000-0000-0000000000c1', 'tool_called', 'rw.refund');
RESET ROLE;
SELECT pg_labels.refusals_recorded() AS recorded;
SELECT tool, count FROM pg_labels.refused_writes ORDER BY id;
\c :regress_db
DROP DATABASE regress_rw_closed WITH (FORCE);
DROP ROLE regress_rw_keeper;

-- 7. purge() removes the record with the trail's months (a record of three months ago, put
--    there around the triggers as only a superuser can)
SET session_replication_role = replica;
INSERT INTO pg_labels.refused_writes (id, refused_at, last_at, kind, sqlstate, reason, actor, session_actor, backend_pid)
OVERRIDING SYSTEM VALUE
SELECT max(id) + 1, now() - interval '3 months', now() - interval '3 months', 'tool_called', '23L01', 'old', 'x', 'x', 1
  FROM pg_labels.refused_writes;
RESET session_replication_role;
SELECT count(*) AS old_records FROM pg_labels.refused_writes WHERE refused_at < now() - interval '2 months';
SELECT pg_labels.purge(now() - interval '2 months') >= 0 AS purged;
SELECT count(*) AS old_records FROM pg_labels.refused_writes WHERE refused_at < now() - interval '2 months';

DROP VIEW public.rw_last;
DELETE FROM pg_labels.grants WHERE role::text LIKE 'regress_rw%';
DROP OWNED BY regress_rw_platform, regress_rw_alice, regress_rw_bob, regress_rw_analyst;
DROP ROLE regress_rw_platform, regress_rw_alice, regress_rw_bob, regress_rw_analyst;
