-- Every credential bound to its company (0.3.1): writers, approvers and crossing authorizers of
-- two companies, each granted its own scope in pg_labels.grants, as the README's roles are.
-- Each act is refused across companies and allowed within, and what another company holds is
-- answered exactly as what does not exist (no DETAIL, constraint name or SQLSTATE tells them
-- apart). A grant to a group role is a grant to its members; a role with no grant acts nowhere.
\pset null '(null)'
CREATE ROLE regress_sr_acme LOGIN;          -- the writer of acme/platform
CREATE ROLE regress_sr_globex LOGIN;        -- the writer of globex
CREATE ROLE regress_sr_acme_ok LOGIN;       -- an approver of acme
CREATE ROLE regress_sr_cross LOGIN;         -- a crossing authorizer of acme
CREATE ROLE regress_sr_writers NOLOGIN;     -- a group role, granted acme/finance
CREATE ROLE regress_sr_member LOGIN IN ROLE regress_sr_writers;
CREATE ROLE regress_sr_nobody LOGIN;        -- a writer with no grant
GRANT USAGE ON SCHEMA pg_labels TO regress_sr_acme, regress_sr_globex, regress_sr_acme_ok,
  regress_sr_cross, regress_sr_member, regress_sr_nobody;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
  pg_labels.agent_versions, pg_labels.listeners
  TO regress_sr_acme, regress_sr_globex, regress_sr_writers, regress_sr_nobody;
GRANT SELECT ON pg_labels.tools TO regress_sr_acme, regress_sr_globex, regress_sr_writers, regress_sr_nobody;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_sr_acme_ok;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
  pg_labels.revoke_crossing(bigint, text) TO regress_sr_cross;
GRANT SELECT ON pg_labels.crossings TO regress_sr_cross;
INSERT INTO pg_labels.grants (role, scope) VALUES
  ('regress_sr_acme', 'acme/platform'), ('regress_sr_globex', 'globex'),
  ('regress_sr_acme_ok', 'acme'), ('regress_sr_cross', 'acme'), ('regress_sr_writers', 'acme/finance');
INSERT INTO pg_labels.tools (name, effect) VALUES ('sr.read', 'read'), ('sr.update', 'reversible_write');
-- what a statement answers, as the role running it: its SQLSTATE, constraint name, message and
-- DETAIL, with the ids it names written X (so that another company's and a missing one compare)
CREATE FUNCTION public.regress_sr_answer(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text; con text; msg text; det text;
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, con = CONSTRAINT_NAME, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
    RETURN regexp_replace(state || ' ' || coalesce(con, '-') || ' ' || msg || ' / ' || coalesce(det, '-'),
                          '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\m[0-9]+\M', 'X', 'g');
END $$;
GRANT EXECUTE ON FUNCTION public.regress_sr_answer(text) TO PUBLIC;

-- globex's run, artifact, request and crossing, written by globex's own writer
\c - regress_sr_globex
\pset null '(null)'
INSERT INTO pg_labels.runs (id, scope) VALUES ('5e000000-0000-0000-0000-0000000000b1', 'globex/support');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('5e000000-0000-0000-0000-0000000000b1', 'input', '{origin:slack}');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES ('5e000000-0000-0000-0000-0000000000f1', '5e000000-0000-0000-0000-0000000000b1', repeat('b', 64));
SELECT pg_labels.request_approval('5e000000-0000-0000-0000-0000000000b1', 'sr.update', '{"x": 1}') AS globex_request \gset
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps)
VALUES ('gx-bot', 1, 'globex', '{"steps": [{"id": "r", "tool": "sr.read", "inputs": ["source:agent"]}]}');
-- globex's writer reads globex, and nothing of acme's (below)
SELECT count(*) AS globex_runs_globex_reads FROM pg_labels.runs;

-- 1. Writers: acme's opens and writes where its grant reaches, nowhere else
\c - regress_sr_acme
\pset null '(null)'
INSERT INTO pg_labels.runs (id, scope) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'input', '{origin:slack}');
SELECT pg_labels.request_approval('5e000000-0000-0000-0000-0000000000a1', 'sr.update', '{"x": 2}') AS acme_request \gset
INSERT INTO pg_labels.runs (scope) VALUES ('globex/support');
INSERT INTO pg_labels.runs (scope) VALUES ('acme/finance');
INSERT INTO pg_labels.runs (scope) VALUES ('acme');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps)
VALUES ('sr-bot', 1, 'globex', '{"steps": [{"id": "r", "tool": "sr.read", "inputs": ["source:agent"]}]}');
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('sr-bot', 'globex', 'x');
INSERT INTO pg_labels.agent_versions (agent, version, scope, steps)
VALUES ('sr-bot', 1, 'acme/platform', '{"steps": [{"id": "r", "tool": "sr.read", "inputs": ["source:agent"]}]}');
INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('sr-bot', 'acme/platform', 'x') RETURNING scope;
-- globex's run, artifact and listener are answered as ones that do not exist
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind) VALUES ('5e000000-0000-0000-0000-0000000000b1', 'planned')$q$)
     = public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind) VALUES ('5e000000-0000-0000-0000-0000000000c9', 'planned')$q$)
       AS step_of_another_company_as_of_none,
       public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind) VALUES ('5e000000-0000-0000-0000-0000000000b1', 'planned')$q$) AS answer;
