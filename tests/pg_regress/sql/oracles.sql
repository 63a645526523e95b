-- No oracle, no silent loss (0.3.1), tried as an attacker with the README's roles would:
--   1. a session scope's grant is checked again when a transaction's first query starts, never
--      inside a policy: probes of a hidden step's text move the grants' counters alike whether
--      they match or not (0.3.0 read grants only when a hidden row matched);
--   2. no policy reads a labelset stored out of line: probes of a hidden run, artifact and row
--      of a protected table whose labels are toasted move no TOAST counter, match or not;
--      nor do probes of hidden grants move a catalog's counters;
--   3. a refused write's record states facts: a forged run names the real run's scope, and the
--      writer's claim is kept apart (attempted); another company reads nothing of it;
--   4. an oversized refusal is recorded, its texts cut with a marker and their length, and
--      refusals_recorded() says so;
--   5. purge() empties a month only by its rows' times: an old row of high id in the present's
--      partition is deleted alone;
--   6. in a SQL_ASCII database, a tool named with bytes that are not UTF-8 is refused as a
--      check of pg_labels' (22021, text_not_utf8) and recorded with the bytes escaped.
\pset null '(null)'
CREATE ROLE regress_or_platform LOGIN;
CREATE ROLE regress_or_analyst LOGIN;
CREATE ROLE regress_or_globex LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO regress_or_platform, regress_or_analyst, regress_or_globex;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                        pg_labels.agent_versions TO regress_or_platform;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.approval_points TO regress_or_platform;
-- the analysts: the README's grants
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                pg_labels.agent_versions, pg_labels.listeners, pg_labels.crossings, pg_labels.tools,
                pg_labels.refused_writes, pg_labels.trail, pg_labels.refusals, pg_labels.approval_points
  TO regress_or_analyst, regress_or_globex;
GRANT SELECT ON pg_labels.grants TO regress_or_analyst, regress_or_globex;
INSERT INTO pg_labels.grants (role, scope) VALUES
  ('regress_or_analyst', 'acme/platform'), ('regress_or_globex', 'globex'), ('regress_or_platform', '*');
INSERT INTO pg_labels.tools (name, effect) VALUES ('or.read', 'read'), ('or.pay', 'financial');

-- globex's secrets: a run of 600 tags (its labels stored out of line), its planned step, an
-- artifact (its labels too), and acme's own run
INSERT INTO pg_labels.runs (id, agent, scope, labels)
SELECT '0e000000-0000-0000-0000-0000000000b1', 'secret-agent-zeta', 'globex/finance',
       ('{' || string_agg('tag:t' || md5(g::text), ',') || '}')::labelset
  FROM generate_series(1, 600) g;
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('0e000000-0000-0000-0000-0000000000b1', 'planned', 'merger-with-initech-at-42');
INSERT INTO pg_labels.artifacts (id, origin_run, digest, description)
VALUES ('0e000000-0000-0000-0000-0000000000f1', '0e000000-0000-0000-0000-0000000000b1', repeat('a', 64), 'secret merger memo');
INSERT INTO pg_labels.runs (id, agent, scope) VALUES ('0e000000-0000-0000-0000-0000000000a1', 'helper', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('0e000000-0000-0000-0000-0000000000a1', 'input', '{origin:webhook}');
-- a table of the DBA's own, guarded with protect(), holding a row of globex's with big labels
CREATE SCHEMA regress_or;
CREATE TABLE regress_or.notes (id int, body text, labels labelset NOT NULL);
SELECT pg_labels.protect('regress_or.notes');
SELECT attname, attstorage, attgenerated FROM pg_attribute
 WHERE attrelid = 'regress_or.notes'::regclass AND attname = 'pg_labels_scope';
INSERT INTO regress_or.notes (id, body, labels)
SELECT 1, 'secret merger memo',
       ('{company:globex,' || string_agg('tag:n' || md5(g::text), ',') || '}')::labelset
  FROM generate_series(1, 600) g;
GRANT USAGE ON SCHEMA regress_or TO regress_or_analyst;
GRANT SELECT ON regress_or.notes TO regress_or_analyst;
-- the labels are out of line, and the scopes the policies read are not
SELECT (SELECT count(*) > 0 FROM pg_class t WHERE t.oid = c.reltoastrelid) AS has_toast,
       c.relname
  FROM pg_class c WHERE c.oid IN ('pg_labels.runs'::regclass, 'pg_labels.artifacts'::regclass, 'regress_or.notes'::regclass)
 ORDER BY 2;
SELECT pg_column_size(labels) < octet_length(labels::text) / 2 AS runs_labels_toasted,
       pg_column_size(carried_scope) AS carried_scope_bytes, carried_scope
  FROM pg_labels.runs WHERE id = '0e000000-0000-0000-0000-0000000000b1';
SELECT a.attrelid::regclass, a.attname, a.attstorage FROM pg_attribute a
 WHERE a.attrelid IN ('pg_labels.runs'::regclass, 'pg_labels.steps'::regclass, 'pg_labels.artifacts'::regclass,
                      'pg_labels.shares'::regclass, 'pg_labels.refused_writes'::regclass, 'pg_labels.agent_versions'::regclass,
                      'pg_labels.listeners'::regclass, 'pg_labels.crossings'::regclass, 'pg_labels.grants'::regclass)
   AND a.atttypid = 'scope'::regtype AND a.attnum > 0
 ORDER BY 1, 2;
SELECT current_database() AS regress_db \gset

-- What a probe moves: the counters of the grants, of the three TOAST tables and of the role
-- catalogs, as this backend has them (the statistics not yet reported: read before and after
-- the probe, in its transaction)
CREATE FUNCTION public.regress_or_moved(probed regclass DEFAULT NULL) RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0) + coalesce(idx_tup_fetch, 0) + seq_tup_read), 0)::bigint
    FROM pg_stat_xact_all_tables
   WHERE relid IS DISTINCT FROM probed -- (a probe's own scan of the table it probes is PostgreSQL's)
     AND relid IN ('pg_labels.grants'::regclass, 'pg_authid'::regclass, 'pg_auth_members'::regclass,
                   (SELECT reltoastrelid FROM pg_class WHERE oid = 'pg_labels.runs'::regclass),
                   (SELECT reltoastrelid FROM pg_class WHERE oid = 'pg_labels.artifacts'::regclass),
                   (SELECT reltoastrelid FROM pg_class WHERE oid = 'regress_or.notes'::regclass))
