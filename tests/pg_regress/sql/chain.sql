-- The trail's hash chains (README "Proving the trail"): every step is chained to its run's
-- previous one; verify() checks a run, verify_all() every run, ledger_digest() takes a root to
-- keep outside the database, verify_digest() proves today's trail extends it, prove() gives
-- an inclusion proof for the offline verifier. A superuser in replica mode (triggers off) then
-- tampers with the trail in each way the chain must show.
SET client_min_messages = warning;
INSERT INTO pg_labels.tools (name, effect) VALUES ('chain.read', 'read') ON CONFLICT DO NOTHING;
RESET client_min_messages;

-- five runs of four steps each, one of them growing its labels
INSERT INTO pg_labels.runs (id, scope)
SELECT ('c0000000-0000-0000-0000-00000000000' || r)::uuid, 'acme/platform' FROM generate_series(1, 5) r;
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT ('c0000000-0000-0000-0000-00000000000' || r)::uuid, 'input', '{origin:slack}' FROM generate_series(1, 5) r;
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
SELECT ('c0000000-0000-0000-0000-00000000000' || r)::uuid, 'tool_called', 'chain.read', jsonb_build_object('n', r)
  FROM generate_series(1, 5) r;
-- (ids skip a hundred here: room for a forged step between two of a run's steps)
SELECT setval('pg_labels.steps_id_seq', (SELECT last_value + 100 FROM pg_labels.steps_id_seq)) IS NOT NULL AS skipped;
INSERT INTO pg_labels.steps (run_id, kind, tool, labels)
SELECT ('c0000000-0000-0000-0000-00000000000' || r)::uuid, 'tool_result', 'chain.read', '{tag:result}'
  FROM generate_series(1, 5) r;
INSERT INTO pg_labels.steps (run_id, kind, tool)
SELECT ('c0000000-0000-0000-0000-00000000000' || r)::uuid, 'gate_decided', 'chain.read' FROM generate_series(1, 5) r;

-- the database fills the chain: every step links to the one before it; the run's row keeps
-- a checkpoint, written by the last step that grew its labels (here the tool's result), and
-- the partition of the ring that holds the steps after it
SELECT r.id, (SELECT count(*) FROM pg_labels.steps s WHERE s.run_id = r.id) AS chain_length, length(r.chain_head) AS head_bytes,
       r.chain_head = (SELECT s.hash FROM pg_labels.steps s WHERE s.run_id = r.id AND s.kind = 'tool_result') AS checkpoint_is_last_growth,
       r.chain_slot = pg_labels.trail_slot(now()) AS slot_is_this_month
  FROM pg_labels.runs r WHERE r.id::text LIKE 'c0000000%' ORDER BY r.id;
SELECT count(*) AS linked FROM pg_labels.steps s
 WHERE s.run_id::text LIKE 'c0000000%'
   AND s.prev_hash = coalesce((SELECT p.hash FROM pg_labels.steps p WHERE p.run_id = s.run_id AND p.id < s.id ORDER BY p.id DESC LIMIT 1),
                              (SELECT (SELECT hash FROM pg_labels.steps x WHERE false)));
-- the trigger writes the run row itself (a new version when its labels grow, out of place
-- as they do): every index of runs still finds every run, as a sequential scan does
CREATE TEMP TABLE seen AS SELECT id, scope, opened_at, labels FROM pg_labels.runs;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS runs,
       count(*) FILTER (WHERE EXISTS (SELECT FROM pg_labels.runs r WHERE r.id = s.id)) AS by_pkey,
       count(*) FILTER (WHERE EXISTS (SELECT FROM pg_labels.runs r WHERE r.scope = s.scope AND r.id::text = s.id::text)) AS by_scope,
       count(*) FILTER (WHERE EXISTS (SELECT FROM pg_labels.runs r WHERE r.opened_at = s.opened_at AND r.id::text = s.id::text)) AS by_opened_at
  FROM seen s;
RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM pg_labels.runs WHERE labels @> '{tag:result}') AS by_gin,
       (SELECT count(*) FROM seen WHERE labels @> '{tag:result}') AS by_seq_scan;
RESET enable_seqscan;
SELECT * FROM pg_labels.verify('c0000000-0000-0000-0000-000000000001');
SELECT count(*) AS broken FROM pg_labels.verify_all() WHERE run::text LIKE 'c0000000%';

-- a writer cannot bring its own chain
INSERT INTO pg_labels.steps (run_id, kind, hash) VALUES ('c0000000-0000-0000-0000-000000000001', 'input', '\x00');
INSERT INTO pg_labels.runs (scope, chain_head) VALUES ('acme', '\x00');

-- a digest of the ledger as it stands, kept "outside" (in a psql variable)
SELECT pg_labels.ledger_digest() AS digest \gset
SELECT (:'digest'::jsonb) ?& array['version', 'id', 'taken_at', 'runs', 'steps', 'root'] AS complete;
SELECT * FROM pg_labels.verify_digest(:'digest') WHERE NOT holds OR detail NOT LIKE 'today''s trail extends digest%';
SELECT holds FROM pg_labels.verify_digest(:'digest');
-- the trail may grow after the digest: it still extends it
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('c0000000-0000-0000-0000-000000000001', 'planned');
SELECT holds FROM pg_labels.verify_digest(:'digest');
-- an inclusion proof of a step, for the offline verifier
SELECT pg_labels.prove((SELECT min(id) FROM pg_labels.steps WHERE run_id = 'c0000000-0000-0000-0000-000000000002'), :'digest') AS proof \gset
SELECT (:'proof'::jsonb) -> 'step' ->> 'kind' AS kind, jsonb_array_length((:'proof'::jsonb) -> 'later') AS later,
       (:'proof'::jsonb) -> 'ledger' ->> 'root' = (:'digest'::jsonb) ->> 'root' AS same_root;
-- checked offline by pg_labels_verify (built by scripts/test.sh; no database), as it is and
-- with the step's labels changed
\getenv scratch PG_LABELS_SCRATCH
\set proof_file :scratch '/proof.json'
\o :proof_file
\qecho :proof
\o
\! "$PG_LABELS_VERIFY" verify "$PG_LABELS_SCRATCH/proof.json" | cut -d';' -f1
\! sed 's/{origin:slack}/{}/' "$PG_LABELS_SCRATCH/proof.json" | "$PG_LABELS_VERIFY" verify - | cut -c1-60

-- tampering, as a superuser with the triggers off
SET session_replication_role = replica;
-- run 1: a step's labels edited
UPDATE pg_labels.steps SET labels = '{}' WHERE run_id = 'c0000000-0000-0000-0000-000000000001' AND kind = 'input';
-- run 2: a step in the middle deleted
DELETE FROM pg_labels.steps WHERE run_id = 'c0000000-0000-0000-0000-000000000002' AND kind = 'tool_called';
-- run 3: the run's last step deleted (a step after the row's checkpoint: only a digest taken
-- before knows it was there, and verify_digest() names it; verify() cannot)
DELETE FROM pg_labels.steps WHERE run_id = 'c0000000-0000-0000-0000-000000000003' AND kind = 'gate_decided';
-- run 4: a forged step inserted between two others, with a plausible chain
INSERT INTO pg_labels.steps (id, run_id, kind, tool, labels, actor, created_at, slot, prev_hash, hash)
SELECT s.id + 50, s.run_id, 'tool_called', 'chain.read', '{}', s.actor, s.created_at, s.slot, s.hash, sha256(s.hash)
  FROM pg_labels.steps s WHERE s.run_id = 'c0000000-0000-0000-0000-000000000004' AND s.kind = 'tool_called';
