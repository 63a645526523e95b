-- Approvals, with real non-superuser roles: the platform's writer records steps and requests
-- approvals; only a role the DBA allowed decides, never the requester; a granted approval lets
-- exactly one identical call through; approvals never override data_barrier and never make
-- an untrusted irreversible call acceptable.
\pset null '(null)'

-- the DBA's set-up: a writer for the platform, a person who may approve, and a role that can
-- act as the writer
CREATE ROLE regress_pg_labels_platform;
CREATE ROLE regress_pg_labels_alice;
CREATE ROLE regress_pg_labels_sidekick IN ROLE regress_pg_labels_platform;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_platform, regress_pg_labels_alice;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_pg_labels_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners TO regress_pg_labels_platform;
-- how a DBA allows a person to decide:
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_pg_labels_alice;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_alice', '*') ON CONFLICT DO NOTHING;

INSERT INTO pg_labels.tools (name, effect) VALUES
  ('crm.update', 'reversible_write'), ('bank.transfer', 'financial'), ('crm.read', 'read')
ON CONFLICT DO NOTHING;

SET ROLE regress_pg_labels_platform;
SELECT current_user, current_setting('is_superuser') AS superuser;
INSERT INTO pg_labels.runs (id, agent, scope) VALUES ('a1000000-0000-0000-0000-000000000001', 'crm-bot', 'acme/sales');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('a1000000-0000-0000-0000-000000000001', 'input', '{origin:slack}');
-- an untrusted reversible write asks for a person
SELECT decision, rule FROM pg_labels.gate('a1000000-0000-0000-0000-000000000001', 'crm.update', '{"deal": 1, "stage": "won"}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'crm.update', '{"deal": 1, "stage": "won"}');
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000001', 'crm.update', '{"stage": "won", "deal": 1}') AS request \gset
-- the writer cannot decide: no EXECUTE ...
SELECT pg_labels.decide_approval(:request, true);
-- ... and cannot write a decision into the trail itself
INSERT INTO pg_labels.steps (run_id, kind, tool, decision, request_id) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'approval_decided', 'crm.update', 'granted', :request);
RESET ROLE;

-- even when a DBA grants it by mistake, the requester cannot decide its own request, nor a
-- role that can act as it
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text)
  TO regress_pg_labels_platform, regress_pg_labels_sidekick;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_platform', '*'), ('regress_pg_labels_sidekick', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_pg_labels_platform;
SELECT pg_labels.decide_approval(:request, true);
SET ROLE regress_pg_labels_sidekick;
SELECT pg_labels.decide_approval(:request, true);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text)
  FROM regress_pg_labels_platform, regress_pg_labels_sidekick;

-- a person decides; the trail names them
SET ROLE regress_pg_labels_alice;
SELECT pg_labels.decide_approval(:request, true, 'checked the deal') IS NOT NULL AS decided;
SELECT pg_labels.decide_approval(:request, false);
SELECT pg_labels.decide_approval(999999, true);
-- (the person has no privilege on the tables themselves)
SELECT count(*) FROM pg_labels.steps;
RESET ROLE;
SELECT kind, tool, decision, reason, actor, request_id = :request AS for_request
FROM pg_labels.steps WHERE kind = 'approval_decided';

SET ROLE regress_pg_labels_platform;
-- the gate now allows exactly that call, naming the approval
SELECT decision, rule, reason ~ 'approved \(request' AS approved FROM pg_labels.gate('a1000000-0000-0000-0000-000000000001', 'crm.update', '{"deal": 1, "stage": "won"}');
-- other arguments are a different call
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'crm.update', '{"deal": 2, "stage": "won"}');
-- the approved call goes through once, and records the approval it used
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'crm.update', '{"deal": 1, "stage": "won"}')
RETURNING decision, rule, request_id = :request AS used_request;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'crm.update', '{"deal": 1, "stage": "won"}');

-- a denied request lets nothing through
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000001', 'crm.update', '{"deal": 3}') AS denied_request \gset
RESET ROLE;
SET ROLE regress_pg_labels_alice;
SELECT pg_labels.decide_approval(:denied_request, false, 'no') IS NOT NULL AS decided;
SET ROLE regress_pg_labels_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'crm.update', '{"deal": 3}');

-- no approval makes an untrusted financial call acceptable
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000001', 'bank.transfer', '{"eur": 10}') AS money_request \gset
RESET ROLE;
SET ROLE regress_pg_labels_alice;
SELECT pg_labels.decide_approval(:money_request, true) IS NOT NULL AS decided;
SET ROLE regress_pg_labels_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'bank.transfer', '{"eur": 10}');

