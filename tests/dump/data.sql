-- A small trail to dump and restore.
CREATE EXTENSION pg_labels;
INSERT INTO pg_labels.tools (name, effect) VALUES ('d.read', 'read'), ('d.update', 'reversible_write'), ('d.pay', 'financial');
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('bot', 'acme/ops', 'e');
INSERT INTO pg_labels.runs (id, agent, scope, listener_id) VALUES ('e0000000-0000-0000-0000-000000000001', 'bot', 'acme/ops', 1);
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('e0000000-0000-0000-0000-000000000001', 'tool_called', 'd.pay');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('e0000000-0000-0000-0000-000000000001', 'input', '{origin:webhook}');
SELECT pg_labels.request_approval('e0000000-0000-0000-0000-000000000001', 'd.update', '{"x": 1}');
SELECT * FROM pg_labels.gate('e0000000-0000-0000-0000-000000000001', 'd.pay');
-- context shared under a crossing, read by a second run
INSERT INTO pg_labels.runs (id, agent, scope) VALUES ('e0000000-0000-0000-0000-000000000002', 'fin', 'acme/finance');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('ea000000-0000-0000-0000-000000000001', 'e0000000-0000-0000-0000-000000000002', pg_labels.digest('report'));
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/ops', 'dump test');
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('ea000000-0000-0000-0000-000000000001', 'acme/ops');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('e0000000-0000-0000-0000-000000000001', 'context_read', 'ea000000-0000-0000-0000-000000000001');
SELECT pg_labels.authorize_crossing('acme/finance', 'globex', 'revoked before the dump');
SELECT pg_labels.revoke_crossing(2, 'done');
-- a published version and a run of it
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('bot', 1, 'acme/ops',
  '{"steps": [{"id": "r", "tool": "d.read", "inputs": ["source:slack"]}, {"id": "u", "tool": "d.update", "inputs": ["r"]}]}');
INSERT INTO pg_labels.runs (id, agent, agent_version) VALUES ('e0000000-0000-0000-0000-000000000003', 'bot', 1);
-- who may enter which scope
INSERT INTO pg_labels.grants (role, scope) VALUES ('pg_monitor', 'acme/ops');
