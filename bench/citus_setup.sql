-- Set-up for the Citus benchmark (scripts/bench.sh citus): the tools and 100 runs that
-- bench/trail_labels.sql writes steps to, on one node and on a Citus cluster alike.
\set ON_ERROR_STOP on
INSERT INTO pg_labels.tools (name, effect) VALUES ('tickets.read', 'read'), ('tickets.update', 'reversible_write');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(1, 100) i;
-- the bare table: the trail's columns, defaults, constraints and indexes, no trigger (on Citus,
-- distributed like the trail: by run, co-located with the runs)
CREATE SCHEMA bench_plain;
CREATE TABLE bench_plain.steps (LIKE pg_labels.steps INCLUDING ALL);
ALTER TABLE bench_plain.steps ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        EXECUTE $c$SELECT create_distributed_table('bench_plain.steps', 'run_id', colocate_with => 'pg_labels.runs')$c$;
    END IF;
END
$$;
