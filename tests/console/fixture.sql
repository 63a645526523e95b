-- The console suite's database, after demo/2_seed_scenario.sql, 3_sharing.sql, 4_publication.sql
-- and 5_analyst.sql (as the superuser): people who sign in with passwords, a second company,
-- approval requests to decide, and values written by services that hold HTML and script.
\set ON_ERROR_STOP on
\pset footer off

-- people: an analyst of acme/platform, an approver of acme, a role that can act as the
-- platform's writer (so the database refuses its decisions on the platform's requests), a
-- role that may not log in, and globex's analyst
CREATE ROLE console_ana LOGIN PASSWORD 'ana-secret';
CREATE ROLE console_apo LOGIN PASSWORD 'apo-secret';
CREATE ROLE console_self LOGIN PASSWORD 'self-secret' IN ROLE demo_platform;
CREATE ROLE console_nologin NOLOGIN PASSWORD 'nologin-secret';
CREATE ROLE console_gina LOGIN PASSWORD 'gina-secret';
GRANT USAGE ON SCHEMA pg_labels TO console_ana, console_apo, console_self, console_gina;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                pg_labels.tools, pg_labels.refused_writes, pg_labels.trail, pg_labels.refusals,
                pg_labels.grants, pg_labels.approval_points
  TO console_ana, console_apo, console_self, console_gina;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO console_apo, console_self;
INSERT INTO pg_labels.grants (role, scope) VALUES
  ('console_ana', 'acme/platform'), ('console_apo', 'acme'), ('console_self', 'acme'),
  ('console_gina', 'globex');

-- a tool whose name a service wrote with markup in it
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('<img src=x onerror=alert("tool")>', 'reversible_write', false);

SET ROLE demo_platform;
-- a run whose agent name, arguments and reasons hold markup; two requests to decide
INSERT INTO pg_labels.runs (agent, scope) VALUES ('<script>alert("agent")</script>', 'acme/platform')
RETURNING id AS hostile_run \gset
INSERT INTO pg_labels.steps (run_id, kind, labels, args, reason)
VALUES (:'hostile_run', 'input', '{origin:webhook/zendesk}',
        '{"text": "</pre><script>alert(\"args\")</script>", "order": 4321}', '<b onmouseover=alert(1)>bold</b>');
SELECT decision, rule FROM pg_labels.gate(:'hostile_run', 'tickets.update', '{"ticket": 4321, "status": "<i>closed</i>"}');
SELECT pg_labels.request_approval(:'hostile_run', 'tickets.update', '{"ticket": 4321, "status": "<i>closed</i>"}',
                                  '{}', 'customer wrote: <script>alert("reason")</script>') AS grant_me;
SELECT pg_labels.request_approval(:'hostile_run', '<img src=x onerror=alert("tool")>', '{"ticket": 4321}',
                                  '{tag:pii}', 'reopen') AS deny_me;
SELECT pg_labels.request_approval(:'hostile_run', 'tickets.update', '{"ticket": 4322, "status": "closed"}') AS self_try;
SELECT decision, rule FROM pg_labels.gate(:'hostile_run', '<svg onload=alert("unknown")>', '{"x": "<u>y</u>"}');

-- another company's run, with a pending request of its own, by globex's own writer
RESET ROLE;
CREATE ROLE console_globex_writer;
GRANT USAGE ON SCHEMA pg_labels TO console_globex_writer;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO console_globex_writer;
INSERT INTO pg_labels.grants (role, scope) VALUES ('console_globex_writer', 'globex');
SET ROLE console_globex_writer;
INSERT INTO pg_labels.runs (agent, scope) VALUES ('globex-bot', 'globex/support') RETURNING id AS globex_run \gset
INSERT INTO pg_labels.steps (run_id, kind, labels, args) VALUES (:'globex_run', 'input', '{origin:slack/G1}', '{"text": "globex secret plan"}');
SELECT pg_labels.request_approval(:'globex_run', 'tickets.update', '{"ticket": 9, "status": "closed"}') AS globex_request;
RESET ROLE;

-- approval requests that wait (docs/approvals.md): pg_labels.approval_requests for the console's
-- people; a run of acme's with a request to grant on its own page and one that expired
-- undecided (a time to live of a millisecond)
GRANT SELECT ON pg_labels.approval_requests TO console_ana, console_apo, console_self, console_gina;
SET ROLE demo_platform;
INSERT INTO pg_labels.runs (agent, scope) VALUES ('waiting-bot', 'acme/platform') RETURNING id AS wait_run \gset
INSERT INTO pg_labels.steps (run_id, kind, labels, args)
VALUES (:'wait_run', 'input', '{origin:slack/T01/C09}', '{"text": "please close 5005"}');
SELECT decision, rule FROM pg_labels.gate(:'wait_run', 'tickets.update', '{"ticket": 5005, "status": "closed"}');
SELECT pg_labels.request_approval(:'wait_run', 'tickets.update', '{"ticket": 5005, "status": "closed"}',
                                  '{}', 'the customer asked', ttl => interval '1 day') AS page_grant;
SELECT pg_labels.request_approval(:'wait_run', 'tickets.update', '{"ticket": 5006, "status": "closed"}',
                                  ttl => interval '1 millisecond') AS expired_request;
RESET ROLE;
