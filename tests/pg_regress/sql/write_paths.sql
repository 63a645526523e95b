-- Every write path is judged, for a writer that is not a superuser: multi-row INSERT, COPY,
-- INSERT ... ON CONFLICT, MERGE, INSERT ... SELECT. A refused statement writes nothing. The
-- writer is even granted UPDATE and DELETE: the triggers refuse what privileges would allow.
\pset null '(null)'
CREATE ROLE regress_pg_labels_writer;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON pg_labels.runs, pg_labels.steps TO regress_pg_labels_writer;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_writer', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_pg_labels_writer;
INSERT INTO pg_labels.tools (name, effect) VALUES ('wp.read', 'read'), ('wp.wipe', 'destructive')
ON CONFLICT DO NOTHING;

SET ROLE regress_pg_labels_writer;
SELECT current_setting('is_superuser') AS superuser;
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('b1000000-0000-0000-0000-000000000001', 'initech/ops'),
  ('b1000000-0000-0000-0000-000000000002', 'initech/ops');

-- multi-row INSERT: the first row brings Slack data, the second would wipe: all refused
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES
  ('b1000000-0000-0000-0000-000000000001', 'input', NULL, '{origin:slack}'),
  ('b1000000-0000-0000-0000-000000000001', 'tool_called', 'wp.wipe', '{}');
SELECT count(*) AS steps, (SELECT labels FROM pg_labels.runs WHERE id = 'b1000000-0000-0000-0000-000000000001')
FROM pg_labels.steps WHERE run_id = 'b1000000-0000-0000-0000-000000000001';

-- COPY: PostgreSQL refuses COPY FROM into a table with row-level security for a role subject
-- to it (the platform tables have it); a writer that loads with COPY is given BYPASSRLS, which
-- skips policies but never triggers
COPY pg_labels.steps (run_id, kind, tool, labels) FROM STDIN;
b1000000-0000-0000-0000-000000000001	input	\N	{origin:webhook}
\.
RESET ROLE;
ALTER ROLE regress_pg_labels_writer BYPASSRLS;
SET ROLE regress_pg_labels_writer;
SELECT current_setting('is_superuser') AS superuser, rolbypassrls FROM pg_roles WHERE rolname = current_user;
-- COPY: the same rows, the same refusal, nothing written
COPY pg_labels.steps (run_id, kind, tool, labels) FROM STDIN;
b1000000-0000-0000-0000-000000000001	input	\N	{origin:webhook}
b1000000-0000-0000-0000-000000000001	tool_called	wp.wipe	{}
\.
SELECT count(*) AS steps FROM pg_labels.steps WHERE run_id = 'b1000000-0000-0000-0000-000000000001';
-- a clean COPY goes through and labels accumulate
COPY pg_labels.steps (run_id, kind, tool, labels) FROM STDIN;
b1000000-0000-0000-0000-000000000001	tool_called	wp.wipe	{}
b1000000-0000-0000-0000-000000000001	input	\N	{origin:webhook,tag:pii}
b1000000-0000-0000-0000-000000000001	tool_called	wp.read	{}
\.
SELECT kind, tool, decision FROM pg_labels.steps WHERE run_id = 'b1000000-0000-0000-0000-000000000001' ORDER BY id;
SELECT labels FROM pg_labels.runs WHERE id = 'b1000000-0000-0000-0000-000000000001';
-- COPY in binary, with labels in the binary format, is judged as well
RESET ROLE;
\getenv scratch PG_LABELS_SCRATCH
\set steps_file :scratch '/steps.bin'
COPY (SELECT 'b1000000-0000-0000-0000-000000000001'::uuid, 'tool_called', 'wp.wipe', '{}'::labelset) TO :'steps_file' WITH (FORMAT binary);
GRANT pg_read_server_files TO regress_pg_labels_writer;
SET ROLE regress_pg_labels_writer;
COPY pg_labels.steps (run_id, kind, tool, labels) FROM :'steps_file' WITH (FORMAT binary);
RESET ROLE;
REVOKE pg_read_server_files FROM regress_pg_labels_writer;
ALTER ROLE regress_pg_labels_writer NOBYPASSRLS;
SET ROLE regress_pg_labels_writer;

