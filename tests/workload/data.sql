-- The trail to back up and restore: the seed's scenario (a Slack run, gate decisions, an
-- approval, a refused refund, foreign data), context shared under a crossing and read, a
-- revoked crossing, a published version and a run of it, listeners, grants, and the roles that
-- use them. Written by the roles the platform uses, not by the superuser, into an install set
-- up by setup.sql.
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('d.read', 'read', false), ('d.search', 'read', true), ('d.update', 'reversible_write', false), ('d.pay', 'financial', false);
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('bot', 'acme/ops', 'e');
INSERT INTO pg_labels.grants (role, scope) VALUES ('dump_analyst', 'acme/ops');
-- where the others act, on a release that binds them to their grants (0.3.1: its trail has
-- run_scope); an installation of an earlier release gets * for them from ALTER EXTENSION UPDATE
INSERT INTO pg_labels.grants (role, scope)
SELECT role, scope::scope
  FROM (VALUES ('dump_platform', 'acme'), ('dump_alice', 'acme'), ('dump_bob', 'acme'), ('dump_bob', 'globex')) AS g (role, scope)
 WHERE EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'pg_labels.steps'::regclass AND attname = 'run_scope');

SET ROLE dump_platform;
INSERT INTO pg_labels.runs (id, agent, scope, listener_id) VALUES ('e0000000-0000-0000-0000-000000000001', 'bot', 'acme/ops', 1);
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.pay');
INSERT INTO pg_labels.steps (run_id, kind, labels, args) VALUES
  ('e0000000-0000-0000-0000-000000000001', 'input', '{origin:slack/T1/C2}', '{"text": "refund me"}');
SELECT decision FROM pg_labels.gate('e0000000-0000-0000-0000-000000000001', 'd.pay');
SELECT decision FROM pg_labels.gate('e0000000-0000-0000-0000-000000000001', 'd.update', '{"x": 1}');
SELECT pg_labels.request_approval('e0000000-0000-0000-0000-000000000001', 'd.update', '{"x": 1}') AS request \gset
SET ROLE dump_alice;
SELECT pg_labels.decide_approval(:request, true, 'fine') IS NOT NULL AS decided;
SET ROLE dump_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.update', '{"x": 1}');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_result', 'd.read');
-- context shared under a crossing, read by the first run
INSERT INTO pg_labels.runs (id, agent, scope) VALUES ('e0000000-0000-0000-0000-000000000002', 'fin', 'acme/finance');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('ea000000-0000-0000-0000-000000000001', 'e0000000-0000-0000-0000-000000000002', pg_labels.digest('report'));
SET ROLE dump_bob;
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/ops', 'dump test') AS crossing \gset
SET ROLE dump_platform;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('ea000000-0000-0000-0000-000000000001', 'acme/ops');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('e0000000-0000-0000-0000-000000000001', 'context_read', 'ea000000-0000-0000-0000-000000000001');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.search');
SET ROLE dump_bob;
SELECT pg_labels.authorize_crossing('acme/finance', 'globex', 'revoked before the dump') AS revoked \gset
SELECT pg_labels.revoke_crossing(:revoked, 'done') IS NOT NULL;
-- a published version and a run of it
SET ROLE dump_platform;
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('bot', 1, 'acme/ops',
  '{"steps": [{"id": "r", "tool": "d.read", "inputs": ["source:slack"]}, {"id": "u", "tool": "d.update", "inputs": ["r"]}]}');
INSERT INTO pg_labels.runs (id, agent, agent_version) VALUES ('e0000000-0000-0000-0000-000000000003', 'bot', 1);
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('e0000000-0000-0000-0000-000000000003', 'input', '{tag:pii}');
RESET ROLE;
