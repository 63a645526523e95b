-- Event-opened runs, with a real non-superuser role: a run opened through a listener has the
-- listener's scope (filled in when omitted) and agent; a run the event would open in another
-- scope, or with initial labels its scope cannot carry, is never opened.
\pset null '(null)'
CREATE ROLE regress_listen_platform;
GRANT USAGE ON SCHEMA pg_labels TO regress_listen_platform;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_listen_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_listen_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.listeners TO regress_listen_platform;
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES
  ('triage-bot', 'initech/support', 'ticket.created'),
  (NULL, 'initech/ops', 'pager.fired');
SELECT id AS triage FROM pg_labels.listeners WHERE agent = 'triage-bot' \gset
SELECT id AS pager FROM pg_labels.listeners WHERE event = 'pager.fired' \gset

SET ROLE regress_listen_platform;
SELECT current_setting('is_superuser') AS superuser;
-- the event binding decides where the run is: scope and agent come from the listener
INSERT INTO pg_labels.runs (id, listener_id, labels) VALUES
  ('d6000000-0000-0000-0000-000000000001', :triage, '{origin:event}')
RETURNING scope, agent, labels;
INSERT INTO pg_labels.runs (id, listener_id, scope, agent) VALUES
  ('d6000000-0000-0000-0000-000000000002', :triage, 'initech/support', 'triage-bot')
RETURNING scope, agent, labels;
INSERT INTO pg_labels.runs (id, listener_id, agent) VALUES
  ('d6000000-0000-0000-0000-000000000003', :pager, 'oncall-bot')
RETURNING scope, agent;
-- an event that would open the run in another area, a wider scope, or another company: the
-- run is not even opened
\set VERBOSITY verbose
INSERT INTO pg_labels.runs (id, listener_id, scope) VALUES
  ('d6000000-0000-0000-0000-000000000004', :triage, 'initech/billing');
\set VERBOSITY default
INSERT INTO pg_labels.runs (id, listener_id, scope) VALUES
  ('d6000000-0000-0000-0000-000000000005', :triage, 'initech');
INSERT INTO pg_labels.runs (id, listener_id, scope) VALUES
  ('d6000000-0000-0000-0000-000000000006', :triage, '*');
INSERT INTO pg_labels.runs (id, listener_id, scope) VALUES
  ('d6000000-0000-0000-0000-000000000007', :triage, 'initech/support/tier2');
-- nor for another agent than the one bound
INSERT INTO pg_labels.runs (id, listener_id, agent) VALUES
  ('d6000000-0000-0000-0000-000000000008', :triage, 'refund-bot');
-- nor with initial labels (the event's payload) its scope cannot carry
\set VERBOSITY verbose
INSERT INTO pg_labels.runs (id, listener_id, labels) VALUES
  ('d6000000-0000-0000-0000-000000000009', :triage, '{origin:event,area:initech/billing}');
\set VERBOSITY default
INSERT INTO pg_labels.runs (id, listener_id, labels) VALUES
  ('d6000000-0000-0000-0000-00000000000a', :triage, '{company:initech}');
-- nor for a listener that does not exist, nor with no scope at all
INSERT INTO pg_labels.runs (listener_id) VALUES (-1);
INSERT INTO pg_labels.runs (agent) VALUES ('nowhere-bot');
-- a multi-row insert with one refused run opens none
INSERT INTO pg_labels.runs (id, listener_id, scope) VALUES
  ('d6000000-0000-0000-0000-00000000000b', :triage, NULL),
  ('d6000000-0000-0000-0000-00000000000c', :triage, 'initech/billing');
SELECT id, scope, agent, labels FROM pg_labels.runs WHERE id::text LIKE 'd6%' ORDER BY id;
RESET ROLE;

DROP OWNED BY regress_listen_platform;
DROP ROLE regress_listen_platform;
