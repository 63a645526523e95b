-- What an ordinary role cannot do to the trail or learn from it, each tried as such a role:
-- see another company's catalogs (agent versions, approval points, listeners, crossings,
-- grants); choose a step's id or time; put references on steps that do not carry them;
-- inject DOT into a lineage graph; approve through a shared role; open a run in *. And the
-- decisions around them: crossings from *, expiry 'infinity', "inputs": null, refusals of runs
-- carrying 100,000 labels, DROP EXTENSION by a role that does not own it, DROP EXTENSION ...
-- CASCADE on a protected table.
\pset null '(null)'
CREATE ROLE regress_hard_platform LOGIN;
CREATE ROLE regress_hard_analyst LOGIN;
CREATE ROLE regress_hard_alice LOGIN;
CREATE ROLE regress_hard_team;
CREATE ROLE regress_hard_bob LOGIN;
GRANT regress_hard_team TO regress_hard_platform;
GRANT USAGE ON SCHEMA pg_labels TO regress_hard_platform, regress_hard_analyst, regress_hard_alice,
  regress_hard_team, regress_hard_bob;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares
  TO regress_hard_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_hard_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_hard_platform;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.agent_versions, pg_labels.approval_points,
  pg_labels.listeners, pg_labels.crossings, pg_labels.grants, pg_labels.tools, pg_labels.trail
  TO regress_hard_analyst;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz) TO regress_hard_bob;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_hard_bob', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.crossings TO regress_hard_bob;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_hard_analyst', 'acme/platform');
INSERT INTO pg_labels.tools (name, effect) VALUES
  ('hard.read', 'read'), ('hard.update', 'reversible_write'), ('hard.pay', 'financial')
ON CONFLICT DO NOTHING;
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES
  ('hard-support', 'acme/platform', 'hard.msg'), ('hard-ledger', 'globex/finance', 'hard.msg');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES
  ('hard-support', 1, 'acme/platform',
   '{"steps": [{"id": "r", "tool": "hard.read", "inputs": ["source:slack"]}, {"id": "u", "tool": "hard.update", "inputs": ["r"]}]}'),
  ('hard-ledger', 1, 'globex/finance',
   '{"steps": [{"id": "r", "tool": "hard.read", "inputs": ["source:webhook"]}, {"id": "u", "tool": "hard.update", "inputs": ["r"]}]}');

-- 2. Catalogs show an analyst only what the entered scope reaches (and nothing without one);
--    the tool catalog is global
\c - regress_hard_analyst
\pset null '(null)'
SELECT (SELECT count(*) FROM pg_labels.agent_versions WHERE agent LIKE 'hard-%') AS versions,
       (SELECT count(*) FROM pg_labels.approval_points WHERE agent LIKE 'hard-%') AS approval_points,
       (SELECT count(*) FROM pg_labels.listeners WHERE agent LIKE 'hard-%') AS listeners,
       (SELECT count(*) FROM pg_labels.tools WHERE name LIKE 'hard.%') AS tools;
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT agent, scope FROM pg_labels.agent_versions WHERE agent LIKE 'hard-%';
SELECT agent, step, tool FROM pg_labels.approval_points WHERE agent LIKE 'hard-%';
SELECT agent, scope FROM pg_labels.listeners WHERE agent LIKE 'hard-%';
SELECT role, scope FROM pg_labels.grants;
COMMIT;
-- statistics do not show another scope's values either (pg_stats hides tables with RLS)
SELECT count(*) AS stats_rows FROM pg_stats WHERE schemaname = 'pg_labels';

-- 4, 5. A step's id and time, and a run's opening time, are the database's
\c - regress_hard_platform
\pset null '(null)'
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'acme/platform'),
  ('ba000000-0000-0000-0000-000000000002', 'globex/finance');
INSERT INTO pg_labels.steps (id, run_id, kind) OVERRIDING SYSTEM VALUE
VALUES (1000000, 'ba000000-0000-0000-0000-000000000001', 'input');
INSERT INTO pg_labels.steps (id, run_id, kind)
VALUES ((SELECT coalesce(max(id), 0) + 1 FROM pg_labels.steps), 'ba000000-0000-0000-0000-000000000001', 'input');
INSERT INTO pg_labels.steps (run_id, kind, created_at)
VALUES ('ba000000-0000-0000-0000-000000000001', 'input', now() - interval '400 days');
INSERT INTO pg_labels.steps (run_id, kind, created_at)
VALUES ('ba000000-0000-0000-0000-000000000001', 'input', now() + interval '1 day');
INSERT INTO pg_labels.runs (id, scope, opened_at)
VALUES ('ba000000-0000-0000-0000-000000000003', 'acme/platform', '2020-01-01');
-- what the database writes: ids in order, the transaction's time
BEGIN;
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('ba000000-0000-0000-0000-000000000001', 'input') RETURNING id AS first \gset
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('ba000000-0000-0000-0000-000000000001', 'planned')
RETURNING id > :first AS later_id, created_at = now() AS transaction_time, actor = current_user AS by_writer;
COMMIT;

