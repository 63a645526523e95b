-- Context shared by reference, with real non-superuser roles: artifacts record labels, digest
-- and origin run; a share is refused unless its scope can carry the artifact's labels or an
-- active crossing covers them; a context read needs a share and brings the artifact's labels;
-- crossings are recorded and ended only by the roles the DBA allows, and authorize nothing once
-- expired or revoked.
\pset null '(null)'

-- the DBA's set-up: the platform's writer, a person who may authorize crossings, and a role
-- that has nothing to do with it
CREATE ROLE regress_share_platform;
CREATE ROLE regress_share_bob;
CREATE ROLE regress_share_mallory;
GRANT USAGE ON SCHEMA pg_labels TO regress_share_platform, regress_share_bob, regress_share_mallory;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares
  TO regress_share_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_share_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.crossings TO regress_share_platform;
GRANT SELECT ON pg_labels.crossings TO regress_share_bob;
-- how a DBA allows a person to record and end crossings:
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
                          pg_labels.revoke_crossing(bigint, text) TO regress_share_bob;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_share_bob', '*') ON CONFLICT DO NOTHING;
-- even a role granted every table privilege cannot record a crossing but through the function
GRANT SELECT, INSERT, UPDATE, DELETE ON pg_labels.crossings TO regress_share_mallory;
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('sh.search', 'read', true), ('sh.refund', 'financial', false)
ON CONFLICT DO NOTHING;

-- the digest helper: hex SHA-256 of the content
SELECT pg_labels.digest('hello') AS digest_of_text,
       pg_labels.digest('hello'::bytea) = pg_labels.digest('hello') AS same_for_bytea,
       pg_labels.digest(NULL::text) IS NULL AS strict;

SET ROLE regress_share_platform;
SELECT current_user, current_setting('is_superuser') AS superuser;
-- a finance run, a support run, a sales run, a company-level run, a run at another company
INSERT INTO pg_labels.runs (id, agent, scope) VALUES
  ('d5000000-0000-0000-0000-00000000000f', 'finance-bot', 'acme/finance'),
  ('d5000000-0000-0000-0000-00000000000a', 'support-bot', 'acme/platform'),
  ('d5000000-0000-0000-0000-00000000000b', 'support-bot', 'acme/platform'),
  ('d5000000-0000-0000-0000-00000000000c', 'infra-bot', 'acme/platform/infra'),
  ('d5000000-0000-0000-0000-000000000005', 'sales-bot', 'acme/sales'),
  ('d5000000-0000-0000-0000-0000000000ac', 'exec-bot', 'acme'),
  ('d5000000-0000-0000-0000-000000000006', 'globex-bot', 'globex/ops');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('d5000000-0000-0000-0000-00000000000f', 'input', '{tag:pii}');

-- an artifact carries at least what its origin run carried when it was made
INSERT INTO pg_labels.artifacts (id, origin_run, digest, labels, description) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'd5000000-0000-0000-0000-00000000000f',
   pg_labels.digest('Q3 ledger summary'), '{}', 'ledger summary')
RETURNING labels, digest = pg_labels.digest('Q3 ledger summary') AS digest_ok, actor;
INSERT INTO pg_labels.artifacts (origin_run, digest) VALUES
  ('d5000000-0000-0000-0000-0000000000ff', pg_labels.digest('x'));
INSERT INTO pg_labels.artifacts (origin_run, digest) VALUES
  ('d5000000-0000-0000-0000-00000000000f', 'not a digest');
INSERT INTO pg_labels.artifacts (origin_run, digest) VALUES (NULL, pg_labels.digest('x'));
-- the actor cannot be forged: a writer's actor is refused, the database writes it
INSERT INTO pg_labels.artifacts (id, origin_run, digest, actor) VALUES
  ('d5a00000-0000-0000-0000-000000000002', 'd5000000-0000-0000-0000-00000000000f', pg_labels.digest('memo'), 'someone_else')
RETURNING actor;
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d5a00000-0000-0000-0000-000000000002', 'd5000000-0000-0000-0000-00000000000f', pg_labels.digest('memo'))
RETURNING actor;

-- shares: the scope must carry the artifact's labels
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme/finance'),
  ('d5a00000-0000-0000-0000-000000000001', 'acme')
RETURNING to_scope, to_run, crossing_id;
\set VERBOSITY verbose
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme/platform');
\set VERBOSITY default
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'globex');
-- to one run: judged by (and recording) that run's scope
INSERT INTO pg_labels.shares (artifact_id, to_run) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'd5000000-0000-0000-0000-00000000000a');
INSERT INTO pg_labels.shares (artifact_id, to_scope, to_run) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme', 'd5000000-0000-0000-0000-00000000000a');
INSERT INTO pg_labels.shares (artifact_id, to_run) VALUES
  ('d5a00000-0000-0000-0000-000000000002', 'd5000000-0000-0000-0000-0000000000ac')
