-- The publication check, with a real non-superuser role publishing: a version whose declared
-- steps let untrusted data reach a destructive or financial tool is refused, naming the path;
-- reversible writes reached by untrusted data are published and recorded as needing approval,
-- and the gate agrees at run time; malformed declarations are refused with what is wrong; a
-- run of a version has the version's scope.
\pset null '(null)'
CREATE ROLE regress_pub_platform;
GRANT USAGE ON SCHEMA pg_labels TO regress_pub_platform;
GRANT SELECT, INSERT ON pg_labels.agent_versions, pg_labels.runs, pg_labels.steps TO regress_pub_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pub_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.approval_points TO regress_pub_platform;
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('pub.tickets.read', 'read', false),
  ('pub.kb.search', 'read', true),
  ('pub.summarize', 'read', true),
  ('pub.tickets.update', 'reversible_write', true),
  ('pub.stripe.refund', 'financial', true),
  ('pub.db.drop', 'destructive', true);

SET ROLE regress_pub_platform;
SELECT current_setting('is_superuser') AS superuser;

-- the contract's example: a webhook's data reaches a refund
\set VERBOSITY verbose
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-support', 1, 'acme/platform',
 '{"steps": [
    {"id": "read",   "tool": "pub.tickets.read",  "inputs": ["source:webhook"]},
    {"id": "refund", "tool": "pub.stripe.refund", "inputs": ["read"]}]}');
\set VERBOSITY default

-- taint is transitive, through trusted tools too; every reached irreversible step is listed
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-support', 1, 'acme/platform',
 '{"steps": [
    {"id": "msg",    "tool": "pub.summarize",     "inputs": ["source:slack"]},
    {"id": "plan",   "tool": "pub.summarize",     "inputs": ["source:agent", "msg"]},
    {"id": "refund", "tool": "pub.stripe.refund", "inputs": ["plan"]},
    {"id": "wipe",   "tool": "pub.db.drop",       "inputs": ["source:event"]}]}');
-- the output of a tool whose output is not trusted is untrusted, even on trusted inputs
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-support', 1, 'acme/platform',
 '{"steps": [
    {"id": "lookup", "tool": "pub.tickets.read",  "inputs": ["source:agent"]},
    {"id": "refund", "tool": "pub.stripe.refund", "inputs": ["lookup"]}]}');

-- trusted outputs on trusted inputs stay trusted: a refund from the instructions is published;
-- the reversible write reached by Slack data is published and needs approval
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps, description) VALUES ('pub-support', 1, 'acme/platform',
 '{"steps": [
    {"id": "policy", "tool": "pub.kb.search",      "inputs": ["source:agent"]},
    {"id": "refund", "tool": "pub.stripe.refund",  "inputs": ["policy"]},
    {"id": "msg",    "tool": "pub.summarize",      "inputs": ["source:slack"]},
    {"id": "close",  "tool": "pub.tickets.update", "inputs": ["msg", "policy"]},
    {"id": "note",   "tool": "pub.tickets.update", "inputs": ["policy"]}]}', 'refunds by policy, closes on request')
RETURNING agent, version, needs_approval, published_by = current_user AS by_the_publisher;
-- analysts query what needs approval
SELECT agent, version, scope, step, tool, effect, path FROM pg_labels.approval_points ORDER BY agent, version, step;

-- malformed declarations, each refused with what is wrong
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '[]');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": {"id": "a"}}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": ["a"]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"tool": "pub.kb.search"}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"id": "", "tool": "pub.kb.search"}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"id": 7, "tool": "pub.kb.search"}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"id": "a"}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"id": "a", "tool": "pub.kb.search", "inputs": "source:agent"}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"id": "a", "tool": "pub.kb.search", "inputs": [1]}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', '{"steps": [{"id": "source:agent", "tool": "pub.kb.search"}]}');
-- duplicate ids, unknown step references, unknown sources, cycles
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform',
 '{"steps": [{"id": "a", "tool": "pub.kb.search"}, {"id": "a", "tool": "pub.summarize"}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform',
 '{"steps": [{"id": "a", "tool": "pub.kb.search", "inputs": ["b"]}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform',
 '{"steps": [{"id": "a", "tool": "pub.kb.search", "inputs": ["source:email"]}]}');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform',
 '{"steps": [{"id": "a", "tool": "pub.kb.search", "inputs": ["source:agent", "c"]},
             {"id": "b", "tool": "pub.summarize", "inputs": ["a"]},
             {"id": "c", "tool": "pub.summarize", "inputs": ["b"]}]}');