-- 6. Each kind has a fixed shape: no references where they do not belong
INSERT INTO pg_labels.steps (run_id, kind, tool, origin_run) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'tool_called', 'hard.read', 'ba000000-0000-0000-0000-000000000002');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'input', gen_random_uuid());
INSERT INTO pg_labels.steps (run_id, kind, digest) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'tool_called', repeat('a', 64));
INSERT INTO pg_labels.steps (run_id, kind, request_id) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'planned', 1);
INSERT INTO pg_labels.steps (run_id, kind, tool, request_id) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'tool_called', 'hard.update', 1);
INSERT INTO pg_labels.steps (run_id, kind, share_id, artifact_id) VALUES
  ('ba000000-0000-0000-0000-000000000001', 'context_read', 1, gen_random_uuid());
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('ba000000-0000-0000-0000-000000000001', 'approval_requested');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('ba000000-0000-0000-0000-000000000001', 'tool_result');
-- so another company's run never shows up in this run's lineage
SELECT count(*) AS upstream FROM pg_labels.lineage('ba000000-0000-0000-0000-000000000001');

-- a run is opened in a company or an area, never in * (it could carry everything)
INSERT INTO pg_labels.runs (id, scope) VALUES ('ba000000-0000-0000-0000-000000000009', '*');

-- decide_approval refuses a role that can act as the requester, and one the requester can act
-- as (the platform is a member of regress_hard_team)
SELECT pg_labels.request_approval('ba000000-0000-0000-0000-000000000001', 'hard.update') AS request \gset
\c - postgres
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_hard_team, regress_hard_alice;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_hard_team', '*'), ('regress_hard_alice', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_hard_team;
SELECT pg_labels.decide_approval(:request, true);
RESET ROLE;
SET ROLE regress_hard_alice;
SELECT pg_labels.decide_approval(:request, true) IS NOT NULL AS alice_decided;
RESET ROLE;