RETURNING to_scope, to_run IS NOT NULL AS to_one_run;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('d5a00000-0000-0000-0000-0000000000ff', 'acme');
INSERT INTO pg_labels.shares (artifact_id, to_run) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'd5000000-0000-0000-0000-0000000000ff');

-- context reads: origin run, digest and labels come from the artifact
INSERT INTO pg_labels.steps (run_id, kind, artifact_id, labels) VALUES
  ('d5000000-0000-0000-0000-0000000000ac', 'context_read', 'd5a00000-0000-0000-0000-000000000001', '{}')
RETURNING labels, origin_run, digest = pg_labels.digest('Q3 ledger summary') AS digest_filled, share_id IS NOT NULL AS shared, crossing_ids;
SELECT labels FROM pg_labels.runs WHERE id = 'd5000000-0000-0000-0000-0000000000ac';
-- ... and cannot be understated or contradicted
INSERT INTO pg_labels.steps (run_id, kind, artifact_id, digest) VALUES
  ('d5000000-0000-0000-0000-0000000000ac', 'context_read', 'd5a00000-0000-0000-0000-000000000001', pg_labels.digest('other content'));
INSERT INTO pg_labels.steps (run_id, kind, artifact_id, origin_run) VALUES
  ('d5000000-0000-0000-0000-0000000000ac', 'context_read', 'd5a00000-0000-0000-0000-000000000001', 'd5000000-0000-0000-0000-00000000000a');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id, digest, origin_run) VALUES
  ('d5000000-0000-0000-0000-0000000000ac', 'context_read', 'd5a00000-0000-0000-0000-000000000001',
   pg_labels.digest('Q3 ledger summary'), 'd5000000-0000-0000-0000-00000000000f')
RETURNING kind, labels;
-- a context read names its artifact, an existing one
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('d5000000-0000-0000-0000-0000000000ac', 'context_read', '{area:acme/finance}');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-0000000000ac', 'context_read', 'd5a00000-0000-0000-0000-0000000000ff');
-- the reading run must be covered by a share: the memo is shared with the exec run only
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-00000000000f', 'context_read', 'd5a00000-0000-0000-0000-000000000002');
-- a share to acme covers a run in acme/sales, but acme/sales cannot carry finance data
\set VERBOSITY verbose
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-000000000005', 'context_read', 'd5a00000-0000-0000-0000-000000000001');
\set VERBOSITY default
-- not at another company either
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-000000000006', 'context_read', 'd5a00000-0000-0000-0000-000000000001');
-- the refused reads brought nothing into their runs
SELECT id, labels FROM pg_labels.runs WHERE id IN ('d5000000-0000-0000-0000-000000000005', 'd5000000-0000-0000-0000-000000000006') ORDER BY id;

-- crossings: the writer cannot record one (no EXECUTE) ...
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'support needs the ledger');
-- ... nor can anybody write the table directly, whatever they were granted
RESET ROLE;
SET ROLE regress_share_mallory;
INSERT INTO pg_labels.crossings (from_scope, to_scope, reason) VALUES ('acme/finance', 'acme/platform', 'sneaky');
RESET ROLE;
-- a person the DBA allowed records it: who, why, until when
SET ROLE regress_share_bob;
SELECT current_setting('is_superuser') AS superuser;
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'support needs the Q3 ledger',
                                    now() + interval '1 day') AS crossing \gset
SELECT from_scope, to_scope, authorized_by, reason, expires_at > now() AS expires_later, revoked_at
FROM pg_labels.crossings WHERE id = :crossing;
-- a crossing needs a reason, a future expiry (or none), and something to authorize
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', '  ');
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'late', now() - interval '1 minute');
SELECT pg_labels.authorize_crossing('acme/platform', 'acme', 'pointless');
SELECT pg_labels.authorize_crossing('acme/finance', NULL, 'no target');
RESET ROLE;

