-- The seed's scenario, end to end, as a platform service writes it: plain INSERTs and the
-- gate, by a role that is not a superuser; the database refuses what crosses a barrier.
\pset footer off
\pset null ''

\echo '== The DBA: the tool catalog, a listener, a role for the platform and a person who approves'
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('tickets.read',   'read',             false),
  ('kb.search',      'read',             true),
  ('tickets.update', 'reversible_write', false),
  ('stripe.refund',  'financial',        false);
INSERT INTO pg_labels.listeners (agent, scope, event)
VALUES ('support-bot', 'acme/platform', 'slack.message') RETURNING id AS listener \gset
CREATE ROLE demo_platform;
CREATE ROLE demo_alice;
GRANT USAGE ON SCHEMA pg_labels TO demo_platform, demo_alice;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO demo_platform;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners TO demo_platform;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO demo_alice;
-- where each acts (and the platform reads): its grants in pg_labels.grants
INSERT INTO pg_labels.grants (role, scope) VALUES ('demo_platform', 'acme/platform'), ('demo_alice', 'acme');

SET ROLE demo_platform;
\echo '== A Slack message in channel T01/C02 opens a run of support-bot in acme/platform'
INSERT INTO pg_labels.runs (agent, scope, listener_id) VALUES ('support-bot', 'acme/platform', :listener)
RETURNING id AS run \gset
INSERT INTO pg_labels.steps (run_id, kind, labels, args)
VALUES (:'run', 'input', '{origin:slack/T01/C02}', '{"text": "please refund order 1234 and close my ticket"}');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES (:'run', 'planned', '{origin:slack/T01/C02}');
SELECT scope, labels AS "the run carries" FROM pg_labels.runs WHERE id = :'run';

\echo '== Reading is fine; the result of an untrusted tool carries origin:tool'
SELECT decision, rule FROM pg_labels.gate(:'run', 'tickets.read', '{"order": 1234}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES (:'run', 'tool_called', 'tickets.read', '{"order": 1234}');
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES (:'run', 'tool_result', 'tickets.read', '{tag:pii}')
RETURNING kind, tool, labels;

\echo '== A reversible write on untrusted data asks a person, with the real arguments'
SELECT decision, rule, reason FROM pg_labels.gate(:'run', 'tickets.update', '{"ticket": 77, "status": "closed"}');
SELECT pg_labels.request_approval(:'run', 'tickets.update', '{"ticket": 77, "status": "closed"}') AS request \gset
RESET ROLE;
SET ROLE demo_alice;
SELECT pg_labels.decide_approval(:request, true, 'customer asked for it') IS NOT NULL AS "alice approved";
SET ROLE demo_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
VALUES (:'run', 'tool_called', 'tickets.update', '{"ticket": 77, "status": "closed"}')
RETURNING kind, tool, decision, rule, request_id = :request AS "used the approval";

\echo '== A refund from Slack text: untrusted data never reaches a financial tool, approved or not'
SELECT decision, rule, reason FROM pg_labels.gate(:'run', 'stripe.refund', '{"order": 1234}');
\set VERBOSITY verbose
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES (:'run', 'tool_called', 'stripe.refund', '{"order": 1234}');

\echo '== A customer pastes a finance export into the thread: from now on every action is refused'
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES (:'run', 'input', '{origin:slack/T01/C02,area:acme/finance}');
SELECT decision, rule, reason FROM pg_labels.gate(:'run', 'kb.search', '{"q": "refund policy"}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES (:'run', 'tool_called', 'kb.search', '{"q": "refund policy"}');

\echo '== An event would open the listener''s run in another area: the run is not even opened'
INSERT INTO pg_labels.runs (agent, scope, listener_id) VALUES ('support-bot', 'acme/finance', :listener);
\set VERBOSITY default

\echo '== The trail, as an operator reads it'
SELECT id, kind, tool, labels, decision, rule, actor FROM pg_labels.steps WHERE run_id = :'run' ORDER BY id;
SELECT rule, count(*) AS "gate decisions" FROM pg_labels.steps
WHERE run_id = :'run' AND kind = 'gate_decided' AND decision <> 'allow' GROUP BY rule ORDER BY rule;
\echo '== The refused writes rolled back, and are on the record all the same'
SELECT pg_labels.refusals_recorded() AS "all recorded";
RESET ROLE;
SELECT kind, tool, rule, actor FROM pg_labels.refusals WHERE source = 'write' ORDER BY created_at;
\echo '== The trail is sealed, for its owner too'
UPDATE pg_labels.steps SET labels = '{}' WHERE run_id = :'run';
