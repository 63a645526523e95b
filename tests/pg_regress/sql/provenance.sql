-- Provenance in plain SQL: the trail and refusals views, lineage through context reads (depth,
-- cycles), its DOT picture; an analyst sees the lineage its scope can carry.
\pset null '(null)'
CREATE ROLE regress_prov_analyst;
GRANT USAGE ON SCHEMA pg_labels TO regress_prov_analyst;
GRANT SELECT ON pg_labels.trail, pg_labels.refusals, pg_labels.refused_writes, pg_labels.runs, pg_labels.steps
  TO regress_prov_analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_prov_analyst', 'acme/platform');
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('prov.search', 'read', true), ('prov.pay', 'financial', true), ('prov.edit', 'reversible_write', true)
ON CONFLICT DO NOTHING;

-- research (acme/platform/research) -> writer (acme/platform) -> reviewer (acme/platform), the
-- writer also reading a finance run's artifact under a crossing; two runs reading each other
INSERT INTO pg_labels.runs (id, agent, scope) VALUES
  ('d9000000-0000-0000-0000-000000000001', 'research-bot', 'acme/platform/research'),
  ('d9000000-0000-0000-0000-000000000002', 'writer-bot', 'acme/platform'),
  ('d9000000-0000-0000-0000-000000000003', 'review-bot', 'acme/platform'),
  ('d9000000-0000-0000-0000-000000000004', 'finance-bot', 'acme/finance'),
  ('d9000000-0000-0000-0000-0000000000c1', 'ping-bot', 'acme/platform'),
  ('d9000000-0000-0000-0000-0000000000c2', 'pong-bot', 'acme/platform');
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'provenance test') AS crossing \gset
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d9a00000-0000-0000-0000-000000000001', 'd9000000-0000-0000-0000-000000000001', pg_labels.digest('findings')),
  ('d9a00000-0000-0000-0000-000000000004', 'd9000000-0000-0000-0000-000000000004', pg_labels.digest('budget')),
  ('d9a00000-0000-0000-0000-0000000000c1', 'd9000000-0000-0000-0000-0000000000c1', pg_labels.digest('ping'));
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d9a00000-0000-0000-0000-000000000001', 'acme/platform'),
  ('d9a00000-0000-0000-0000-000000000004', 'acme/platform'),
  ('d9a00000-0000-0000-0000-0000000000c1', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d9000000-0000-0000-0000-000000000002', 'context_read', 'd9a00000-0000-0000-0000-000000000001'),
  ('d9000000-0000-0000-0000-000000000002', 'context_read', 'd9a00000-0000-0000-0000-000000000004');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d9a00000-0000-0000-0000-000000000002', 'd9000000-0000-0000-0000-000000000002', pg_labels.digest('draft'));
INSERT INTO pg_labels.shares (artifact_id, to_run) VALUES
  ('d9a00000-0000-0000-0000-000000000002', 'd9000000-0000-0000-0000-000000000003');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d9000000-0000-0000-0000-000000000003', 'context_read', 'd9a00000-0000-0000-0000-000000000002');
-- the cycle: pong reads ping's artifact, then ping reads pong's
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d9000000-0000-0000-0000-0000000000c2', 'context_read', 'd9a00000-0000-0000-0000-0000000000c1');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d9a00000-0000-0000-0000-0000000000c2', 'd9000000-0000-0000-0000-0000000000c2', pg_labels.digest('pong'));
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('d9a00000-0000-0000-0000-0000000000c2', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d9000000-0000-0000-0000-0000000000c1', 'context_read', 'd9a00000-0000-0000-0000-0000000000c2');
-- some gate decisions for the refusals view
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('d9000000-0000-0000-0000-000000000003', 'input', '{origin:slack}');
SELECT decision, rule FROM pg_labels.gate('d9000000-0000-0000-0000-000000000003', 'prov.pay', '{"eur": 5}');
SELECT decision, rule FROM pg_labels.gate('d9000000-0000-0000-0000-000000000003', 'prov.edit', '{"doc": 1}');
SELECT decision, rule FROM pg_labels.gate('d9000000-0000-0000-0000-000000000003', 'prov.search');

-- the trail: every step with its run's scope
SELECT run_scope, agent, kind, tool, labels, origin_run IS NOT NULL AS has_origin, crossing_ids IS NOT NULL AS crossed
FROM pg_labels.trail WHERE run_id::text LIKE 'd9%' ORDER BY id;
-- refusals by rule
SELECT rule, decision, tool, reason FROM pg_labels.refusals WHERE run_id::text LIKE 'd9%' ORDER BY step_id;
SELECT rule, count(*) FROM pg_labels.refusals WHERE run_id::text LIKE 'd9%' GROUP BY rule ORDER BY rule;

-- lineage of the reviewer: the writer at depth 1, what the writer read at depth 2
SELECT depth, run_id, scope, agent, artifact_id, left(digest, 12) AS digest, labels, read_by
FROM pg_labels.lineage('d9000000-0000-0000-0000-000000000003') ORDER BY depth, read_step;
-- a run that read nothing has no lineage; an unknown run neither
SELECT count(*) FROM pg_labels.lineage('d9000000-0000-0000-0000-000000000001');
SELECT count(*) FROM pg_labels.lineage('d9000000-0000-0000-0000-0000000000ff');
SELECT count(*) FROM pg_labels.lineage(NULL);
-- cycles end: each run is expanded once
SELECT depth, agent, read_by = 'd9000000-0000-0000-0000-0000000000c1' AS read_by_ping
FROM pg_labels.lineage('d9000000-0000-0000-0000-0000000000c1') ORDER BY depth, read_step;
-- the picture
SELECT pg_labels.lineage_dot('d9000000-0000-0000-0000-000000000003');
SELECT pg_labels.lineage_dot('d9000000-0000-0000-0000-000000000001');

-- an analyst in acme/platform sees the lineage its scope can carry: the writer read finance
-- data (its steps carry it), so that part of the graph is not the analyst's to see
SET ROLE regress_prov_analyst;
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT depth, agent, labels FROM pg_labels.lineage('d9000000-0000-0000-0000-000000000003') ORDER BY depth, read_step;
SELECT depth, agent, labels FROM pg_labels.lineage('d9000000-0000-0000-0000-0000000000c1') ORDER BY depth, read_step;
SELECT count(*) AS trail_rows FROM pg_labels.trail WHERE run_id::text LIKE 'd9%';
COMMIT;
SELECT count(*) AS without_a_scope FROM pg_labels.lineage('d9000000-0000-0000-0000-000000000003');
RESET ROLE;

DELETE FROM pg_labels.grants WHERE role = 'regress_prov_analyst';
DROP OWNED BY regress_prov_analyst;
DROP ROLE regress_prov_analyst;
