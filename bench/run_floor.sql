-- The run floor (scripts/bench.sh scale, after bench/scale_setup.sql): the floor's table with a
-- trigger in C that also does what any enforcement chaining and deciding a run's steps must ask
-- of PostgreSQL (the run locked to the commit, its row read, its last step read: see
-- bench/run_floor.c), holding the floor's rows.
\set ON_ERROR_STOP on
CREATE FUNCTION public.bench_run_floor() RETURNS trigger LANGUAGE c AS '$libdir/bench_run_floor';
CREATE SCHEMA bench_run_floor;
CREATE TABLE bench_run_floor.steps (LIKE bench_plain.steps INCLUDING ALL) PARTITION BY LIST (slot);
SELECT format('CREATE TABLE bench_run_floor.steps_%s PARTITION OF bench_run_floor.steps FOR VALUES IN (%s)', s, s)
FROM generate_series(0, 23) s \gexec
CREATE TRIGGER run_floor BEFORE INSERT ON bench_run_floor.steps
    FOR EACH ROW EXECUTE FUNCTION public.bench_run_floor('pg_labels.runs', 'pg_labels.runs_pkey');
SET session_replication_role = replica;
INSERT INTO bench_run_floor.steps (run_id, kind, tool, labels, args, actor, created_at, slot)
SELECT run_id, kind, tool, labels, args, actor, created_at, slot FROM bench_floor.steps ORDER BY id;
RESET session_replication_role;
VACUUM ANALYZE bench_run_floor.steps;
