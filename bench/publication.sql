-- The publication check on 10,000-step declarations (scripts/bench.sh publication): the same
-- INSERT into pg_labels.agent_versions (checked) and into bench_versions, an identical table
-- without the trigger, alternately, 11 times each; medians. Three shapes:
--   chain:  s1 <- s2 <- ... <- s10000 (the longest path)
--   fanout: every step reads s1 and source:slack; the last 100 are reversible writes
--   random: every step reads 3 random earlier steps (30,000 edges), a few untrusted sources
\set ON_ERROR_STOP on
\pset footer off
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('b.summarize', 'read', true), ('b.fetch', 'read', false),
  ('b.update', 'reversible_write', true), ('b.refund', 'financial', true);
CREATE TABLE bench_versions (LIKE pg_labels.agent_versions INCLUDING ALL);
SELECT setseed(0.42);
CREATE TEMP TABLE decl (shape text PRIMARY KEY, steps jsonb);
INSERT INTO decl
SELECT 'chain', jsonb_build_object('steps', jsonb_agg(jsonb_build_object(
    'id', 's' || i, 'tool', CASE WHEN i = 10000 THEN 'b.refund' ELSE 'b.summarize' END,
    'inputs', jsonb_build_array(CASE WHEN i = 1 THEN 'source:agent' ELSE 's' || (i - 1) END)) ORDER BY i))
FROM generate_series(1, 10000) i;
INSERT INTO decl
SELECT 'fanout', jsonb_build_object('steps', jsonb_agg(jsonb_build_object(
    'id', 's' || i, 'tool', CASE WHEN i > 9900 THEN 'b.update' ELSE 'b.summarize' END,
    'inputs', CASE WHEN i = 1 THEN '["source:agent"]'::jsonb ELSE '["s1", "source:slack"]'::jsonb END) ORDER BY i))
FROM generate_series(1, 10000) i;
INSERT INTO decl
SELECT 'random', jsonb_build_object('steps', jsonb_agg(jsonb_build_object(
    'id', 's' || i,
    'tool', CASE WHEN i % 500 = 0 THEN 'b.update' WHEN i % 7 = 0 THEN 'b.fetch' ELSE 'b.summarize' END,
    'inputs', CASE WHEN i = 1 THEN '["source:agent"]'::jsonb
                   WHEN i % 997 = 0 THEN '["source:webhook"]'::jsonb
                   ELSE jsonb_build_array('s' || (1 + floor(random() * (i - 1)))::int,
                                          's' || (1 + floor(random() * (i - 1)))::int,
                                          's' || (1 + floor(random() * (i - 1)))::int) END) ORDER BY i))
FROM generate_series(1, 10000) i;
SELECT shape, jsonb_array_length(steps -> 'steps') AS steps, pg_column_size(steps) AS bytes FROM decl ORDER BY shape;

CREATE TEMP TABLE timing (shape text, checked boolean, ms float8);
DO $$
DECLARE d record; t0 timestamptz; r int;
BEGIN
  FOR d IN SELECT * FROM decl ORDER BY shape LOOP
    FOR r IN 1..11 LOOP
      t0 := clock_timestamp();
      INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES ('bench-' || d.shape, r, 'acme/platform', d.steps);
      INSERT INTO timing VALUES (d.shape, true, 1000 * extract(epoch FROM clock_timestamp() - t0));
      t0 := clock_timestamp();
      INSERT INTO bench_versions (agent, version, scope, steps) VALUES ('bench-' || d.shape, r, 'acme/platform', d.steps);
      INSERT INTO timing VALUES (d.shape, false, 1000 * extract(epoch FROM clock_timestamp() - t0));
    END LOOP;
  END LOOP;
END $$;
SELECT t.shape,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE checked)::numeric, 1) AS checked_ms,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE NOT checked)::numeric, 1) AS plain_ms,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE checked)
            - percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE NOT checked))::numeric, 1) AS check_ms,
       (SELECT jsonb_array_length(needs_approval) FROM pg_labels.agent_versions v
         WHERE v.agent = 'bench-' || t.shape AND v.version = 1) AS needs_approval
FROM timing t GROUP BY t.shape ORDER BY t.shape;
\echo 'goal: a 10,000-step declaration checked in well under a second'
