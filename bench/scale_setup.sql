-- Set-up for the trail at scale (scripts/bench.sh scale): :runs runs in acme/platform and a
-- trail of :steps steps over them in pg_labels.steps, and the same steps in bench_plain.steps
-- (bench/trail_setup.sql: the same columns, defaults, constraints and indexes, no trigger), as
-- its writers leave them.
-- The history is loaded as a restore loads it (replica mode: no trigger), with the shape the
-- trigger gives rows (ids from the trail's sequence, the database's time and month, a hash
-- pair); one step in a hundred is a gate that blocked, one run in ten carries tag:pii. New
-- steps chain from each run's head as it stands: the benchmark writes, it does not verify the
-- loaded history.
\set ON_ERROR_STOP on
INSERT INTO pg_labels.runs (id, scope)
SELECT md5('scale' || i)::uuid, 'acme/platform' FROM generate_series(1, :runs) i;
SET session_replication_role = replica;
UPDATE pg_labels.runs SET labels = '{area:acme/platform,tag:pii}'
 WHERE id IN (SELECT md5('scale' || i)::uuid FROM generate_series(1, :runs, 10) i);
RESET session_replication_role;
CREATE TABLE bench_scale_batches AS SELECT b FROM generate_series(0, (:steps - 1) / 1000000) b;
SET session_replication_role = replica;
-- a million rows per statement, each its own transaction (psql autocommit)
SELECT format($q$
INSERT INTO pg_labels.steps (id, run_id, kind, tool, labels, args, decision, rule, reason, actor,
                             created_at, slot, prev_hash, hash)
SELECT nextval('pg_labels.steps_id_seq'), md5('scale' || (1 + (i * 7919) %% %s))::uuid,
       CASE WHEN i %% 100 = 0 THEN 'gate_decided' ELSE 'tool_called' END,
       'tickets.read', '{area:acme/platform}', '{"ticket": 42}',
       CASE WHEN i %% 100 = 0 THEN 'block' ELSE 'allow' END,
       CASE WHEN i %% 100 = 0 THEN 'data_barrier' END,
       CASE WHEN i %% 100 = 0 THEN 'loaded' END,
       current_user, now() - interval '1 second' * (%s - i) / 1000,
       pg_labels.trail_slot(now()), sha256(int8send(i - 1)), sha256(int8send(i))
FROM generate_series(%s::bigint, %s) i$q$, :runs, :steps, b * 1000000 + 1, least((b + 1) * 1000000, :steps))
FROM bench_scale_batches ORDER BY b \gexec
-- every run's row names the partition its steps are in, as the trigger leaves it
UPDATE pg_labels.runs SET chain_slot = pg_labels.trail_slot(now());
RESET session_replication_role;
-- The floor: the bare table partitioned as the trail is, with a BEFORE ROW trigger written in C
-- that only sets the writer's name (contrib's insert_username), holding the bare table's rows.
-- PostgreSQL fires the trigger per row, checks the row's partition again after it, and writes
-- COPY's rows one at a time: what any enforcement by a row trigger pays before it decides
-- anything.
CREATE EXTENSION IF NOT EXISTS insert_username;
CREATE SCHEMA bench_floor;
CREATE TABLE bench_floor.steps (LIKE bench_plain.steps INCLUDING ALL) PARTITION BY LIST (slot);
SELECT format('CREATE TABLE bench_floor.steps_%s PARTITION OF bench_floor.steps FOR VALUES IN (%s)', s, s)
FROM generate_series(0, 23) s \gexec
CREATE TRIGGER floor BEFORE INSERT ON bench_floor.steps FOR EACH ROW EXECUTE FUNCTION insert_username(actor);
-- The bare table and the floor hold the same steps as their own writers leave them: the five
-- columns the benchmark's inserts give, no decision and no hashes (which no trigger adds
-- there). Their pages are then filled as their inserts fill them. Loaded with the trail's rows
-- (72 bytes more each), every page kept room for one of the bare table's smaller rows, and its
-- next inserts went back to old pages: 40,000 inserts after a checkpoint wrote 40,000
-- full-page images of its heap, 10,463 bytes of WAL per step against the trail's 2,471.
SET session_replication_role = replica;
SELECT format($q$
INSERT INTO %s.steps (run_id, kind, tool, labels, args, actor, created_at, slot)
SELECT run_id, kind, tool, labels, args, actor, created_at, slot
FROM pg_labels.steps WHERE id BETWEEN %s AND %s$q$, t,
  (SELECT min(id) FROM pg_labels.steps) + b * 1000000, (SELECT min(id) FROM pg_labels.steps) + (b + 1) * 1000000 - 1)
FROM bench_scale_batches, unnest(ARRAY['bench_plain', 'bench_floor']) t ORDER BY t DESC, b \gexec
RESET session_replication_role;
DROP TABLE bench_scale_batches;

-- an analyst of acme, and the input of the bulk writes
CREATE ROLE bench_analyst LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO bench_analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA pg_labels TO bench_analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('bench_analyst', 'acme'), (current_user, 'acme');
CREATE TABLE bench_scale_input AS
SELECT md5('scale' || (1 + (i * 104729) % :runs))::uuid AS run_id, 'tool_called'::text AS kind,
       'tickets.read'::text AS tool, '{area:acme/platform}'::labelset AS labels,
       '{"ticket": 42}'::jsonb AS args
FROM generate_series(1::bigint, 1000000) i;
VACUUM ANALYZE;