SELECT public.regress_sr_answer($q$SELECT pg_labels.gate('5e000000-0000-0000-0000-0000000000b1', 'sr.read', '{}')$q$)
     = public.regress_sr_answer($q$SELECT pg_labels.gate('5e000000-0000-0000-0000-0000000000c9', 'sr.read', '{}')$q$)
       AS gate_of_another_company_as_of_none;
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.artifacts (origin_run, digest) VALUES ('5e000000-0000-0000-0000-0000000000b1', repeat('c', 64))$q$)
     = public.regress_sr_answer($q$INSERT INTO pg_labels.artifacts (origin_run, digest) VALUES ('5e000000-0000-0000-0000-0000000000c9', repeat('c', 64))$q$)
       AS artifact_of_another_company_as_of_none;
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('5e000000-0000-0000-0000-0000000000f1', 'acme/platform')$q$)
     = public.regress_sr_answer($q$INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('5e000000-0000-0000-0000-0000000000f9', 'acme/platform')$q$)
       AS share_of_another_company_as_of_none;
-- (globex's artifact, not offered to acme: reading it is answered as reading a missing one,
-- whatever the step claims of it)
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'context_read', '5e000000-0000-0000-0000-0000000000f1')$q$)
     = public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'context_read', '5e000000-0000-0000-0000-0000000000f9')$q$)
       AS read_of_another_company_as_of_none,
       public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind, artifact_id, digest) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'context_read', '5e000000-0000-0000-0000-0000000000f1', repeat('b', 64))$q$)
     = public.regress_sr_answer($q$INSERT INTO pg_labels.steps (run_id, kind, artifact_id, digest) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'context_read', '5e000000-0000-0000-0000-0000000000f9', repeat('b', 64))$q$)
       AS guessed_digest_as_of_none;
-- (an agent is its company's: acme's writer publishes no version of globex's agent)
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('gx-bot', 2, 'acme/platform', '{"steps": [{"id": "r", "tool": "sr.read", "inputs": ["source:agent"]}]}')$q$) AS squat_globex_agent;
-- (a listener's id is the database's: none taken ahead of the identity)
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.listeners (id, agent, scope, event) OVERRIDING SYSTEM VALUE VALUES (1000000, 'sr-bot', 'acme/platform', 'y')$q$) AS listener_id_ahead;
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.runs (scope, listener_id) VALUES ('acme/platform', (SELECT max(id) FROM pg_labels.listeners) + 0)$q$) AS own_listener;
-- reads: its scope's rows, without entering a scope; nothing of globex's
SELECT count(*) FILTER (WHERE scope <@ 'acme') AS acme_runs, count(*) FILTER (WHERE NOT scope <@ 'acme') AS other_runs FROM pg_labels.runs;
SELECT count(*) AS globex_steps_read FROM pg_labels.steps WHERE run_id = '5e000000-0000-0000-0000-0000000000b1';
SELECT count(*) AS globex_artifacts_read FROM pg_labels.artifacts;
SELECT count(*) AS its_steps_read FROM pg_labels.steps WHERE run_id = '5e000000-0000-0000-0000-0000000000a1';
-- the records of the refusals above: one of globex's run filed as one of a missing run (in
-- the writer's own scope, not globex's: its analysts would learn that the run exists)
SELECT pg_labels.refusals_recorded() AS recorded;
\c - postgres
SELECT DISTINCT run_id = '5e000000-0000-0000-0000-0000000000b1' AS of_globex_run, run_scope, carried_scope
  FROM pg_labels.refused_writes
 WHERE run_id IN ('5e000000-0000-0000-0000-0000000000b1', '5e000000-0000-0000-0000-0000000000c9')
 ORDER BY 1;

-- a run of acme/platform that reads acme/finance data under a crossing: its writer still reads
-- it and its steps (read in acme for analysts, in acme/platform for its writers), RETURNING too
\c - regress_sr_member
\pset null '(null)'
INSERT INTO pg_labels.runs (id, scope) VALUES ('5e000000-0000-0000-0000-0000000000d1', 'acme/finance');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES ('5e000000-0000-0000-0000-0000000000f2', '5e000000-0000-0000-0000-0000000000d1', repeat('d', 64));
SELECT count(*) AS member_reads_acme_platform FROM pg_labels.runs WHERE scope = 'acme/platform';
\c - regress_sr_cross
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'finance helps support') > 0 AS crossing;
\c - regress_sr_member
-- (a share follows its artifact's run: acme/finance's writer offers it to acme/platform, as the
-- crossing allows; into globex the barrier refuses it)
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('5e000000-0000-0000-0000-0000000000f2', 'acme/platform')
RETURNING to_scope, crossing_id IS NOT NULL AS under_the_crossing;
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('5e000000-0000-0000-0000-0000000000f2', 'globex')$q$) AS share_into_globex;
\c - regress_sr_acme
\pset null '(null)'
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'context_read', '5e000000-0000-0000-0000-0000000000f2')
RETURNING kind, labels, run_scope IS NULL AS run_scope_null;
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('5e000000-0000-0000-0000-0000000000a1', 'tool_called', 'sr.read')
RETURNING kind, decision;
SELECT scope, labels FROM pg_labels.runs WHERE id = '5e000000-0000-0000-0000-0000000000a1';
SELECT count(*) AS its_steps_after_the_crossing FROM pg_labels.steps WHERE run_id = '5e000000-0000-0000-0000-0000000000a1';
\c - postgres
\pset null '(null)'
SELECT kind, carried_scope, run_scope FROM pg_labels.steps WHERE run_id = '5e000000-0000-0000-0000-0000000000a1' ORDER BY id;