-- run 5: two steps' ids exchanged
UPDATE pg_labels.steps SET id = -id WHERE run_id = 'c0000000-0000-0000-0000-000000000005' AND kind IN ('tool_called', 'tool_result');
UPDATE pg_labels.steps s SET id = (SELECT -min(o.id) FROM pg_labels.steps o WHERE o.run_id = s.run_id AND o.id < 0 AND o.id <> s.id)
 WHERE s.run_id = 'c0000000-0000-0000-0000-000000000005' AND s.id < 0;
RESET session_replication_role;

SELECT v.* FROM generate_series(1, 5) r, pg_labels.verify(('c0000000-0000-0000-0000-00000000000' || r)::uuid) v;
SELECT regexp_replace(run::text, '^c0+', 'c…') AS run, how, detail ~ 'step [0-9]+' AS names_step
  FROM pg_labels.verify_all() WHERE run::text LIKE 'c0000000%' ORDER BY run;
SELECT holds, regexp_replace(run::text, '^c0+', 'c…') AS run, regexp_replace(detail, '[0-9]{3,}', 'N', 'g') AS detail
  FROM pg_labels.verify_digest(:'digest') ORDER BY run;

-- a whole run removed, and the digest's record in the database changed: both show
SET session_replication_role = replica;
DELETE FROM pg_labels.steps WHERE run_id = 'c0000000-0000-0000-0000-000000000005';
DELETE FROM pg_labels.runs WHERE id = 'c0000000-0000-0000-0000-000000000005';
UPDATE pg_labels.digests SET marks = substr(marks, 57) WHERE id = (:'digest'::jsonb ->> 'id')::bigint;
RESET session_replication_role;
SELECT holds, regexp_replace(run::text, '^c0+', 'c…') AS run, regexp_replace(detail, '[0-9]{3,}', 'N', 'g') AS detail
  FROM pg_labels.verify_digest(:'digest') WHERE run IS NULL OR run::text LIKE '%5' ORDER BY run;