$$;
GRANT EXECUTE ON FUNCTION public.regress_or_moved(regclass) TO PUBLIC;

-- 1 and 2. The analyst, with a session scope, probes each hidden row with a condition that
--    matches it and one that does not, each in its own transaction; every probe answers 0 and
--    moves the counters alike
\c - regress_or_analyst
\pset null '(null)'
SELECT pg_labels.enter_scope('acme/platform', for_session => true) IS NOT NULL AS entered;
CREATE TEMP TABLE moved (probe text, matching boolean, found bigint, moved bigint);
-- (a first transaction warms the caches every later one finds warm)
BEGIN;
SELECT count(*) FROM pg_labels.steps WHERE tool = 'x';
SELECT count(*) FROM pg_labels.runs WHERE agent = 'x';
SELECT count(*) FROM pg_labels.artifacts WHERE description = 'x';
SELECT count(*) FROM pg_labels.grants WHERE role = 'x';
SELECT count(*) FROM regress_or.notes WHERE body = 'x';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden step''s tool', true, count(*), public.regress_or_moved() - :before
  FROM pg_labels.steps WHERE id > 0 AND starts_with(tool, 'merger') AND tool >= 'merger-with';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden step''s tool', false, count(*), public.regress_or_moved() - :before
  FROM pg_labels.steps WHERE id > 0 AND starts_with(tool, 'merger') AND tool >= 'merger-without';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden run''s agent', true, count(*), public.regress_or_moved() - :before
  FROM pg_labels.runs WHERE id = '0e000000-0000-0000-0000-0000000000b1' AND agent >= 'secret';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden run''s agent', false, count(*), public.regress_or_moved() - :before
  FROM pg_labels.runs WHERE id = '0e000000-0000-0000-0000-0000000000b1' AND agent >= 'tertiary';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden artifact''s description', true, count(*), public.regress_or_moved() - :before
  FROM pg_labels.artifacts WHERE id = '0e000000-0000-0000-0000-0000000000f1' AND description >= 'secret';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden artifact''s description', false, count(*), public.regress_or_moved() - :before
  FROM pg_labels.artifacts WHERE id = '0e000000-0000-0000-0000-0000000000f1' AND description >= 'tertiary';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden note''s body', true, count(*), public.regress_or_moved() - :before
  FROM regress_or.notes WHERE id = 1 AND body >= 'secret';
COMMIT;
BEGIN;
SELECT public.regress_or_moved() AS before \gset
INSERT INTO moved SELECT 'a hidden note''s body', false, count(*), public.regress_or_moved() - :before
  FROM regress_or.notes WHERE id = 1 AND body >= 'tertiary';
