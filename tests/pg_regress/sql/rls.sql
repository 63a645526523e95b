-- Row-level security by scope, with real non-superuser roles and real connections: a role enters
-- only a scope its grants reach (directly or through membership); nothing else raises it (SET,
-- set_config, RESET, placeholders, SECURITY DEFINER, SET ROLE, a reused connection); the
-- platform tables show an analyst only what the entered scope can carry, and nothing without
-- one; protect() does the same for any table, partitions and views included, and indexes still
-- serve queries under it.
\pset null '(null)'
CREATE ROLE regress_rls_analyst LOGIN;
CREATE ROLE regress_rls_finance_team;
CREATE ROLE regress_rls_fin LOGIN IN ROLE regress_rls_finance_team;
CREATE ROLE regress_rls_boss LOGIN;
CREATE ROLE regress_rls_writer LOGIN;
CREATE ROLE regress_rls_owner LOGIN;
GRANT regress_rls_analyst TO regress_rls_boss;  -- the boss can act as the analyst (SET ROLE)
GRANT CREATE ON SCHEMA public TO regress_rls_analyst, regress_rls_boss;
GRANT USAGE ON SCHEMA pg_labels TO regress_rls_analyst, regress_rls_finance_team, regress_rls_boss, regress_rls_writer, regress_rls_owner;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares, pg_labels.trail
  TO regress_rls_analyst, regress_rls_finance_team, regress_rls_boss;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares TO regress_rls_writer;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rls_writer', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_rls_writer;
INSERT INTO pg_labels.grants (role, scope) VALUES
  ('regress_rls_analyst', 'acme/platform'),
  ('regress_rls_finance_team', 'acme/finance'),
  ('regress_rls_boss', 'acme');
INSERT INTO pg_labels.tools (name, effect) VALUES ('rls.read', 'read') ON CONFLICT DO NOTHING;

