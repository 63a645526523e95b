-- Lineage over a 10,000-run chain (scripts/bench.sh lineage): run i read the artifact of run
-- i - 1. pg_labels.lineage() and lineage_dot() of the last run, as the superuser and as an
-- analyst under row-level security (scope acme); medians of 11.
\set ON_ERROR_STOP on
\pset footer off
INSERT INTO pg_labels.runs (id, agent, scope)
SELECT md5('chain' || i)::uuid, 'bot-' || i, 'acme/platform' FROM generate_series(1, 10000) i;
INSERT INTO pg_labels.artifacts (id, origin_run, digest)
SELECT md5('art' || i)::uuid, md5('chain' || i)::uuid, pg_labels.digest('content ' || i) FROM generate_series(1, 9999) i;
INSERT INTO pg_labels.shares (artifact_id, to_run)
SELECT md5('art' || i)::uuid, md5('chain' || (i + 1))::uuid FROM generate_series(1, 9999) i;
INSERT INTO pg_labels.steps (run_id, kind, artifact_id)
SELECT md5('chain' || (i + 1))::uuid, 'context_read', md5('art' || i)::uuid FROM generate_series(1, 9999) i;
ANALYZE pg_labels.steps;
ANALYZE pg_labels.runs;
CREATE ROLE bench_analyst;
GRANT USAGE ON SCHEMA pg_labels TO bench_analyst;
GRANT SELECT ON pg_labels.steps, pg_labels.runs TO bench_analyst;
INSERT INTO pg_labels.grants VALUES ('bench_analyst', 'acme');
CREATE TEMP TABLE timing (what text, ms float8, n bigint);
GRANT ALL ON timing TO bench_analyst;
CREATE FUNCTION pg_temp.measure(what text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; n bigint; r int;
BEGIN
  FOR r IN 1..11 LOOP
    t0 := clock_timestamp();
    EXECUTE q INTO n;
    INSERT INTO timing VALUES (what, 1000 * extract(epoch FROM clock_timestamp() - t0), n);
  END LOOP;
END $$;
SELECT pg_temp.measure('lineage, superuser', $$SELECT count(*) FROM pg_labels.lineage(md5('chain10000')::uuid)$$);
SELECT pg_temp.measure('lineage_dot, superuser', $$SELECT length(pg_labels.lineage_dot(md5('chain10000')::uuid))$$);
BEGIN;
SET LOCAL ROLE bench_analyst;
SELECT pg_labels.enter_scope('acme') IS NOT NULL AS entered;
SELECT pg_temp.measure('lineage, analyst under RLS', $$SELECT count(*) FROM pg_labels.lineage(md5('chain10000')::uuid)$$);
COMMIT;
SELECT what, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS median_ms,
       round(min(ms)::numeric, 1) AS min_ms, max(n) AS rows_or_bytes
FROM timing GROUP BY what ORDER BY what;
SELECT max(depth) AS deepest FROM pg_labels.lineage(md5('chain10000')::uuid);
\echo 'goal: lineage over a 10,000-run chain in well under a second'