COMMIT;
BEGIN;
SELECT public.regress_or_moved('pg_labels.grants') AS before \gset
INSERT INTO moved SELECT 'another role''s grant', true, count(*), public.regress_or_moved('pg_labels.grants') - :before
  FROM pg_labels.grants WHERE role = 'regress_or_globex' AND scope >= 'glo';
COMMIT;
BEGIN;
SELECT public.regress_or_moved('pg_labels.grants') AS before \gset
INSERT INTO moved SELECT 'another role''s grant', false, count(*), public.regress_or_moved('pg_labels.grants') - :before
  FROM pg_labels.grants WHERE role = 'regress_or_globex' AND scope >= 'hh';
COMMIT;
SELECT probe, bool_and(found = 0) AS nothing_found, count(DISTINCT moved) = 1 AS counters_moved_alike,
       max(moved) AS moved
  FROM moved GROUP BY probe ORDER BY probe;
-- what its scope reaches it reads
SELECT count(*) AS its_own_runs FROM pg_labels.runs WHERE id = '0e000000-0000-0000-0000-0000000000a1';
SELECT pg_labels.leave_scope();
-- a revoked grant ends the session scope at the next transaction's first query
\c - postgres
DELETE FROM pg_labels.grants WHERE role = 'regress_or_analyst';
\c - regress_or_analyst
SELECT pg_labels.enter_scope('acme/platform', for_session => true);
\c - postgres
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_or_analyst', 'acme/platform');
\c - regress_or_analyst
SELECT pg_labels.enter_scope('acme/platform', for_session => true) IS NOT NULL AS entered;
SELECT count(*) AS runs_before_revoke FROM pg_labels.runs WHERE id = '0e000000-0000-0000-0000-0000000000a1';
\setenv REGRESS_DB :regress_db
\! "$PG_LABELS_PSQL" -X -q -U postgres -d "$REGRESS_DB" -c "DELETE FROM pg_labels.grants WHERE role = 'regress_or_analyst'"
SELECT count(*) AS runs_after_revoke FROM pg_labels.runs WHERE id = '0e000000-0000-0000-0000-0000000000a1';
SELECT pg_labels.current_scope() AS scope_after_revoke;
\c - postgres
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_or_analyst', 'acme/platform');

-- 3. A writer forges a run with acme's run's id, in globex's scope, carrying planted evidence:
--    refused, and the record names acme's run with its real scope; the claim is apart, and
--    globex's analysts read nothing of it. A run id that does not exist names no scope.
\c - regress_or_platform
\pset null '(null)'
INSERT INTO pg_labels.runs (id, agent, scope, labels)
VALUES ('0e000000-0000-0000-0000-0000000000a1', 'forged', 'globex/x', '{area:acme/platform,tag:planted-evidence}');
INSERT INTO pg_labels.runs (id, agent, scope, labels)
VALUES ('0e000000-0000-0000-0000-0000000000c9', 'forged', 'globex/x', '{area:acme/platform,tag:planted-evidence}');
SELECT pg_labels.refusals_recorded() AS recorded;
\c - postgres
\pset null '(null)'
SELECT run_id, run_scope, carried_scope, attempted ->> 'scope' AS attempted_scope,
       attempted ->> 'labels' AS attempted_labels, attempted ->> 'agent' AS attempted_agent
  FROM pg_labels.refused_writes WHERE kind = 'run' ORDER BY run_id;
\c - regress_or_globex
SELECT pg_labels.enter_scope('globex') IS NOT NULL AS entered;
SELECT count(*) AS globex_reads_forged_records FROM pg_labels.refused_writes WHERE kind = 'run';
SELECT count(*) AS globex_reads_forged_refusals FROM pg_labels.refusals WHERE kind = 'run';
\c - regress_or_analyst
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT run_id, run_scope, attempted ->> 'scope' AS attempted_scope FROM pg_labels.refusals WHERE kind = 'run';
COMMIT;

-- 4. Oversized refusals: a tool of 70,000 characters, one of 11,000 control characters (JSON
--    writes each in six bytes), and a run whose agent is 100,000 characters: each recorded,
--    its texts cut with a marker and their length
\c - regress_or_platform
DO $$
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('0e000000-0000-0000-0000-0000000000a1', 'tool_called', repeat('x', 70000));
EXCEPTION WHEN SQLSTATE '23L04' THEN RAISE NOTICE 'refused: %', SQLSTATE;
END $$;
DO $$
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('0e000000-0000-0000-0000-0000000000a1', 'tool_called', repeat(chr(1), 11000));
EXCEPTION WHEN SQLSTATE '23L04' THEN RAISE NOTICE 'refused: %', SQLSTATE;
END $$;
DO $$
BEGIN
  INSERT INTO pg_labels.runs (agent, scope, labels) VALUES (repeat('a', 100000), 'acme/platform', '{company:globex}');