-- the platform writes as usual: a writer needs no scope and reads all it writes
SET ROLE regress_rls_writer;
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('d8000000-0000-0000-0000-000000000001', 'acme/platform'),
  ('d8000000-0000-0000-0000-000000000002', 'acme/platform/infra'),
  ('d8000000-0000-0000-0000-000000000003', 'acme/finance'),
  ('d8000000-0000-0000-0000-000000000004', 'acme'),
  ('d8000000-0000-0000-0000-000000000005', 'globex/ops'),
  ('d8000000-0000-0000-0000-000000000006', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT id, 'input', '{origin:slack,tag:pii}' FROM pg_labels.runs WHERE id::text LIKE 'd8%';
-- a support run that finance data entered: its steps from then on, and the run itself (with
-- the trail of it), are only for those who can carry it
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('d8000000-0000-0000-0000-000000000001', 'input', '{area:acme/finance}');
SELECT decision FROM pg_labels.gate('d8000000-0000-0000-0000-000000000002', 'rls.read');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('d8a00000-0000-0000-0000-000000000002', 'd8000000-0000-0000-0000-000000000002', pg_labels.digest('infra notes')),
  ('d8a00000-0000-0000-0000-000000000003', 'd8000000-0000-0000-0000-000000000003', pg_labels.digest('ledger'));
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES
  ('d8a00000-0000-0000-0000-000000000002', 'acme/platform'),
  ('d8a00000-0000-0000-0000-000000000003', 'acme/finance');
SELECT count(*) AS runs_the_writer_sees FROM pg_labels.runs WHERE id::text LIKE 'd8%';
RESET ROLE;

-- an analyst with no scope entered sees nothing
\c - regress_rls_analyst
\pset null '(null)'
SELECT current_user, current_setting('is_superuser') AS superuser, pg_labels.current_scope();
SELECT (SELECT count(*) FROM pg_labels.runs) AS runs, (SELECT count(*) FROM pg_labels.steps) AS steps,
       (SELECT count(*) FROM pg_labels.artifacts) AS artifacts, (SELECT count(*) FROM pg_labels.shares) AS shares,
       (SELECT count(*) FROM pg_labels.trail) AS trail;
-- only a scope a grant reaches can be entered
SELECT pg_labels.enter_scope('acme');
SELECT pg_labels.enter_scope('acme/finance');
SELECT pg_labels.enter_scope('*');
SELECT pg_labels.enter_scope(NULL);
-- entered for the transaction: it sees what acme/platform can carry, and then nothing
BEGIN;
SELECT pg_labels.enter_scope('acme/platform'), pg_labels.current_scope();
SELECT scope, labels FROM pg_labels.runs ORDER BY scope;
SELECT run_scope, kind, labels FROM pg_labels.trail ORDER BY run_scope, id;
SELECT a.id, s.to_scope FROM pg_labels.artifacts a LEFT JOIN pg_labels.shares s ON s.artifact_id = a.id ORDER BY a.id;
SELECT pg_labels.visible('{area:acme/platform/infra}') AS sub_area, pg_labels.visible('{area:acme/finance}') AS sibling,
       pg_labels.visible('{}') AS nothing, pg_labels.visible(NULL) AS null_labels;
-- a narrower scope below the grant may be entered too
SELECT pg_labels.enter_scope('acme/platform/infra');
SELECT scope FROM pg_labels.runs ORDER BY scope;
COMMIT;
SELECT pg_labels.current_scope() AS after_commit, (SELECT count(*) FROM pg_labels.runs) AS runs;

-- no back door: settings, placeholders, RESET
SET pg_labels.scope = '*';
SET pg_labels.current_scope = 'acme';
SELECT set_config('pg_labels.entered_scope', '*', false);
RESET ALL;
SELECT pg_labels.current_scope(), (SELECT count(*) FROM pg_labels.runs) AS runs;
-- a placeholder set before the library is loaded, in a fresh connection
\c - regress_rls_analyst
SET pg_labels.scope = '*';
SET pg_labels.current_scope = '*';
SELECT count(*) AS runs FROM pg_labels.runs;
SELECT pg_labels.current_scope() IS NULL AS no_scope;

-- SECURITY DEFINER: a function of the analyst's own has the analyst's grants ...
CREATE FUNCTION regress_rls_wider() RETURNS scope LANGUAGE sql SECURITY DEFINER
AS $$ SELECT pg_labels.enter_scope('acme') $$;
SELECT regress_rls_wider();
DROP FUNCTION regress_rls_wider();
-- ... and the boss's function, entering the boss's scope, enters it for the boss only
\c - regress_rls_boss
CREATE FUNCTION regress_rls_boss_enter() RETURNS scope LANGUAGE sql SECURITY DEFINER
AS $$ SELECT pg_labels.enter_scope('acme', true) $$;
GRANT EXECUTE ON FUNCTION regress_rls_boss_enter() TO regress_rls_analyst;
\c - regress_rls_analyst
SELECT regress_rls_boss_enter() AS entered_inside;
SELECT pg_labels.current_scope() IS NULL AS analyst_has_no_scope, (SELECT count(*) FROM pg_labels.runs) AS runs;

-- connection reuse: the boss enters acme for the session, then the connection acts as the
-- analyst (SET ROLE, as a pooler would): the scope stays with the boss
\c - regress_rls_boss
SELECT pg_labels.enter_scope('acme', for_session => true);
SELECT count(*) AS boss_runs FROM pg_labels.runs;
PREPARE runs_seen AS SELECT count(*) FROM pg_labels.runs;
EXECUTE runs_seen;
SET ROLE regress_rls_analyst;
SELECT current_user, pg_labels.current_scope();
-- plan reuse after SET ROLE: the same prepared statement, the analyst's (empty) view
EXECUTE runs_seen;
RESET ROLE;
EXECUTE runs_seen;
-- a session scope lasts across transactions, until DISCARD ALL (a pooler's reset)
SELECT pg_labels.current_scope() AS next_transaction;
DISCARD ALL;
SELECT pg_labels.current_scope() AS after_discard, (SELECT count(*) FROM pg_labels.runs) AS runs;
PREPARE runs_seen AS SELECT count(*) FROM pg_labels.runs;  -- DISCARD ALL dropped it too
-- a rolled-back transaction or savepoint undoes entering
BEGIN;
SELECT pg_labels.enter_scope('acme', true) IS NOT NULL AS entered;
ROLLBACK;
SELECT pg_labels.current_scope() AS after_rollback;
BEGIN;
SELECT pg_labels.enter_scope('acme/platform');
SAVEPOINT s;
SELECT pg_labels.enter_scope('acme');
ROLLBACK TO SAVEPOINT s;
SELECT pg_labels.current_scope() AS after_savepoint_rollback;
SAVEPOINT t;
SELECT pg_labels.enter_scope('acme/finance');
RELEASE SAVEPOINT t;
SELECT pg_labels.current_scope() AS after_release;
COMMIT;
-- prepared statements across scope changes: each execution uses the scope in force
SELECT pg_labels.enter_scope('acme', true) IS NOT NULL AS entered;
EXECUTE runs_seen;
SELECT pg_labels.enter_scope('acme/platform', true) IS NOT NULL AS entered;
EXECUTE runs_seen;
SELECT pg_labels.leave_scope();
EXECUTE runs_seen;
-- membership: a member of the finance team enters the team's scope, and only that
\c - regress_rls_fin
BEGIN;
SELECT pg_labels.enter_scope('acme/finance') IS NOT NULL AS entered;
SELECT scope FROM pg_labels.runs ORDER BY scope;
COMMIT;
SELECT pg_labels.enter_scope('acme/platform');

-- a revoked grant ends a session scope at the next transaction (one connection: the DBA
-- revokes between two transactions of the boss)
\c - postgres
SET ROLE regress_rls_boss;
SELECT pg_labels.enter_scope('acme', true) IS NOT NULL AS entered;
SELECT count(*) AS boss_runs FROM pg_labels.runs WHERE id::text LIKE 'd8%';
RESET ROLE;
DELETE FROM pg_labels.grants WHERE role = 'regress_rls_boss';
SET ROLE regress_rls_boss;
SELECT pg_labels.current_scope() AS after_revocation, count(*) AS runs FROM pg_labels.runs;
RESET ROLE;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rls_boss', 'acme');
SET ROLE regress_rls_boss;
SELECT pg_labels.current_scope() AS still_none;
RESET ROLE;

-- provenance queries still use the indexes under row-level security (the operators are leakproof)
\c - regress_rls_analyst
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
-- (the trail is a ring of 24 partitions; a plan is shown with each kind of line once and how
-- many partitions it covers)
CREATE FUNCTION pg_temp.plan_summary(q text) RETURNS TABLE (plan_line text, partitions bigint)
LANGUAGE plpgsql AS $$
DECLARE l text; lines text[] := '{}';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    lines := lines || regexp_replace(regexp_replace(btrim(l), ' steps_[0-9]+$', ''),
                                     'steps_[0-9]{2}', 'steps_NN', 'g');
    lines[cardinality(lines)] := regexp_replace(lines[cardinality(lines)], '''\d+''::oid', '''<oid>''::oid', 'g');
  END LOOP;
  RETURN QUERY SELECT x, count(*) FROM unnest(lines) WITH ORDINALITY AS u(x, n) GROUP BY x ORDER BY min(n);
END $$;
SET LOCAL enable_seqscan = off;
SELECT * FROM pg_temp.plan_summary($$SELECT id FROM pg_labels.steps WHERE labels ? 'origin:slack'$$);
SET LOCAL enable_bitmapscan = off; -- (shown as an index scan whatever the table's pages)
EXPLAIN (COSTS OFF) SELECT id FROM pg_labels.runs WHERE scope <@ 'acme';
SET LOCAL enable_bitmapscan = on;
SELECT count(*) AS slack_steps FROM pg_labels.steps WHERE labels ? 'origin:slack';
COMMIT;

-- protect(): any table with a labelset column, for reads and writes, for its owner too
\c - postgres
CREATE SCHEMA regress_rls AUTHORIZATION regress_rls_owner;
GRANT USAGE ON SCHEMA regress_rls TO regress_rls_analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_rls_owner', 'acme/platform');
\c - regress_rls_owner
CREATE TABLE regress_rls.docs (id int PRIMARY KEY, body text, labels labelset NOT NULL);
CREATE INDEX docs_labels_idx ON regress_rls.docs USING gin (labels);
INSERT INTO regress_rls.docs SELECT i, 'doc ' || i,
  CASE i % 4 WHEN 0 THEN '{area:acme/platform,tag:pii}' WHEN 1 THEN '{area:acme/platform}'
             WHEN 2 THEN '{area:acme/finance}' ELSE '{company:globex}' END::labelset
FROM generate_series(1, 2000) i;
CREATE TABLE regress_rls.nolabels (id int);
SELECT pg_labels.protect('regress_rls.nolabels');
SELECT pg_labels.protect('regress_rls.docs', 'body');
SELECT pg_labels.protect('regress_rls.docs');
SELECT polname, polpermissive, pg_get_expr(polqual, polrelid) AS using FROM pg_policy
WHERE polrelid = 'regress_rls.docs'::regclass ORDER BY polname;
-- a view of the owner's, and a security_invoker one
CREATE VIEW regress_rls.docs_view AS SELECT id, labels FROM regress_rls.docs;
CREATE VIEW regress_rls.docs_invoker WITH (security_invoker = true) AS SELECT id, labels FROM regress_rls.docs;
GRANT SELECT, INSERT, UPDATE ON regress_rls.docs TO regress_rls_analyst;
GRANT SELECT ON regress_rls.docs_view, regress_rls.docs_invoker TO regress_rls_analyst;
-- the owner is under the policy too (forced): no scope, no rows
SELECT count(*) AS owner_without_scope FROM regress_rls.docs;
ANALYZE regress_rls.docs;
\c - regress_rls_analyst
SELECT pg_labels.protect('regress_rls.docs');
SELECT count(*) AS without_scope FROM regress_rls.docs;
SELECT count(*) AS view_without_scope FROM regress_rls.docs_view;
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT count(*) AS visible, count(*) FILTER (WHERE labels ? 'tag:pii') AS pii FROM regress_rls.docs;
SELECT count(*) AS through_view FROM regress_rls.docs_view;
SELECT count(*) AS through_invoker_view FROM regress_rls.docs_invoker;
-- writes: only rows the scope can carry, in and out, and can be read exactly in it (a row of
-- the sub-area would be read by that sub-area's analysts: written after entering it)
INSERT INTO regress_rls.docs VALUES (5001, 'mine', '{area:acme/platform}');
SAVEPOINT w;
INSERT INTO regress_rls.docs VALUES (5002, 'theirs', '{area:acme/finance}');
ROLLBACK TO SAVEPOINT w;
INSERT INTO regress_rls.docs VALUES (5003, 'down', '{area:acme/platform/infra}');
ROLLBACK TO SAVEPOINT w;
UPDATE regress_rls.docs SET labels = labels || '{company:globex}' WHERE id = 5001;
ROLLBACK TO SAVEPOINT w;
UPDATE regress_rls.docs SET body = 'edited' WHERE id IN (1, 2) RETURNING id, body;
-- the GIN index serves the analyst's query under the policy
-- (the plan names the protected table's OID in the guard's condition: shown as <oid>)
CREATE FUNCTION pg_temp.plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(l, '''\d+''::oid', '''<oid>''::oid', 'g');
  END LOOP;
END $$;
SET LOCAL enable_seqscan = off;
SELECT * FROM pg_temp.plan($$SELECT id FROM regress_rls.docs WHERE labels @> '{tag:pii}'$$);
SELECT count(*) AS pii_rows FROM regress_rls.docs WHERE labels @> '{tag:pii}';
ROLLBACK;

-- partitions: a query naming a partition is filtered too
\c - regress_rls_owner
CREATE TABLE regress_rls.events (id int, region text, labels labelset NOT NULL) PARTITION BY LIST (region);
CREATE TABLE regress_rls.events_eu PARTITION OF regress_rls.events FOR VALUES IN ('eu');
CREATE TABLE regress_rls.events_us PARTITION OF regress_rls.events FOR VALUES IN ('us');
INSERT INTO regress_rls.events VALUES (1, 'eu', '{area:acme/platform}'), (2, 'eu', '{area:acme/finance}'),
                                      (3, 'us', '{area:acme/platform}'), (4, 'us', '{company:globex}');
SELECT pg_labels.protect('regress_rls.events');
SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class
WHERE relname IN ('events', 'events_eu', 'events_us') ORDER BY relname;
GRANT SELECT ON regress_rls.events, regress_rls.events_eu, regress_rls.events_us TO regress_rls_analyst;
\c - regress_rls_analyst
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') IS NOT NULL AS entered;
SELECT id FROM regress_rls.events ORDER BY id;
SELECT id FROM regress_rls.events_eu ORDER BY id;
SELECT id FROM regress_rls.events_us ORDER BY id;
COMMIT;

\c - postgres
DROP SCHEMA regress_rls CASCADE;
DELETE FROM pg_labels.grants WHERE role::text LIKE 'regress_rls%';
DROP OWNED BY regress_rls_analyst, regress_rls_finance_team, regress_rls_fin, regress_rls_boss, regress_rls_writer, regress_rls_owner;
DROP ROLE regress_rls_analyst, regress_rls_fin, regress_rls_finance_team, regress_rls_boss, regress_rls_writer, regress_rls_owner;