-- 2. Approvers: acme's decides acme's request; globex's request is answered as one that does
--    not exist, decided or not. What it may decide is exactly the queue it lists in the scopes
--    it may enter: a request of an acme run that carries globex's data (under a crossing the
--    installation's DBA recorded) is read in *, so acme's approver neither lists nor decides it.
\c - postgres
GRANT SELECT ON pg_labels.steps TO regress_sr_acme_ok;
SELECT pg_labels.authorize_crossing('globex', 'acme/platform', 'globex lends a hand') > 0 AS globex_into_acme;
\c - regress_sr_globex
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('5e000000-0000-0000-0000-0000000000f1', 'acme/platform')
RETURNING to_scope;
\c - regress_sr_acme
INSERT INTO pg_labels.runs (id, scope) VALUES ('5e000000-0000-0000-0000-0000000000a2', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('5e000000-0000-0000-0000-0000000000a2', 'context_read', '5e000000-0000-0000-0000-0000000000f1')
RETURNING kind, labels;
SELECT pg_labels.request_approval('5e000000-0000-0000-0000-0000000000a2', 'sr.update', '{"x": 3}') AS wide_request \gset
\c - regress_sr_acme_ok
SELECT pg_labels.enter_scope('acme', for_session => true);
SELECT q.id = :acme_request AS the_acme_request, q.run_id
  FROM pg_labels.steps q
 WHERE q.kind = 'approval_requested'
   AND NOT EXISTS (SELECT FROM pg_labels.steps d WHERE d.request_id = q.id AND d.kind = 'approval_decided');
SELECT public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', :wide_request, 'x'))
     = public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', 999999, 'x'))
       AS wide_request_as_of_none;
SELECT pg_labels.decide_approval(:acme_request, true, 'fine') > 0 AS decided_acme;
SELECT public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', :globex_request, 'x'))
     = public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', 999999, 'x'))
       AS globex_request_as_of_none,
       public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', :globex_request, 'x')) AS answer;
\c - postgres
CREATE ROLE regress_sr_globex_ok LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO regress_sr_globex_ok;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_sr_globex_ok;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_sr_globex_ok', 'globex');
\c - regress_sr_globex_ok
SELECT pg_labels.decide_approval(:globex_request, false, 'no') > 0 AS decided_globex;
\c - regress_sr_acme_ok
SELECT public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', :globex_request, 'x'))
     = public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', 999999, 'x'))
       AS decided_globex_request_as_of_none;
SELECT public.regress_sr_answer(format('SELECT pg_labels.decide_approval(%s, true, %L)', :acme_request, 'x')) AS acme_request_again;

-- 3. Crossing authorizers: both scopes within their grants
\c - regress_sr_cross
SELECT public.regress_sr_answer($q$SELECT pg_labels.authorize_crossing('globex', 'acme/platform', 'x')$q$) AS from_globex;
SELECT public.regress_sr_answer($q$SELECT pg_labels.authorize_crossing('acme/platform', 'globex', 'x')$q$) AS into_globex;
\c - postgres
CREATE ROLE regress_sr_globex_cross LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO regress_sr_globex_cross;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
  pg_labels.revoke_crossing(bigint, text) TO regress_sr_globex_cross;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_sr_globex_cross', 'globex');
\c - regress_sr_globex_cross
SELECT pg_labels.authorize_crossing('globex/support', 'globex/sales', 'globex inside') AS globex_crossing \gset
\c - regress_sr_cross
SELECT public.regress_sr_answer(format('SELECT pg_labels.revoke_crossing(%s)', :globex_crossing))
     = public.regress_sr_answer(format('SELECT pg_labels.revoke_crossing(%s)', 999999))
       AS globex_crossing_as_of_none;
SELECT count(*) AS crossings_read FROM pg_labels.crossings;

-- 4. A role with no grant acts nowhere
\c - regress_sr_nobody
SELECT public.regress_sr_answer($q$INSERT INTO pg_labels.runs (scope) VALUES ('acme/platform')$q$) AS opens;
SELECT count(*) AS reads_runs FROM pg_labels.runs;
\c - postgres
