-- The attacks an attacker's pass found on 0.2.0, each tried again as the README's ordinary
-- roles would (a platform writer, an approver, a crossing authorizer, an analyst, the retention
-- job), and each refused or answered as if it had not been tried:
--   1. the retention job's session settings cannot write SQL that runs as the tables' owner;
--   2. no function that writes as the owner takes its caller for a restoring superuser
--      (row_security off), whatever the caller set;
--   3. one approval lets one call through, also within one statement (INSERT ... SELECT,
--      multi-row VALUES, COPY);
--   4. retention never removes the present;
--   5. a carried Citus scope is nobody's inside another role's SECURITY DEFINER function;
--   6. errors under the owner carry no rows the caller cannot read (here after 2, as the
--      roles it needs are there);
--   7. an analyst's probes of hidden steps move no counter of a lookup (the policies read no
--      other row), and no error depends on which hidden rows match;
--   8. a writer cannot label data down into every scope's view of a protected table.
\pset null '(null)'
CREATE ROLE regress_att_platform LOGIN;
CREATE ROLE regress_att_alice LOGIN;
CREATE ROLE regress_att_bob LOGIN;
CREATE ROLE regress_att_analyst LOGIN;
CREATE ROLE regress_att_retention LOGIN;
CREATE ROLE regress_att_globex LOGIN;
-- COPY into a table under row-level security needs BYPASSRLS: a bulk loader of the platform's
CREATE ROLE regress_att_loader LOGIN BYPASSRLS;
GRANT USAGE ON SCHEMA pg_labels TO regress_att_platform, regress_att_alice, regress_att_bob, regress_att_analyst,
  regress_att_retention, regress_att_globex;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                        pg_labels.agent_versions TO regress_att_platform;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_att_platform', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.approval_points TO regress_att_platform;
GRANT USAGE ON SCHEMA pg_labels TO regress_att_loader;
GRANT SELECT, INSERT ON pg_labels.steps TO regress_att_loader;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_att_loader', '*') ON CONFLICT DO NOTHING;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_att_alice;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_att_alice', '*') ON CONFLICT DO NOTHING;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
                          pg_labels.revoke_crossing(bigint, text) TO regress_att_bob;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_att_bob', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.crossings TO regress_att_bob;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                pg_labels.agent_versions, pg_labels.listeners, pg_labels.crossings, pg_labels.tools,
                pg_labels.refused_writes, pg_labels.trail, pg_labels.refusals, pg_labels.approval_points
  TO regress_att_analyst, regress_att_globex;
GRANT EXECUTE ON FUNCTION pg_labels.purge(timestamptz) TO regress_att_retention;
INSERT INTO pg_labels.grants (role, scope) VALUES
  ('regress_att_analyst', 'acme/platform'), ('regress_att_globex', 'globex'), ('regress_att_platform', 'acme');
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('att.read', 'read', false), ('att.update', 'reversible_write', false), ('att.refund', 'financial', false);

-- another company's run, with a refusal whose reason names its data; and an acme run of three
-- months ago, whose month retention may empty (written around the triggers, as only a superuser can)
INSERT INTO pg_labels.runs (id, scope) VALUES ('a7000000-0000-0000-0000-00000000000b', 'globex/finance');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('a7000000-0000-0000-0000-00000000000b', 'input', '{origin:webhook}');
SELECT decision, rule FROM pg_labels.gate('a7000000-0000-0000-0000-00000000000b', 'att.refund', '{"order": 77}');
SELECT pg_labels.request_approval('a7000000-0000-0000-0000-00000000000b', 'att.update', '{"secret": "globex payroll"}') AS globex_request \gset
SET session_replication_role = replica;
INSERT INTO pg_labels.runs (id, scope, labels, opened_at)
VALUES ('a7000000-0000-0000-0000-0000000000a0', 'acme/platform', '{area:acme/platform}', now() - interval '3 months');
INSERT INTO pg_labels.steps (id, run_id, kind, labels, actor, created_at, slot)
SELECT nextval('pg_labels.steps_id_seq'), 'a7000000-0000-0000-0000-0000000000a0', 'input', '{}', current_user,
       now() - interval '3 months' + g * interval '1 minute', pg_labels.trail_slot(now() - interval '3 months' + g * interval '1 minute')
  FROM generate_series(1, 3) g;