-- with the crossing, the share to acme/platform goes through and records the crossing used
SET ROLE regress_share_platform;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme/platform')
RETURNING to_scope, crossing_id = :crossing AS used_the_crossing;
-- the labels are not rewritten: the artifact still carries its finance label
SELECT labels FROM pg_labels.artifacts WHERE id = 'd5a00000-0000-0000-0000-000000000001';
-- a support run reads it under the crossing; the trail shows the share and the crossing
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-00000000000a', 'context_read', 'd5a00000-0000-0000-0000-000000000001')
RETURNING labels, crossing_ids = ARRAY[:crossing]::bigint[] AS under_the_crossing;
-- so does a run in a sub-area (inside the crossing's to_scope); a sales run still cannot
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-00000000000c', 'context_read', 'd5a00000-0000-0000-0000-000000000001')
RETURNING labels;
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-000000000005', 'context_read', 'd5a00000-0000-0000-0000-000000000001');
-- the run that read under the crossing can still act: its tool calls pass the barrier for
-- the covered labels, and say so
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('d5000000-0000-0000-0000-00000000000a', 'tool_called', 'sh.search')
RETURNING decision, rule, reason, crossing_ids = ARRAY[:crossing]::bigint[] AS under_the_crossing;
SELECT decision, rule FROM pg_labels.gate('d5000000-0000-0000-0000-00000000000a', 'sh.search');
-- a crossing lifts the barrier only: other rules still judge (the search result was trusted,
-- so add a Slack input first)
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('d5000000-0000-0000-0000-00000000000b', 'input', '{origin:slack}');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-00000000000b', 'context_read', 'd5a00000-0000-0000-0000-000000000001');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('d5000000-0000-0000-0000-00000000000b', 'tool_called', 'sh.refund');
-- the labels travel on: what the support run makes now carries finance data, and sharing it
-- onward to sales is refused
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d5a00000-0000-0000-0000-000000000003', 'd5000000-0000-0000-0000-00000000000a', pg_labels.digest('answer draft'))
RETURNING labels;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000003', 'acme/sales');
RESET ROLE;

-- revocation: from now on the crossing authorizes nothing
SET ROLE regress_share_platform;
SELECT pg_labels.revoke_crossing(:crossing, 'review done');
RESET ROLE;
SET ROLE regress_share_bob;
SELECT pg_labels.revoke_crossing(:crossing, 'review done') IS NOT NULL AS revoked;
SELECT revoked_by, revoke_reason, revoked_at IS NOT NULL AS revoked FROM pg_labels.crossings WHERE id = :crossing;
\set VERBOSITY terse
SELECT pg_labels.revoke_crossing(:crossing);
\set VERBOSITY default
SELECT pg_labels.revoke_crossing(-1);
RESET ROLE;
SET ROLE regress_share_platform;
-- the run's later calls are judged without it
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('d5000000-0000-0000-0000-00000000000a', 'tool_called', 'sh.search');
SELECT decision, rule FROM pg_labels.gate('d5000000-0000-0000-0000-00000000000a', 'sh.search');
-- a run covered by the share made under the crossing can no longer read
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-00000000000b', 'context_read', 'd5a00000-0000-0000-0000-000000000001');
-- a new share cannot use it, named or not
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme/platform/infra');
INSERT INTO pg_labels.shares (artifact_id, to_scope, crossing_id) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme/platform/infra', :crossing);
RESET ROLE;

-- expiry: a crossing that ends by itself
SET ROLE regress_share_bob;
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'a short look',
                                    clock_timestamp() + interval '2 seconds') AS short \gset
RESET ROLE;
SET ROLE regress_share_platform;
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('d5000000-0000-0000-0000-00000000000a', 'tool_called', 'sh.search')
RETURNING decision, crossing_ids = ARRAY[:short]::bigint[] AS under_the_short_crossing;
SELECT pg_sleep(2.1);
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES
  ('d5000000-0000-0000-0000-00000000000a', 'tool_called', 'sh.search');
INSERT INTO pg_labels.shares (artifact_id, to_scope, crossing_id) VALUES
  ('d5a00000-0000-0000-0000-000000000001', 'acme/platform/infra', :short);
RESET ROLE;

-- one share uses one crossing: an artifact with finance and HR data needs a crossing that
-- covers both (here from acme), while a run may read under several
INSERT INTO pg_labels.runs (id, scope) VALUES ('d5000000-0000-0000-0000-0000000000e1', 'acme/hr');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES
  ('d5000000-0000-0000-0000-0000000000e1', 'input', '{area:acme/finance}');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d5a00000-0000-0000-0000-000000000004', 'd5000000-0000-0000-0000-0000000000e1', pg_labels.digest('payroll'))
RETURNING labels;
SET ROLE regress_share_bob;
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/legal', 'audit') AS fin_legal \gset
SELECT pg_labels.authorize_crossing('acme/hr', 'acme/legal', 'audit') AS hr_legal \gset
RESET ROLE;
SET ROLE regress_share_platform;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000004', 'acme/legal');
RESET ROLE;
SET ROLE regress_share_bob;
SELECT pg_labels.authorize_crossing('acme', 'acme/legal', 'audit of all areas') AS acme_legal \gset
RESET ROLE;
SET ROLE regress_share_platform;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d5a00000-0000-0000-0000-000000000004', 'acme/legal')
RETURNING crossing_id = :acme_legal AS used_the_company_crossing;
INSERT INTO pg_labels.runs (id, scope) VALUES ('d5000000-0000-0000-0000-0000000000e2', 'acme/legal');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES
  ('d5000000-0000-0000-0000-0000000000e2', 'context_read', 'd5a00000-0000-0000-0000-000000000004')
