-- Set-up for the Citus benchmark (scripts/bench.sh citus): the tools and 100 runs that
-- bench/trail_labels.sql writes steps to, on one node and on a Citus cluster alike.
\set ON_ERROR_STOP on
INSERT INTO pg_labels.tools (name, effect) VALUES ('tickets.read', 'read'), ('tickets.update', 'reversible_write');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(1, 100) i;