-- unknown tools fail closed, with their own rule
\set VERBOSITY verbose
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform',
 '{"steps": [{"id": "a", "tool": "shell.exec", "inputs": ["source:agent"]}]}');
\set VERBOSITY default
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 1, 'acme/platform', NULL);
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('pub-bad', 0, 'acme/platform', '{"steps": []}');
SELECT count(*) AS bad_versions_published FROM pg_labels.agent_versions WHERE agent = 'pub-bad';

-- a long declaration: a 10,000-step chain from the instructions to a refund is published; the
-- same chain from Slack is refused, its long path shortened in the middle
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps)
SELECT 'pub-long', 1, 'acme/platform', jsonb_build_object('steps',
  jsonb_agg(jsonb_build_object('id', 's' || i, 'tool', CASE WHEN i = 10000 THEN 'pub.stripe.refund' ELSE 'pub.summarize' END,
                               'inputs', jsonb_build_array(CASE WHEN i = 1 THEN 'source:agent' ELSE 's' || (i - 1) END)) ORDER BY i))
FROM generate_series(1, 10000) i
RETURNING agent, version, jsonb_array_length(steps -> 'steps') AS steps;
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps)
SELECT 'pub-long', 2, 'acme/platform', jsonb_build_object('steps',
  jsonb_agg(jsonb_build_object('id', 's' || i, 'tool', CASE WHEN i = 10000 THEN 'pub.stripe.refund' ELSE 'pub.summarize' END,
                               'inputs', jsonb_build_array(CASE WHEN i = 1 THEN 'source:slack' ELSE 's' || (i - 1) END)) ORDER BY i))
FROM generate_series(1, 10000) i;

-- a run of a version has the version's scope: filled in, or refused elsewhere
INSERT INTO pg_labels.runs (id, agent, agent_version) VALUES ('d7000000-0000-0000-0000-000000000001', 'pub-support', 1)
RETURNING scope, labels;
\set VERBOSITY verbose
INSERT INTO pg_labels.runs (id, agent, agent_version, scope) VALUES ('d7000000-0000-0000-0000-000000000002', 'pub-support', 1, 'acme/finance');
\set VERBOSITY default
INSERT INTO pg_labels.runs (id, agent, agent_version, scope) VALUES ('d7000000-0000-0000-0000-000000000003', 'pub-support', 1, 'acme');
INSERT INTO pg_labels.runs (agent, agent_version, scope) VALUES ('pub-support', 7, 'acme/platform');
INSERT INTO pg_labels.runs (id, agent_version, scope) VALUES ('d7000000-0000-0000-0000-000000000004', 1, 'acme/platform');
RESET ROLE;
-- a listener in another area than the version: the run is not opened either
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('pub-support', 'acme/sales', 'pub.event') RETURNING id AS listener \gset
SET ROLE regress_pub_platform;
INSERT INTO pg_labels.runs (id, agent_version, listener_id) VALUES ('d7000000-0000-0000-0000-000000000005', 1, :listener);

-- the gate agrees with the publication: on Slack data, the steps marked as needing approval ask
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('d7000000-0000-0000-0000-000000000001', 'input', '{origin:slack}');
SELECT p.step, p.tool, g.decision, g.rule
FROM pg_labels.approval_points p, pg_labels.gate('d7000000-0000-0000-0000-000000000001', p.tool, '{"ticket": 1}') g
WHERE p.agent = 'pub-support' AND p.version = 1;
RESET ROLE;

-- published versions never change, for their owner too
UPDATE pg_labels.agent_versions SET steps = '{"steps": []}' WHERE agent = 'pub-support';
DELETE FROM pg_labels.agent_versions WHERE agent = 'pub-long';
TRUNCATE pg_labels.agent_versions CASCADE;

DROP OWNED BY regress_pub_platform;
DROP ROLE regress_pub_platform;