RETURNING labels, crossing_ids = ARRAY[:fin_legal, :hr_legal]::bigint[] AS each_label_its_crossing;
RESET ROLE;

-- every write path is judged: COPY, MERGE, INSERT ... ON CONFLICT; a refused row writes nothing
-- (COPY FROM into a table with row-level security needs BYPASSRLS, which skips no trigger)
ALTER ROLE regress_share_platform BYPASSRLS;
SET ROLE regress_share_platform;
SELECT count(*) AS shares_before FROM pg_labels.shares \gset
COPY pg_labels.shares (artifact_id, to_scope) FROM STDIN;
d5a00000-0000-0000-0000-000000000001	acme
d5a00000-0000-0000-0000-000000000001	acme/sales
\.
MERGE INTO pg_labels.shares s
USING (VALUES ('d5a00000-0000-0000-0000-000000000001'::uuid, 'globex'::scope)) v (a, t) ON false
WHEN NOT MATCHED THEN INSERT (artifact_id, to_scope) VALUES (v.a, v.t);
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('d5a00000-0000-0000-0000-000000000001', 'acme/hr')
ON CONFLICT DO NOTHING;
SELECT count(*) - :shares_before AS shares_written FROM pg_labels.shares;
-- an artifact written by COPY still takes its run's labels
COPY pg_labels.artifacts (id, origin_run, digest, labels) FROM STDIN;
d5a00000-0000-0000-0000-000000000005	d5000000-0000-0000-0000-00000000000f	2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824	{}
\.
SELECT labels FROM pg_labels.artifacts WHERE id = 'd5a00000-0000-0000-0000-000000000005';
RESET ROLE;
ALTER ROLE regress_share_platform NOBYPASSRLS;

-- artifacts, shares and crossings are sealed, for their owner too
UPDATE pg_labels.artifacts SET labels = '{}' WHERE id = 'd5a00000-0000-0000-0000-000000000001';
DELETE FROM pg_labels.shares;
TRUNCATE pg_labels.artifacts CASCADE;
TRUNCATE pg_labels.shares;
UPDATE pg_labels.crossings SET revoked_at = NULL WHERE id = :crossing;
UPDATE pg_labels.crossings SET expires_at = 'infinity' WHERE id = :short;
DELETE FROM pg_labels.crossings WHERE id = :crossing;
TRUNCATE pg_labels.crossings CASCADE;
-- a role that can see a crossing (its scope reaches it) and holds UPDATE cannot change it either
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_share_mallory', 'acme/platform');
SET ROLE regress_share_mallory;
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT count(*) AS crossings_mallory_sees FROM pg_labels.crossings WHERE id = :crossing;
UPDATE pg_labels.crossings SET revoked_at = NULL WHERE id = :crossing;
ROLLBACK;
RESET ROLE;
DELETE FROM pg_labels.grants WHERE role = 'regress_share_mallory';

-- the trail shows which crossing every share and read used
SELECT a.description, s.to_scope, s.to_run IS NOT NULL AS to_one_run, c.from_scope, c.reason
FROM pg_labels.shares s JOIN pg_labels.artifacts a ON a.id = s.artifact_id
LEFT JOIN pg_labels.crossings c ON c.id = s.crossing_id
WHERE a.id::text LIKE 'd5a%' ORDER BY s.id;
SELECT r.scope, st.kind, st.tool, st.decision, st.rule, st.crossing_ids IS NOT NULL AS used_a_crossing
FROM pg_labels.steps st JOIN pg_labels.runs r ON r.id = st.run_id
WHERE st.run_id = 'd5000000-0000-0000-0000-00000000000a' ORDER BY st.id;

-- retention takes a run's artifacts and their shares with it; crossings stay. (It keeps the
-- present: everything is made three months older first, around the triggers, as only a
-- superuser can.)
SET session_replication_role = replica;
UPDATE pg_labels.runs SET opened_at = opened_at - interval '3 months';
UPDATE pg_labels.steps SET created_at = created_at - interval '3 months',
                           slot = pg_labels.trail_slot(created_at - interval '3 months');
UPDATE pg_labels.artifacts SET created_at = created_at - interval '3 months';
UPDATE pg_labels.shares SET created_at = created_at - interval '3 months';
RESET session_replication_role;
SELECT pg_labels.purge(now() - interval '2 months') > 0 AS purged;
SELECT (SELECT count(*) FROM pg_labels.artifacts) AS artifacts, (SELECT count(*) FROM pg_labels.shares) AS shares,
       (SELECT count(*) FROM pg_labels.crossings) > 0 AS crossings_kept;

DROP OWNED BY regress_share_platform, regress_share_bob, regress_share_mallory;
DROP ROLE regress_share_platform, regress_share_bob, regress_share_mallory;