-- crossings: not from * (it would let every company's data in); expiry 'infinity' is "until
-- revoked", like NULL; '-infinity' is in the past
\c - regress_hard_bob
SELECT pg_labels.authorize_crossing('*', 'acme/platform', 'everything for support');
SELECT pg_labels.authorize_crossing('acme/finance', '*', 'the installation reaches everything anyway');
SELECT pg_labels.authorize_crossing('globex/finance', 'acme/platform', 'audit', 'infinity') AS forever \gset
SELECT expires_at, revoked_at FROM pg_labels.crossings WHERE id = :forever;
SELECT pg_labels.authorize_crossing('globex/finance', 'acme/platform', 'audit', '-infinity');
\c - postgres
SELECT pg_labels.revoke_crossing(:forever, 'test over') IS NOT NULL AS revoked;

-- a published agent's "inputs": null is refused (fail closed); a missing "inputs" is none
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES
  ('hard-null', 1, 'acme/platform', '{"steps": [{"id": "p", "tool": "hard.pay", "inputs": null}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES
  ('hard-none', 1, 'acme/platform', '{"steps": [{"id": "p", "tool": "hard.pay"}]}')
RETURNING agent, needs_approval;

-- 8. A run carrying 100,000 labels: its refusal says how many labels it did not list
\c - regress_hard_platform
INSERT INTO pg_labels.runs (id, scope) VALUES ('ba000000-0000-0000-0000-000000000100', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT 'ba000000-0000-0000-0000-000000000100', 'input',
       labelset(array_agg('origin:slack/C' || i)) FROM generate_series(1, 100000) i;
SELECT labelset_count(labels) AS labels FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
-- a step that adds nothing, and one that adds a label
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('ba000000-0000-0000-0000-000000000100', 'input', '{origin:slack/C7}'),
  ('ba000000-0000-0000-0000-000000000100', 'input', '{tag:pii}');
SELECT labelset_count(labels) AS labels FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
DO $$
DECLARE d text; m text; h text;
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('ba000000-0000-0000-0000-000000000100', 'tool_called', 'hard.pay');
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
  RAISE NOTICE 'message: %', m;
  RAISE NOTICE 'detail: % bytes, ends with: %', octet_length(d), right(d, 90);
END $$;

-- an analyst's policy check of the big run (kept per stored value, scope and transaction) gives
-- the right answer after the scope changes in the same transaction, and after a rollback to a
-- savepoint puts the old scope back
\c - postgres
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_hard_analyst', 'globex');
\c - regress_hard_analyst
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT count(*) AS big_run_seen FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
SELECT count(*) AS big_run_seen FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
SAVEPOINT s;
SELECT pg_labels.enter_scope('globex') IS NOT NULL AS entered;
SELECT count(*) AS big_run_seen FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
ROLLBACK TO SAVEPOINT s;
SELECT count(*) AS big_run_seen FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
SELECT pg_labels.leave_scope();
SELECT count(*) AS big_run_seen FROM pg_labels.runs WHERE id = 'ba000000-0000-0000-0000-000000000100';
COMMIT;
\c - regress_hard_platform

-- 9. lineage_dot escapes what DOT treats specially: hostile agent names stay labels
INSERT INTO pg_labels.runs (id, scope, agent) VALUES
  ('ba000000-0000-0000-0000-000000000201', 'acme/platform', E'evil"]; x -> y; a [label="\\'),
  ('ba000000-0000-0000-0000-000000000202', 'acme/platform', E'multi\nline \\" agent');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('ba0a0000-0000-0000-0000-000000000201', 'ba000000-0000-0000-0000-000000000201', pg_labels.digest('x'));
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('ba0a0000-0000-0000-0000-000000000201', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('ba000000-0000-0000-0000-000000000202', 'context_read', 'ba0a0000-0000-0000-0000-000000000201');
SELECT pg_labels.lineage_dot('ba000000-0000-0000-0000-000000000202') AS dot \gset
\getenv scratch PG_LABELS_SCRATCH
\set dot_file :scratch '/hostile.dot'
\set plain_file :scratch '/hostile.plain'
\pset tuples_only on
\pset format unaligned
\o :dot_file
SELECT :'dot';
\o
\pset format aligned
\pset tuples_only off
-- Graphviz parses it: two nodes, one edge, the names as they were
\setenv DOT_FILE :dot_file
\setenv PLAIN_FILE :plain_file
\! dot -Tplain "$DOT_FILE" > "$PLAIN_FILE" && echo "dot: parsed" || echo "dot: FAILED"
\! awk '$1 == "node" { n++ } $1 == "edge" { e++ } END { print n " nodes, " e " edges" }' "$PLAIN_FILE"
\! grep -c 'evil' "$PLAIN_FILE"

-- a role that may not drop the extension gets PostgreSQL's ownership error, not a count of
-- every company's trail (and the trigger touches nothing on its behalf)
\c - regress_hard_analyst
DROP EXTENSION pg_labels;
DROP EXTENSION pg_labels CASCADE;
-- DROP EXTENSION is refused while the trail holds rows, with CASCADE too
\c - postgres
DROP EXTENSION pg_labels CASCADE;
-- with an empty trail (a database of its own), DROP EXTENSION ... CASCADE leaves a protected
-- table closed, not open
\set this_db :DBNAME
CREATE DATABASE regress_hard_drop;
\c regress_hard_drop postgres
CREATE EXTENSION pg_labels;
CREATE TABLE regress_hard_docs (body text, labels labelset);
INSERT INTO regress_hard_docs VALUES ('plan', '{area:acme/platform}'), ('ledger', '{area:acme/finance}');
SELECT pg_labels.protect('regress_hard_docs');
GRANT SELECT ON regress_hard_docs TO regress_hard_analyst;
SET client_min_messages = warning;
DROP EXTENSION pg_labels CASCADE;
RESET client_min_messages;
SELECT polname FROM pg_policy WHERE polrelid = 'regress_hard_docs'::regclass ORDER BY 1;
\c - regress_hard_analyst
SELECT count(*) AS rows_visible_after_drop FROM regress_hard_docs;
\c - postgres
DROP TABLE regress_hard_docs;
\c postgres postgres
DROP DATABASE regress_hard_drop;
\c :this_db postgres

DELETE FROM pg_labels.grants WHERE role LIKE 'regress_hard_%';
DROP OWNED BY regress_hard_platform, regress_hard_analyst, regress_hard_alice, regress_hard_team, regress_hard_bob;
DROP ROLE regress_hard_platform, regress_hard_analyst, regress_hard_alice, regress_hard_team, regress_hard_bob;