-- the run row's checkpoint removed, with the step after it: verify() alone shows it. A run
-- whose first step was planned, then an input that grew its labels, then a planned step
INSERT INTO pg_labels.runs (id, scope) VALUES ('e0000000-0000-0000-0000-000000000001', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000001', 'planned');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('e0000000-0000-0000-0000-000000000001', 'input', '{origin:slack}');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000001', 'planned');
SELECT chain_head = (SELECT hash FROM pg_labels.steps WHERE run_id = r.id AND kind = 'input') AS checkpoint_is_the_input
  FROM pg_labels.runs r WHERE id = 'e0000000-0000-0000-0000-000000000001';
SET session_replication_role = replica;
DELETE FROM pg_labels.steps WHERE run_id = 'e0000000-0000-0000-0000-000000000001'
   AND id > (SELECT min(id) FROM pg_labels.steps WHERE run_id = 'e0000000-0000-0000-0000-000000000001');
RESET session_replication_role;
SELECT intact, steps, how, regexp_replace(detail, '[0-9]+', 'N') AS detail FROM pg_labels.verify('e0000000-0000-0000-0000-000000000001');
-- a digest that is not one
SELECT * FROM pg_labels.verify_digest('{"version": 1}');
SELECT * FROM pg_labels.verify_digest('{"version": 1, "id": 999, "root": "00"}');
SELECT * FROM pg_labels.verify_digest('{"version": 1, "id": 999, "root": "0000000000000000000000000000000000000000000000000000000000000000"}');
-- the functions of the ledger are the DBA's: not EXECUTE to PUBLIC
SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
  FROM pg_proc p WHERE p.pronamespace = 'pg_labels'::regnamespace
   AND p.proname IN ('verify', 'verify_all', 'ledger_digest', 'verify_digest', 'prove') ORDER BY 1;

-- retention cuts a chain where it removes a run's oldest steps, and verify() goes on from the
-- cut: a run with steps three months old (written around the triggers, then chained by
-- start_chains(), as ALTER EXTENSION UPDATE chains a trail of 0.1.0), and two steps now
SET session_replication_role = replica;
INSERT INTO pg_labels.runs (id, scope, labels, opened_at)
VALUES ('d0000000-0000-0000-0000-000000000001', 'acme/platform', '{area:acme/platform,origin:slack}', now() - interval '3 months');
INSERT INTO pg_labels.steps (id, run_id, kind, labels, actor, created_at, slot)
SELECT nextval('pg_labels.steps_id_seq'), 'd0000000-0000-0000-0000-000000000001', 'input', '{origin:slack}', current_user,
       now() - interval '3 months' + g * interval '1 minute', pg_labels.trail_slot(now() - interval '3 months' + g * interval '1 minute')
  FROM generate_series(1, 3) g;
SELECT pg_labels.start_chains() AS chained;
RESET session_replication_role;
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('d0000000-0000-0000-0000-000000000001', 'planned');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('d0000000-0000-0000-0000-000000000001', 'planned');
SELECT intact, steps, how, detail FROM pg_labels.verify('d0000000-0000-0000-0000-000000000001');
SELECT pg_labels.ledger_digest() AS before_purge \gset
SELECT pg_labels.purge(now() - interval '2 months') AS purged_runs;
-- a digest taken before the purge: the run's steps that went are accepted, the rest checked
SELECT count(*) AS problems_of_the_cut_run FROM pg_labels.verify_digest(:'before_purge')
 WHERE run = 'd0000000-0000-0000-0000-000000000001';