-- INSERT ... ON CONFLICT DO NOTHING: the row is judged before any conflict
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('b1000000-0000-0000-0000-000000000001', 'tool_called', 'wp.wipe')
ON CONFLICT DO NOTHING;
-- INSERT ... ON CONFLICT DO UPDATE: a step's id is the database's, so a writer cannot even aim
-- at an existing step: its id is refused before any conflict
INSERT INTO pg_labels.steps (id, run_id, kind, tool) OVERRIDING SYSTEM VALUE VALUES
  ((SELECT min(id) FROM pg_labels.steps WHERE run_id = 'b1000000-0000-0000-0000-000000000001'),
   'b1000000-0000-0000-0000-000000000001', 'tool_called', 'wp.read')
ON CONFLICT (id, slot) DO UPDATE SET reason = 'rewritten';
-- ... and on a run, whose id the service chooses, the update is refused (its scope is sealed)
INSERT INTO pg_labels.runs (id, scope) VALUES ('b1000000-0000-0000-0000-000000000001', 'initech/ops')
ON CONFLICT (id) DO UPDATE SET scope = 'initech/finance';
-- MERGE: inserts are judged, updates and deletes refused
MERGE INTO pg_labels.steps s
USING (VALUES ('b1000000-0000-0000-0000-000000000001'::uuid, 'tool_called', 'wp.wipe')) v(run_id, kind, tool)
ON false
WHEN NOT MATCHED THEN INSERT (run_id, kind, tool) VALUES (v.run_id, v.kind, v.tool);
MERGE INTO pg_labels.steps s
USING (VALUES ('b1000000-0000-0000-0000-000000000002'::uuid, 'tool_called', 'wp.wipe')) v(run_id, kind, tool)
ON false
WHEN NOT MATCHED THEN INSERT (run_id, kind, tool) VALUES (v.run_id, v.kind, v.tool);
MERGE INTO pg_labels.steps s
USING (SELECT 'b1000000-0000-0000-0000-000000000002'::uuid AS run_id) v
ON s.run_id = v.run_id
WHEN MATCHED THEN UPDATE SET labels = '{}';
MERGE INTO pg_labels.steps s
USING (SELECT 'b1000000-0000-0000-0000-000000000002'::uuid AS run_id) v
ON s.run_id = v.run_id
WHEN MATCHED THEN DELETE;
-- INSERT ... SELECT
INSERT INTO pg_labels.steps (run_id, kind, tool, labels)
SELECT 'b1000000-0000-0000-0000-000000000002', k, t, l::labelset
FROM (VALUES ('input', NULL, '{origin:event}'), ('tool_called', 'wp.wipe', '{}')) v(k, t, l);
SELECT kind, tool, decision FROM pg_labels.steps WHERE run_id = 'b1000000-0000-0000-0000-000000000002' ORDER BY id;
-- runs: scope sealed, labels only grow
UPDATE pg_labels.runs SET labels = '{}' WHERE id = 'b1000000-0000-0000-0000-000000000001';
UPDATE pg_labels.runs SET scope = 'initech' WHERE id = 'b1000000-0000-0000-0000-000000000001';
DELETE FROM pg_labels.runs WHERE id = 'b1000000-0000-0000-0000-000000000001';
RESET ROLE;

DROP OWNED BY regress_pg_labels_writer;
DROP ROLE regress_pg_labels_writer;

-- a statement that changes a run and writes a step of it at once is refused rather than
-- judged on labels it cannot see yet
CREATE ROLE regress_pg_labels_owner_like;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_owner_like;
GRANT SELECT, INSERT, UPDATE ON pg_labels.runs, pg_labels.steps TO regress_pg_labels_owner_like;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_owner_like', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_pg_labels_owner_like;
INSERT INTO pg_labels.runs (id, scope) VALUES ('b1000000-0000-0000-0000-000000000003', 'initech/ops');
WITH tainted AS (
  UPDATE pg_labels.runs SET labels = labels || '{origin:slack}'
  WHERE id = 'b1000000-0000-0000-0000-000000000003' RETURNING id
)
INSERT INTO pg_labels.steps (run_id, kind, tool)
SELECT id, 'tool_called', 'wp.wipe' FROM tainted;
SELECT labels FROM pg_labels.runs WHERE id = 'b1000000-0000-0000-0000-000000000003';
RESET ROLE;
DROP OWNED BY regress_pg_labels_owner_like;
DROP ROLE regress_pg_labels_owner_like;
