-- The functions pg_labels.distribute() and the Citus policies use, on one node without Citus
-- (the suite `citus` runs them on a cluster): what each answers, and that an ordinary role can
-- neither distribute nor make a shard's sequence, nor gain a scope by claiming to be Citus or
-- by making Citus' settings as placeholders.
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
-- membership, for the grants' policy
SELECT pg_labels.member_of('regress_cit_analyst') AS self, pg_labels.member_of('regress_cit_member') AS member_role,
       pg_labels.member_of('no_such_role') AS none, pg_labels.member_of(NULL) AS null_role;
RESET ROLE;
SET ROLE regress_cit_member;
SELECT pg_labels.member_of('regress_cit_analyst') AS member_of_granted_role;
RESET ROLE;

-- claiming to be Citus' backend and carrying a scope by hand: without Citus loaded (its
-- settings mere placeholders, whoever sets them), a carried scope is nobody's, granted or not
SET ROLE regress_cit_analyst;
SET application_name = 'citus_internal gpid=1';
SET citus.propagate_set_commands = 'local';
SET pg_labels.carried_scope = 'globex';
SELECT pg_labels.current_scope() AS ungranted_carried;
SET pg_labels.carried_scope = 'ACME//';
SELECT pg_labels.current_scope() AS malformed_carried;
SET pg_labels.carried_scope = 'acme/cit';
SELECT pg_labels.current_scope() AS granted_carried;
-- and the placeholder leads nowhere else: a share id, a scope entered for the session, as on
-- any single node
SELECT pg_labels.next_share_id() > 0 AS share_id_with_placeholder;
SELECT pg_labels.enter_scope('acme/cit', true) IS NOT NULL AS session_scope_with_placeholder;
SELECT pg_labels.leave_scope();
RESET citus.propagate_set_commands;
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