EXCEPTION WHEN SQLSTATE '23L01' THEN RAISE NOTICE 'refused: %', SQLSTATE;
END $$;
SELECT pg_labels.refusals_recorded() AS recorded;
\c - postgres
SELECT kind, rule, length(tool) AS tool_length, right(tool, 40) AS tool_ends,
       length(attempted ->> 'agent') AS agent_length, right(attempted ->> 'agent', 42) AS agent_ends,
       length(reason) <= 2100 AS reason_cut
  FROM pg_labels.refused_writes
 WHERE tool LIKE 'xxx%' OR tool LIKE chr(1) || '%' OR attempted ->> 'agent' LIKE 'aaa%'
 ORDER BY kind, tool_length;

-- 4b. A flood over many runs (each refused opening a new run id: no two alike) is still
--     counted past the budget: by role, kind and rule, in a record read in the writer's scope
\c - regress_or_platform
DO $$
BEGIN
  FOR i IN 1..1000 LOOP
    BEGIN
      INSERT INTO pg_labels.runs (agent, scope, labels) VALUES ('flood', 'acme/platform', '{company:globex}');
    EXCEPTION WHEN SQLSTATE '23L01' THEN NULL;
    END;
  END LOOP;
END $$;
SELECT pg_labels.refusals_recorded() AS recorded;
\c - postgres
SELECT sum(count) AS refusals, count(*) < 1000 AS fewer_records,
       count(*) FILTER (WHERE run_id IS NULL AND reason LIKE '(counted with refusals of other runs)%') > 0 AS counted_by_role_kind_rule
  FROM pg_labels.refused_writes WHERE kind = 'run' AND attempted ->> 'agent' = 'flood' OR reason LIKE '(counted with%';

-- 4c. protect() remakes a column pg_labels_scope of the table's own that is generated the same
--     way but not stored inline
CREATE TABLE regress_or.own (id int, labels labelset, pg_labels_scope scope GENERATED ALWAYS AS (labelset_scope(labels)) STORED);
SELECT attstorage FROM pg_attribute WHERE attrelid = 'regress_or.own'::regclass AND attname = 'pg_labels_scope';
SELECT pg_labels.protect('regress_or.own');
SELECT attstorage FROM pg_attribute WHERE attrelid = 'regress_or.own'::regclass AND attname = 'pg_labels_scope';

-- 5. Retention: a step restored with a time three months back into the present's partition,
--    with the highest id; purge() of what is older than last month deletes that row alone, and
--    empties no month the present's steps are in
SET session_replication_role = replica;
INSERT INTO pg_labels.steps (id, run_id, kind, labels, actor, created_at, slot)
VALUES (nextval('pg_labels.steps_id_seq') + 1000, '0e000000-0000-0000-0000-0000000000a1', 'input', '{}', current_user,
        now() - interval '3 months', pg_labels.trail_slot(now()));
RESET session_replication_role;
SELECT count(*) AS present_steps_before FROM pg_labels.steps WHERE created_at > now() - interval '1 day';
SELECT pg_labels.purge(date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 month') AS runs_purged;
SELECT count(*) AS present_steps_after FROM pg_labels.steps WHERE created_at > now() - interval '1 day';
SELECT count(*) AS old_steps_after FROM pg_labels.steps WHERE created_at < now() - interval '2 months';

-- 6. A SQL_ASCII database stores any bytes: a tool named with bytes that are not UTF-8 is
--    refused (22021, text_not_utf8), and its record keeps the bytes, escaped
CREATE DATABASE regress_or_ascii TEMPLATE template0 ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C';
\c regress_or_ascii
CREATE EXTENSION pg_labels;
INSERT INTO pg_labels.tools (name, effect) VALUES ('or.pay', 'financial');
INSERT INTO pg_labels.runs (id, scope) VALUES ('0e000000-0000-0000-0000-0000000000e1', 'acme/platform');
GRANT USAGE ON SCHEMA pg_labels TO regress_or_platform;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_or_platform;
\c - regress_or_platform
\set VERBOSITY default
INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('0e000000-0000-0000-0000-0000000000e1', 'tool_called', E'pay\xff\xfeme');
SELECT pg_labels.refusals_recorded() AS recorded;
\c - postgres
SELECT kind, rule, sqlstate, tool, reason FROM pg_labels.refused_writes;
\c :regress_db
DROP DATABASE regress_or_ascii;
