-- Publication catches the irreversible cases: a draft that lets a webhook's text reach a
-- refund is refused, naming the path; the version that closes tickets on webhook requests is
-- published with that step marked as needing a person's approval, and its runs have its scope.
\pset footer off
\pset null ''

\echo '== The DBA lets the platform publish agents'
GRANT SELECT, INSERT ON pg_labels.agent_versions TO demo_platform;
GRANT SELECT ON pg_labels.approval_points TO demo_platform;

SET ROLE demo_platform;
\echo '== A draft of support-bot: read the ticket a webhook names, then refund the order'
\set VERBOSITY verbose
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('support-bot', 1, 'acme/platform',
 '{"steps": [
    {"id": "read",   "tool": "tickets.read",  "inputs": ["source:webhook"]},
    {"id": "refund", "tool": "stripe.refund", "inputs": ["read"]}]}');
\set VERBOSITY default

\echo '== The published version closes the ticket instead: a reversible write, which a person approves'
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps, description) VALUES ('support-bot', 1, 'acme/platform',
 '{"steps": [
    {"id": "read",   "tool": "tickets.read",   "inputs": ["source:webhook"]},
    {"id": "policy", "tool": "kb.search",      "inputs": ["source:agent"]},
    {"id": "close",  "tool": "tickets.update", "inputs": ["read", "policy"]}]}', 'closes tickets on request')
RETURNING agent, version, scope, published_by;
\echo '== What needs a person at run time, as analysts query it'
SELECT agent, version, step, tool, path FROM pg_labels.approval_points WHERE agent = 'support-bot';

\echo '== A run of the version has its scope; opening it anywhere else is refused'
INSERT INTO pg_labels.runs (agent, agent_version) VALUES ('support-bot', 1) RETURNING scope AS "run scope";
INSERT INTO pg_labels.runs (agent, agent_version, scope) VALUES ('support-bot', 1, 'acme/finance');
SELECT pg_labels.refusals_recorded() AS "refused, and on the record";
RESET ROLE;