SELECT pg_labels.start_chains() AS chained;
RESET session_replication_role;

-- 1. The retention job sets its DateStyle and TimeZone so that a time printed in its session
--    closes a quoted literal and casts to a domain of its own whose check runs a function of
--    its own (0.2.0 pasted the cutoff's text into the statements it ran as the owner). Now
--    the cutoff is a parameter: the function never runs, as the owner or at all.
\c - regress_att_retention
\pset null '(null)'
CREATE FUNCTION pg_temp.f(text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'pg_temp.f ran as %', current_user; RETURN true; END $$;
CREATE DOMAIN pg_temp.d AS text CHECK (pg_temp.f(VALUE));
SET DateStyle = 'SQL, MDY';
SET TimeZone = '<''::D)-->3';
SELECT pg_labels.purge(now() - interval '2 months') AS purged_runs;
SET DateStyle = 'Postgres, DMY';
SET TimeZone = '<''||pg_temp.f(''x'')||''>+5';
SET IntervalStyle = 'sql_standard';
SELECT pg_labels.purge(now() - interval '2 months') AS purged_again;
RESET ALL;
\c - postgres
\pset null '(null)'
SELECT rolsuper AS retention_job_is_superuser FROM pg_roles WHERE rolname = 'regress_att_retention';
-- what went: the old run, whole (opened three months ago, nothing of it since)
SELECT count(*) AS old_run_left FROM pg_labels.runs WHERE id = 'a7000000-0000-0000-0000-0000000000a0';

-- 2. With row_security off, a caller of the functions that write as the owner is not taken
--    for a restoring superuser: every check applies
\c - regress_att_bob
\pset null '(null)'
SET row_security = off;
SELECT pg_labels.authorize_crossing('*', '*', 'everything');
SELECT pg_labels.authorize_crossing('*', 'acme/platform', 'from the root');
SELECT pg_labels.authorize_crossing('globex', 'acme/platform', '   ');
SELECT pg_labels.authorize_crossing('globex', 'acme/platform', 'backdated', now() - interval '1 day');
SELECT pg_labels.authorize_crossing('acme/platform/infra', 'acme/platform', 'reaches it already');
SELECT pg_labels.revoke_crossing(123456);
SET session_replication_role = replica;
RESET row_security;
SELECT count(*) AS crossings FROM pg_labels.crossings;
-- a writer with row_security off is refused outright (its rows are under row-level security)
\c - regress_att_platform
\pset null '(null)'
SET row_security = off;
INSERT INTO pg_labels.runs (id, scope) VALUES ('a7000000-0000-0000-0000-000000000001', 'acme/platform');
SELECT decision, rule FROM pg_labels.gate('a7000000-0000-0000-0000-00000000000b', 'att.read');
RESET row_security;
INSERT INTO pg_labels.runs (id, scope) VALUES ('a7000000-0000-0000-0000-000000000001', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('a7000000-0000-0000-0000-000000000001', 'input', '{origin:slack}');
-- a run carrying another company's data is refused its calls, as always
INSERT INTO pg_labels.runs (id, scope) VALUES ('a7000000-0000-0000-0000-000000000002', 'initech/hr');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('a7000000-0000-0000-0000-000000000002', 'input', '{company:globex,area:acme/finance}');
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('a7000000-0000-0000-0000-000000000002', 'tool_called', 'att.read');
SELECT decision, rule FROM pg_labels.gate('a7000000-0000-0000-0000-000000000002', 'att.read');
-- the writer still cannot choose what the database writes
INSERT INTO pg_labels.steps (run_id, kind, actor) VALUES ('a7000000-0000-0000-0000-000000000001', 'planned', 'regress_att_alice');
INSERT INTO pg_labels.steps (run_id, kind, tool, decision, request_id) VALUES
  ('a7000000-0000-0000-0000-000000000001', 'approval_decided', 'att.update', 'granted', 1);
SELECT pg_labels.request_approval('a7000000-0000-0000-0000-000000000001', 'att.update', '{"ticket": 1}') AS request \gset
\c - regress_att_alice
\pset null '(null)'
SET row_security = off;
SELECT pg_labels.decide_approval(:request, true, 'looked at it') IS NOT NULL AS decided;
SELECT pg_labels.decide_approval(:request, true, 'again');
-- another company's request, decided twice: the refusal names the request, none of its content
\set VERBOSITY verbose
SELECT pg_labels.decide_approval(:globex_request, false, 'no') IS NOT NULL AS decided;
SELECT pg_labels.decide_approval(:globex_request, false, 'no');
SELECT pg_labels.decide_approval(:globex_request + 1000, false, 'no such request');
\set VERBOSITY default

-- 6. An error PostgreSQL raises inside a function that writes as the owner (here a DBA's own
--    constraint on crossings) keeps its SQLSTATE and constraint, not the row it failed on
\c - postgres
ALTER TABLE pg_labels.crossings ADD CONSTRAINT regress_reason_short CHECK (length(reason) < 20);
\c - regress_att_bob
\set VERBOSITY verbose
SELECT pg_labels.authorize_crossing('globex', 'acme/platform', 'a reason longer than twenty characters');
\set VERBOSITY default
\c - postgres
ALTER TABLE pg_labels.crossings DROP CONSTRAINT regress_reason_short;

-- 3. One approval, one call: the granted request lets exactly one tool_called step through,
--    whether the calls come one per statement or many in one (each refused statement rolls
--    back whole, its approval unused)
\c - regress_att_platform
\pset null '(null)'
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
SELECT 'a7000000-0000-0000-0000-000000000001', 'tool_called', 'att.update', '{"ticket": 1}'
  FROM generate_series(1, 100);
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a7000000-0000-0000-0000-000000000001', 'tool_called', 'att.update', '{"ticket": 1}'),
  ('a7000000-0000-0000-0000-000000000001', 'tool_called', 'att.update', '{"ticket": 1}');
\c - regress_att_loader
COPY pg_labels.steps (run_id, kind, tool, args) FROM stdin;
a7000000-0000-0000-0000-000000000001	tool_called	att.update	{"ticket": 1}
a7000000-0000-0000-0000-000000000001	tool_called	att.update	{"ticket": 1}
\.
\c - regress_att_platform
\pset null '(null)'
-- an upsert takes the same path
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
SELECT 'a7000000-0000-0000-0000-000000000001', 'tool_called', 'att.update', '{"ticket": 1}'
  FROM generate_series(1, 2)
ON CONFLICT DO NOTHING;
-- one call alone uses it; the next is refused
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a7000000-0000-0000-0000-000000000001', 'tool_called', 'att.update', '{"ticket": 1}')
RETURNING decision, rule, request_id = :request AS used_the_request;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('a7000000-0000-0000-0000-000000000001', 'tool_called', 'att.update', '{"ticket": 1}');
SELECT count(*) AS calls_under_the_approval FROM pg_labels.steps WHERE request_id = :request AND kind = 'tool_called';
-- the same in one COPY, from the start: a second approval, two calls, the second refused
SELECT pg_labels.request_approval('a7000000-0000-0000-0000-000000000001', 'att.update', '{"ticket": 2}') AS request2 \gset
\c - regress_att_alice
SELECT pg_labels.decide_approval(:request2, true) IS NOT NULL AS decided;
\c - regress_att_loader
COPY pg_labels.steps (run_id, kind, tool, args) FROM stdin;
a7000000-0000-0000-0000-000000000001	tool_called	att.update	{"ticket": 2}
a7000000-0000-0000-0000-000000000001	tool_called	att.update	{"ticket": 2}
\.
COPY pg_labels.steps (run_id, kind, tool, args) FROM stdin;
a7000000-0000-0000-0000-000000000001	tool_called	att.update	{"ticket": 2}
\.
\c - regress_att_platform
\pset null '(null)'
SELECT count(*) AS calls_under_the_second FROM pg_labels.steps WHERE request_id = :request2 AND kind = 'tool_called';

-- 3b. Nor across retention: a transaction that began before its run's last step, in an
--     earlier month, would put a later decision (an approval's use, say) into an earlier month
--     of the ring, which retention empties first while the request and its decision stay.
--     Refused (40001), to be retried in a new transaction. (The later step is made by hand
--     here, a month ahead, as only a superuser can; the rest of the message names the dates.)
\c - postgres
INSERT INTO pg_labels.runs (id, scope) VALUES ('a7000000-0000-0000-0000-000000000003', 'acme/platform');
SET session_replication_role = replica;
INSERT INTO pg_labels.steps (id, run_id, kind, labels, actor, created_at, slot, prev_hash, hash)
SELECT nextval('pg_labels.steps_id_seq'), id, 'input', '{}', current_user,
       now() + interval '1 month', pg_labels.trail_slot(now() + interval '1 month'), chain_head, chain_head
  FROM pg_labels.runs WHERE id = 'a7000000-0000-0000-0000-000000000003';
UPDATE pg_labels.runs SET chain_slot = pg_labels.trail_slot(now() + interval '1 month')
 WHERE id = 'a7000000-0000-0000-0000-000000000003';
RESET session_replication_role;
\c - regress_att_platform
\set VERBOSITY terse
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('a7000000-0000-0000-0000-000000000003', 'planned');
\set VERBOSITY default

-- 4. Retention never removes the present: not for an infinite cutoff, nor one in this month
--    or the last, nor none (the messages name today's dates: their first words here)
\c - regress_att_retention
\pset null '(null)'
DO $$
DECLARE
  cutoff timestamptz;
BEGIN
  FOREACH cutoff IN ARRAY ARRAY['infinity', '-infinity', NULL, now(), now() + interval '10 years',
                                 now() - interval '20 days']
  LOOP
    BEGIN
      PERFORM pg_labels.purge(cutoff);
      RAISE NOTICE 'purged';
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE '%: %', SQLSTATE, split_part(SQLERRM, ':', 1);
    END;
  END LOOP;
END $$;
\c - postgres
SELECT count(*) AS current_runs_kept FROM pg_labels.runs WHERE id::text LIKE 'a7000000%' AND opened_at > now() - interval '1 day';

-- 5. A carried Citus scope is nobody's inside another role's SECURITY DEFINER function (and
--    without Citus loaded, nobody's anywhere): the definer's grant is not lent to its caller
CREATE FUNCTION public.regress_att_globex_runs() RETURNS TABLE (scope_in_force scope, runs bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
RETURN (pg_labels.current_scope(), (SELECT count(*) FROM pg_labels.runs));
ALTER FUNCTION public.regress_att_globex_runs() OWNER TO regress_att_globex;
GRANT EXECUTE ON FUNCTION public.regress_att_globex_runs() TO regress_att_analyst;
\c - regress_att_analyst
\pset null '(null)'
SET application_name = 'citus_internal gpid=1';
SET citus.propagate_set_commands = 'local';
SET pg_labels.carried_scope = 'globex';
SELECT * FROM public.regress_att_globex_runs();
SELECT pg_labels.current_scope() AS carried_outside;
RESET ALL;

-- 7. An analyst probes a hidden step of another company: a condition on its text that matches
--    and one that does not. The steps' policy reads no other row, so neither moves a counter
--    of the runs table (0.2.0 read the step's run for matching rows only: about 800 such
--    probes recovered the reason below), and both answer 0
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
CREATE TEMP TABLE probe AS
SELECT seq_scan, coalesce(idx_scan, 0) AS idx_scan, coalesce(idx_tup_fetch, 0) AS idx_tup_fetch
  FROM pg_stat_xact_all_tables WHERE relid = 'pg_labels.runs'::regclass;
SELECT count(*) AS matching FROM pg_labels.steps
 WHERE kind = 'gate_decided' AND reason LIKE 'financial tool att.refund on data from {origin:webhook}%';
SELECT count(*) AS not_matching FROM pg_labels.steps WHERE kind = 'gate_decided' AND reason LIKE 'nothing like it%';
SELECT count(*) AS requests FROM pg_labels.steps WHERE args ->> 'secret' = 'globex payroll';
SELECT s.seq_scan = p.seq_scan AND coalesce(s.idx_scan, 0) = p.idx_scan
       AND coalesce(s.idx_tup_fetch, 0) = p.idx_tup_fetch AS runs_counters_unmoved
  FROM pg_stat_xact_all_tables s, probe p WHERE s.relid = 'pg_labels.runs'::regclass;
-- what its scope reaches it reads: its own area's steps, with or without the runs' privilege
SELECT count(*) > 0 AS reads_its_own FROM pg_labels.steps WHERE run_id = 'a7000000-0000-0000-0000-000000000001';
-- the README's grants suffice for every view named there
SELECT count(*) >= 0 AS approval_points_readable FROM pg_labels.approval_points;
ROLLBACK;

-- 8. No write-down: an acme writer cannot write acme data labelled {} (or with only tags and
--    origins) into a protected table, where every scope would read it, nor labelled with a
--    sub-area, where that sub-area's analysts would: a row it writes can be read exactly in
--    its scope
\c - postgres
CREATE SCHEMA regress_att;
CREATE TABLE regress_att.notes (body text, labels labelset NOT NULL);
SELECT pg_labels.protect('regress_att.notes');
GRANT USAGE ON SCHEMA regress_att TO regress_att_platform, regress_att_globex;
GRANT SELECT, INSERT, UPDATE ON regress_att.notes TO regress_att_platform, regress_att_globex;
\c - regress_att_platform
\pset null '(null)'
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
INSERT INTO regress_att.notes VALUES ('acme secret', '{}');
ROLLBACK;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
INSERT INTO regress_att.notes VALUES ('acme secret', '{tag:pii,origin:slack}');
ROLLBACK;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
INSERT INTO regress_att.notes VALUES ('acme secret', '{company:globex}');
ROLLBACK;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
INSERT INTO regress_att.notes VALUES ('acme note', '{company:acme}'), ('both', '{area:acme/platform,area:acme/finance,tag:pii}');
COMMIT;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
INSERT INTO regress_att.notes VALUES ('acme secret', '{area:acme/platform}');
ROLLBACK;
-- nor relabel a row down afterwards
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
UPDATE regress_att.notes SET labels = '{}' WHERE body = 'acme note';
ROLLBACK;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
UPDATE regress_att.notes SET labels = '{area:acme/platform}' WHERE body = 'acme note';
ROLLBACK;
BEGIN;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
SELECT count(*) AS notes_acme_reads FROM regress_att.notes;
ROLLBACK;
\c - regress_att_globex
\pset null '(null)'
BEGIN;
SELECT pg_labels.enter_scope('globex') IS NOT NULL AS entered;
SELECT count(*) AS acme_notes_globex_reads FROM regress_att.notes;
ROLLBACK;

\c - postgres
DROP SCHEMA regress_att CASCADE;
DROP FUNCTION public.regress_att_globex_runs();
DELETE FROM pg_labels.grants WHERE role::text LIKE 'regress_att%';
DROP OWNED BY regress_att_platform, regress_att_alice, regress_att_bob, regress_att_analyst, regress_att_retention,
  regress_att_globex, regress_att_loader;
DROP ROLE regress_att_platform, regress_att_alice, regress_att_bob, regress_att_analyst, regress_att_retention,
  regress_att_globex, regress_att_loader;
