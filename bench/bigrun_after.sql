-- The rest of the big-run benchmark: steps that add a label to each run (the run's labels are
-- rewritten), a refusal's size, and lineage as an analyst on fresh data and after ANALYZE.
\set ON_ERROR_STOP on
\pset footer off
CREATE TEMP TABLE timing (what text, ms float8);
CREATE FUNCTION pg_temp.grow(run uuid, what text, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; i int;
BEGIN
  FOR i IN 1..n LOOP
    t0 := clock_timestamp();
    INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES (run, 'input', labelset(ARRAY['tag:t' || i]));
    INSERT INTO timing VALUES (what, 1000 * extract(epoch FROM clock_timestamp() - t0));
  END LOOP;
END $$;
SELECT pg_temp.grow('b0000000-0000-0000-0000-000000000001', 'a step adding a label, run of 1 label', 20);
SELECT pg_temp.grow('b0000000-0000-0000-0000-000000100000', 'a step adding a label, run of 100,000 labels', 20);
SELECT what, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS median_ms
FROM timing GROUP BY what ORDER BY what;
DO $$
DECLARE d text;
BEGIN
  INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('b0000000-0000-0000-0000-000000100000', 'tool_called', 'bench.pay');
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RAISE NOTICE 'refusal of the 100,000-label run: DETAIL of % bytes', octet_length(d);
END $$;

-- lineage on fresh data: 2,000 runs in a chain, each read carrying the big run's labels
-- (its artifact), no ANALYZE; then the same after ANALYZE
INSERT INTO pg_labels.runs (id, agent, scope)
SELECT md5('chain' || i)::uuid, 'bot-' || i, 'acme/platform' FROM generate_series(1, 2000) i;
INSERT INTO pg_labels.artifacts (id, origin_run, digest)
VALUES ('b0a00000-0000-0000-0000-000000100000', 'b0000000-0000-0000-0000-000000100000', pg_labels.digest('big'));
INSERT INTO pg_labels.artifacts (id, origin_run, digest)
SELECT md5('art' || i)::uuid, md5('chain' || i)::uuid, pg_labels.digest('content ' || i) FROM generate_series(1, 1999) i;
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('b0a00000-0000-0000-0000-000000100000', 'acme/platform');
INSERT INTO pg_labels.shares (artifact_id, to_run)
SELECT md5('art' || i)::uuid, md5('chain' || (i + 1))::uuid FROM generate_series(1, 1999) i;
INSERT INTO pg_labels.steps (run_id, kind, artifact_id)
SELECT md5('chain' || (i + 1))::uuid, 'context_read', md5('art' || i)::uuid FROM generate_series(1, 1999) i;
INSERT INTO pg_labels.steps (run_id, kind, artifact_id)
SELECT md5('chain' || i)::uuid, 'context_read', 'b0a00000-0000-0000-0000-000000100000' FROM generate_series(1, 2000, 50) i;
CREATE ROLE bench_analyst;
GRANT USAGE ON SCHEMA pg_labels TO bench_analyst;
GRANT SELECT ON pg_labels.steps, pg_labels.runs TO bench_analyst;
INSERT INTO pg_labels.grants VALUES ('bench_analyst', 'acme');
GRANT ALL ON timing TO bench_analyst;
CREATE FUNCTION pg_temp.lineage_ms(what text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; n bigint;
BEGIN
  t0 := clock_timestamp();
  SELECT count(*) INTO n FROM pg_labels.lineage(md5('chain2000')::uuid);
  INSERT INTO timing VALUES (what || ' (' || n || ' rows)', 1000 * extract(epoch FROM clock_timestamp() - t0));
END $$;
BEGIN;
SET LOCAL ROLE bench_analyst;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
SELECT pg_temp.lineage_ms('lineage as analyst, fresh data');
COMMIT;
ANALYZE pg_labels.steps;
ANALYZE pg_labels.runs;
BEGIN;
SET LOCAL ROLE bench_analyst;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
SELECT pg_temp.lineage_ms('lineage as analyst, after ANALYZE');
COMMIT;
SELECT what, round(ms::numeric, 1) AS ms FROM timing WHERE what LIKE 'lineage%' ORDER BY what;