SELECT chain_cut_length + (SELECT count(*) FROM pg_labels.steps WHERE run_id = r.id) AS chain_length,
       chain_cut_length, length(chain_cut) AS cut_bytes, chain_head = chain_cut AS checkpoint_is_the_cut
  FROM pg_labels.runs r WHERE id = 'd0000000-0000-0000-0000-000000000001';
SELECT intact, steps, how, detail FROM pg_labels.verify('d0000000-0000-0000-0000-000000000001');
-- a remaining step removed after the cut still shows
SET session_replication_role = replica;
DELETE FROM pg_labels.steps WHERE id = (SELECT min(id) FROM pg_labels.steps WHERE run_id = 'd0000000-0000-0000-0000-000000000001');
RESET session_replication_role;
SELECT intact, how, regexp_replace(detail, '[0-9]+', 'N') AS detail FROM pg_labels.verify('d0000000-0000-0000-0000-000000000001');

-- a DBA's auditor role, granted the ledger's functions, gets the whole trail (they run as the
-- platform tables' owner), though it cannot read the platform's tables itself
CREATE ROLE regress_chain_auditor;
GRANT USAGE ON SCHEMA pg_labels TO regress_chain_auditor;
GRANT EXECUTE ON FUNCTION pg_labels.ledger_digest(), pg_labels.verify_all(), pg_labels.verify_digest(jsonb)
  TO regress_chain_auditor;
SELECT count(*) AS all_runs FROM pg_labels.runs \gset
SELECT count(*) AS all_broken FROM pg_labels.verify_all() \gset
SET ROLE regress_chain_auditor;
SELECT (pg_labels.ledger_digest() ->> 'runs')::bigint = :all_runs AS digest_covers_every_run;
SELECT count(*) = :all_broken AS sees_every_broken_run FROM pg_labels.verify_all();
SELECT count(*) FROM pg_labels.runs;
RESET ROLE;
REVOKE ALL ON FUNCTION pg_labels.ledger_digest(), pg_labels.verify_all(), pg_labels.verify_digest(jsonb)
  FROM regress_chain_auditor;
REVOKE USAGE ON SCHEMA pg_labels FROM regress_chain_auditor;
DROP ROLE regress_chain_auditor;

-- as an ordinary writer (a role that may insert into the trail, subject to row-level
-- security, which lets writers read the trail): it cannot bring a chain of its own; verify()
-- reads as it; the ledger's functions are not its
CREATE ROLE regress_chain_writer;
GRANT USAGE ON SCHEMA pg_labels TO regress_chain_writer;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_chain_writer;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_chain_writer', '*') ON CONFLICT DO NOTHING;
SET ROLE regress_chain_writer;
INSERT INTO pg_labels.steps (run_id, kind, prev_hash) VALUES ('c0000000-0000-0000-0000-000000000001', 'input', '\x00');
INSERT INTO pg_labels.runs (scope, opened_labels) VALUES ('acme', '{}');
INSERT INTO pg_labels.runs (scope, chain_cut_length) VALUES ('acme', 0);
INSERT INTO pg_labels.runs (scope, chain_slot) VALUES ('acme', 3);
SELECT intact, steps, how FROM pg_labels.verify('c0000000-0000-0000-0000-000000000001');
SELECT pg_labels.ledger_digest();
RESET ROLE;
REVOKE ALL ON pg_labels.runs, pg_labels.steps FROM regress_chain_writer;
REVOKE USAGE ON SCHEMA pg_labels FROM regress_chain_writer;
DROP ROLE regress_chain_writer;
-- a role that sees no run (no grant, no scope entered): verify() finds nothing to check
CREATE ROLE regress_chain_nobody;
GRANT USAGE ON SCHEMA pg_labels TO regress_chain_nobody;
GRANT SELECT ON pg_labels.runs, pg_labels.steps TO regress_chain_nobody;
SET ROLE regress_chain_nobody;
SELECT intact, steps, how, detail FROM pg_labels.verify('c0000000-0000-0000-0000-000000000002');
RESET ROLE;
REVOKE ALL ON pg_labels.runs, pg_labels.steps FROM regress_chain_nobody;
REVOKE USAGE ON SCHEMA pg_labels FROM regress_chain_nobody;
DROP ROLE regress_chain_nobody;

-- a subtransaction that aborts takes its steps with it: the next step chains to the one before
INSERT INTO pg_labels.runs (id, scope) VALUES ('e0000000-0000-0000-0000-000000000002', 'acme/platform');
BEGIN;
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000002', 'planned');
SAVEPOINT before_input;
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('e0000000-0000-0000-0000-000000000002', 'input', '{origin:slack}');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000002', 'planned');
ROLLBACK TO SAVEPOINT before_input;
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000002', 'planned');
COMMIT;
SELECT intact, steps, (SELECT labels FROM pg_labels.runs WHERE id = 'e0000000-0000-0000-0000-000000000002') AS labels
  FROM pg_labels.verify('e0000000-0000-0000-0000-000000000002');

-- a run first found inside a subtransaction that aborts: the locks taken there (the run's, the
-- runs table's, the tool catalog's) go with it, and the next steps take them again rather than
-- reading what the aborted steps left
INSERT INTO pg_labels.runs (id, scope) VALUES ('e0000000-0000-0000-0000-000000000003', 'acme/platform');
BEGIN;
SAVEPOINT first_steps;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('e0000000-0000-0000-0000-000000000003', 'tool_called', 'chain.read', '{"n": 1}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('e0000000-0000-0000-0000-000000000003', 'tool_called', 'chain.read', '{"n": 2}');
ROLLBACK TO SAVEPOINT first_steps;
SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relname IN ('runs', 'tools') ORDER BY 1, 2;
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('e0000000-0000-0000-0000-000000000003', 'tool_called', 'chain.read', '{"n": 3}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('e0000000-0000-0000-0000-000000000003', 'tool_called', 'chain.read', '{"n": 4}');
SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relname IN ('runs', 'tools') ORDER BY 1, 2;
COMMIT;
SELECT intact, steps FROM pg_labels.verify('e0000000-0000-0000-0000-000000000003');
SELECT args FROM pg_labels.steps WHERE run_id = 'e0000000-0000-0000-0000-000000000003' ORDER BY id;

-- a run's last step deleted around the triggers (replica mode): the backend that wrote it knows
-- it as its own and reads no row, so until VACUUM removes its index entry its next step chains
-- to it, and verify() names the removal; another backend reads the row, finds it gone and
-- chains to the step before, which only a digest taken before tells apart (run 3 above)
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('e0000000-0000-0000-0000-000000000004', 'acme/platform'),
  ('e0000000-0000-0000-0000-000000000005', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000004', 'planned');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000004', 'planned');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000005', 'planned');
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000005', 'planned');
SET session_replication_role = replica;
DELETE FROM pg_labels.steps WHERE id IN (SELECT max(id) FROM pg_labels.steps
 WHERE run_id IN ('e0000000-0000-0000-0000-000000000004', 'e0000000-0000-0000-0000-000000000005') GROUP BY run_id);
RESET session_replication_role;
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000004', 'input');
\c
INSERT INTO pg_labels.steps (run_id, kind) VALUES ('e0000000-0000-0000-0000-000000000005', 'input');
SELECT right(r::text, 1) AS run, v.intact, v.steps, v.how
  FROM unnest('{e0000000-0000-0000-0000-000000000004,e0000000-0000-0000-0000-000000000005}'::uuid[]) r,
       pg_labels.verify(r) v;

-- one transaction writing to more runs than it locks through the lock manager (32, seen in
-- pg_locks as advisory locks with objsubid 20556): it locks the others' rows; every chain holds
INSERT INTO pg_labels.runs (id, scope)
SELECT ('e1000000-0000-0000-0000-' || lpad(r::text, 12, '0'))::uuid, 'acme/platform' FROM generate_series(1, 40) r;
BEGIN;
INSERT INTO pg_labels.steps (run_id, kind)
SELECT id, 'planned' FROM pg_labels.runs WHERE id::text LIKE 'e1000000%' ORDER BY id;
SELECT count(*) AS runs_locked_without_a_write FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 20556 AND pid = pg_backend_pid() AND granted;
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT id, 'input', '{origin:slack}' FROM pg_labels.runs WHERE id::text LIKE 'e1000000%' ORDER BY id DESC;
COMMIT;
SELECT count(*) FILTER (WHERE v.intact) AS intact, count(*) AS runs, sum(v.steps) AS steps
  FROM pg_labels.runs r, pg_labels.verify(r.id) v WHERE r.id::text LIKE 'e1000000%';
