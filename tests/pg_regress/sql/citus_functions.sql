-- The functions pg_labels.distribute() and the Citus policies use, on one node without Citus
-- (the suite `citus` runs them on a cluster): what each answers, and that an ordinary role can
-- neither distribute nor make a shard's sequence, nor gain a scope by claiming to be Citus.
\pset null '(null)'
CREATE ROLE regress_cit_analyst;
CREATE ROLE regress_cit_member IN ROLE regress_cit_analyst;
GRANT USAGE ON SCHEMA pg_labels TO regress_cit_analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_cit_analyst', 'acme/cit');
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('c1700000-0000-0000-0000-000000000001', 'acme/cit'),
  ('c1700000-0000-0000-0000-000000000002', 'globex/cit');
INSERT INTO pg_labels.artifacts (id, origin_run, digest) VALUES
  ('c17a0000-0000-0000-0000-000000000001', 'c1700000-0000-0000-0000-000000000001', pg_labels.digest('a')),
  ('c17a0000-0000-0000-0000-000000000002', 'c1700000-0000-0000-0000-000000000002', pg_labels.digest('b'));

-- without Citus, distribute() says what it needs
SELECT pg_labels.distribute();

SET ROLE regress_cit_analyst;
-- an ordinary role may not distribute, nor make a shard's sequence
SELECT pg_labels.distribute();
SELECT pg_labels.shard_sequence(1, 'pg_labels.steps');
-- no scope entered: no run or artifact is visible through the policy helpers
SELECT pg_labels.run_visible('pg_labels.steps'::regclass, 'c1700000-0000-0000-0000-000000000001');
BEGIN;
SELECT pg_labels.enter_scope('acme/cit');
-- a role that may not read runs (or artifacts) is refused, as a subquery on them would be
SELECT pg_labels.run_visible('pg_labels.steps'::regclass, 'c1700000-0000-0000-0000-000000000001');
ROLLBACK;
RESET ROLE;
GRANT SELECT ON pg_labels.runs, pg_labels.artifacts TO regress_cit_analyst;
SET ROLE regress_cit_analyst;
BEGIN;
SELECT pg_labels.enter_scope('acme/cit');
-- the relation names where the row is read next to (on one node: the table itself)
SELECT r.id, pg_labels.run_visible('pg_labels.steps'::regclass, r.id) AS run,
       pg_labels.artifact_visible('pg_labels.shares'::regclass, a.id) AS artifact
  FROM (VALUES ('c1700000-0000-0000-0000-000000000001'::uuid, 'c17a0000-0000-0000-0000-000000000001'::uuid),
               ('c1700000-0000-0000-0000-000000000002', 'c17a0000-0000-0000-0000-000000000002'),
               ('c1700000-0000-0000-0000-0000000000ff', 'c17a0000-0000-0000-0000-0000000000ff')) AS r(id, art)
  JOIN LATERAL (SELECT r.art AS id) a ON true;
-- any relation, or none: never an error
SELECT pg_labels.run_visible('pg_catalog.pg_class'::regclass, 'c1700000-0000-0000-0000-000000000001'),
       pg_labels.run_visible(0, 'c1700000-0000-0000-0000-000000000001'),
       pg_labels.run_visible(NULL, NULL), pg_labels.artifact_visible(4294967295, NULL);
COMMIT;
-- membership, for the grants' policy
SELECT pg_labels.member_of('regress_cit_analyst') AS self, pg_labels.member_of('regress_cit_member') AS member_role,
       pg_labels.member_of('no_such_role') AS none, pg_labels.member_of(NULL) AS null_role;
RESET ROLE;
SET ROLE regress_cit_member;
SELECT pg_labels.member_of('regress_cit_analyst') AS member_of_granted_role;
RESET ROLE;

-- claiming to be Citus' backend and carrying a scope by hand: only a granted scope counts
SET ROLE regress_cit_analyst;
SET application_name = 'citus_internal gpid=1';
SET pg_labels.carried_scope = 'globex';
SELECT pg_labels.current_scope() AS ungranted_carried;
SET pg_labels.carried_scope = 'ACME//';
SELECT pg_labels.current_scope() AS malformed_carried;
SET pg_labels.carried_scope = 'acme/cit';
SELECT pg_labels.current_scope() AS granted_carried;
RESET pg_labels.carried_scope;
RESET application_name;
-- the same setting in an ordinary session is nobody's scope
SET pg_labels.carried_scope = 'acme/cit';
SELECT pg_labels.current_scope() AS not_citus;
RESET pg_labels.carried_scope;
RESET ROLE;

-- a share id from this node's range (one node: the sequence as it is)
SELECT pg_labels.next_share_id() > 0 AS share_id;

DROP OWNED BY regress_cit_analyst;
DROP ROLE regress_cit_member;
DROP ROLE regress_cit_analyst;