-- approvals never override data_barrier
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000001', 'crm.update', '{"deal": 4}') AS barrier_request \gset
RESET ROLE;
SET ROLE regress_pg_labels_alice;
SELECT pg_labels.decide_approval(:barrier_request, true) IS NOT NULL AS decided;
SET ROLE regress_pg_labels_platform;
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'input', '{area:acme/finance}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a1000000-0000-0000-0000-000000000001', 'tool_called', 'crm.update', '{"deal": 4}');
SELECT decision, rule FROM pg_labels.gate('a1000000-0000-0000-0000-000000000001', 'crm.update', '{"deal": 4}');
RESET ROLE;

-- the trail of the run, as an operator reads it
SELECT kind, tool, args, decision, rule, actor FROM pg_labels.steps
WHERE run_id = 'a1000000-0000-0000-0000-000000000001' ORDER BY id;

-- Approvals that wait: a request may expire (its ttl), its requester may withdraw it, and
-- pg_labels.approval_requests reads each one's state
GRANT SELECT ON pg_labels.approval_requests TO regress_pg_labels_platform;
SET ROLE regress_pg_labels_platform;
INSERT INTO pg_labels.runs (id, agent, scope) VALUES ('a1000000-0000-0000-0000-000000000002', 'crm-bot', 'acme/sales');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('a1000000-0000-0000-0000-000000000002', 'input', '{origin:webhook}');
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000002', 'crm.update', '{"deal": 10}', ttl => '1 hour') AS waits \gset
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000002', 'crm.update', '{"deal": 11}', ttl => '-1 second') AS expired \gset
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000002', 'crm.update', '{"deal": 12}') AS withdrawn \gset
SELECT pg_labels.request_approval('a1000000-0000-0000-0000-000000000002', 'crm.update', '{"deal": 13}') AS denied \gset
-- the expiry is the request's time and its ttl, in the trail
SELECT expires_at - created_at AS ttl FROM pg_labels.steps WHERE id = :waits;
-- a writer may give a request's expiry itself, and no other step's
INSERT INTO pg_labels.steps (run_id, kind, tool, args, expires_at)
VALUES ('a1000000-0000-0000-0000-000000000002', 'approval_requested', 'crm.update', '{"deal": 14}', now() + interval '5 minutes')
RETURNING expires_at - created_at AS ttl;
INSERT INTO pg_labels.steps (run_id, kind, labels, expires_at)
VALUES ('a1000000-0000-0000-0000-000000000002', 'input', '{}', now());
-- the requester withdraws its own request (it stopped waiting) ...
SELECT pg_labels.withdraw_approval(:withdrawn, 'the client cancelled') IS NOT NULL AS withdrew;
-- ... once
SELECT pg_labels.withdraw_approval(:withdrawn);
SELECT pg_labels.withdraw_approval(NULL);
SELECT pg_labels.withdraw_approval(-1);
RESET ROLE;
SET ROLE regress_pg_labels_alice;
-- an expired request is decided by no one (its message names when it expired); a withdrawn
-- one is decided
\set VERBOSITY sqlstate
SELECT pg_labels.decide_approval(:expired, true);
\set VERBOSITY default
SELECT pg_labels.decide_approval(:withdrawn, true);
-- nor withdrawn by anyone but its requester: another role's request is answered as one that
-- does not exist, on the record too (its refusal names no run)
SELECT pg_labels.withdraw_approval(:waits);
SELECT pg_labels.withdraw_approval(999999);
SELECT pg_labels.decide_approval(:denied, false, 'not this deal') IS NOT NULL AS denied;
RESET ROLE;
SELECT pg_labels.refusals_recorded();
SELECT kind, sqlstate, run_id, run_scope, reason FROM pg_labels.refused_writes
 WHERE actor = 'regress_pg_labels_alice' AND sqlstate = '23503' ORDER BY id;
SET ROLE regress_pg_labels_platform;
SELECT id = :waits AS waits, status, requested_by, decided_by, decision_reason, expires_at IS NOT NULL AS expires
  FROM pg_labels.approval_requests WHERE run_id = 'a1000000-0000-0000-0000-000000000002' ORDER BY id;
SELECT tool, decision, reason, actor FROM pg_labels.steps
 WHERE run_id = 'a1000000-0000-0000-0000-000000000002' AND kind = 'approval_decided' ORDER BY id;
-- a granted one reads as used by the call it let through
RESET ROLE;
SET ROLE regress_pg_labels_alice;
SELECT pg_labels.decide_approval(:waits, true) IS NOT NULL AS granted;
SET ROLE regress_pg_labels_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
VALUES ('a1000000-0000-0000-0000-000000000002', 'tool_called', 'crm.update', '{"deal": 10}') RETURNING id AS call \gset
SELECT status, used_by = :call AS used FROM pg_labels.approval_requests WHERE id = :waits;
RESET ROLE;
-- the expiries are in the run's hash chain, which holds
SELECT intact, steps FROM pg_labels.verify('a1000000-0000-0000-0000-000000000002');

DROP OWNED BY regress_pg_labels_platform, regress_pg_labels_alice, regress_pg_labels_sidekick;
DROP ROLE regress_pg_labels_sidekick, regress_pg_labels_platform, regress_pg_labels_alice;
