-- Benchmark of the types against PostgreSQL's own: ltree (C, contrib) for containment, and
-- text[] with GIN for label search. One run, 1M rows, ratios printed at the end.
-- Run by scripts/bench.sh; not part of the test suite.
\set ON_ERROR_STOP on
\pset footer off
SET max_parallel_workers_per_gather = 0;
SET jit = off;
CREATE EXTENSION IF NOT EXISTS ltree;

-- Paths are the same in both types (no '-': ltree labels in PostgreSQL 15 do not allow it).
DROP TABLE IF EXISTS bench;
CREATE TABLE bench AS
SELECT i,
       path::scope AS s,
       replace(path, '/', '.')::ltree AS p,
       labelset(labels) AS l,
       labels AS a,
       replace(area, '/', '.')::ltree AS lp
FROM (
    SELECT i, company || CASE WHEN i % 10 = 0 THEN '' ELSE '/' || area_name
                  || CASE WHEN i % 3 = 0 THEN '/sub' || (i % 7) ELSE '' END END AS path,
           company || '/' || area_name AS area,
           array_remove(ARRAY['area:' || company || '/' || area_name,
                  CASE WHEN i % 4 = 0 THEN 'origin:slack' END,
                  CASE WHEN i % 100 = 1 THEN 'origin:webhook' END,
                  CASE WHEN i % 5 = 0 THEN 'tag:pii' END], NULL) AS labels
    FROM generate_series(1, 1000000) i,
         LATERAL (SELECT (ARRAY['acme','globex','initech','umbrella','acme2'])[1 + i % 5] AS company,
                         (ARRAY['platform','finance','support','sales'])[1 + (i / 5) % 4] AS area_name) x
) g;
CREATE INDEX bench_l_gin ON bench USING gin (l);
CREATE INDEX bench_a_gin ON bench USING gin (a);
VACUUM ANALYZE bench;

-- Median wall times of two queries, run alternately (so drift hits both alike) after a warm-up.
CREATE OR REPLACE FUNCTION pg_temp.pair_ms(ours text, baseline text, runs int DEFAULT 11,
                                           OUT ours_ms float8, OUT baseline_ms float8)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; a float8[] := '{}'; b float8[] := '{}'; n bigint;
BEGIN
    EXECUTE ours INTO n;
    EXECUTE baseline INTO n;
    FOR i IN 1..runs LOOP
        t0 := clock_timestamp();
        EXECUTE ours INTO n;
        a := a || extract(epoch FROM clock_timestamp() - t0) * 1000;
        t0 := clock_timestamp();
        EXECUTE baseline INTO n;
        b := b || extract(epoch FROM clock_timestamp() - t0) * 1000;
    END LOOP;
    ours_ms := (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x);
    baseline_ms := (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(b) x);
END $$;

CREATE TEMP TABLE results (n int, measurement text, ours float8, baseline float8, unit text, goal float8);

-- Sequential scans: the operator is evaluated on every row. The floor is the same scan with no
-- predicate; "net" ratios compare the operators' own cost above it.
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT ours_ms AS floor_ms FROM pg_temp.pair_ms($$SELECT count(*) FROM bench$$, $$SELECT count(*) FROM bench$$) \gset
INSERT INTO results SELECT 0, 'seq scan: scope = scope  vs  int4 > int4 (a built-in C operator)', p.ours_ms, p.baseline_ms, 'ms', NULL
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE s = s$$,
                         $$SELECT count(*) FROM bench WHERE i > 0$$) p;
INSERT INTO results SELECT 1, 'seq scan: scope <@ scope  vs  ltree <@ ltree', p.ours_ms, p.baseline_ms, 'ms', 1.0
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE s <@ 'acme'$$,
                         $$SELECT count(*) FROM bench WHERE p <@ 'acme'$$) p;
INSERT INTO results SELECT 2, 'seq scan: scope <@ scope (area)  vs  ltree <@ ltree', p.ours_ms, p.baseline_ms, 'ms', 1.0
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE s <@ 'globex/finance'$$,
                         $$SELECT count(*) FROM bench WHERE p <@ 'globex.finance'$$) p;
INSERT INTO results SELECT 3, 'seq scan: scope @> labelset  vs  ltree @> ltree', p.ours_ms, p.baseline_ms, 'ms', 1.0
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE 'acme'::scope @> l$$,
                         $$SELECT count(*) FROM bench WHERE 'acme'::ltree @> lp$$) p;
RESET enable_indexscan; RESET enable_bitmapscan;

-- GIN: one label among millions of rows.
SET enable_seqscan = off;
INSERT INTO results SELECT 4, 'GIN: labelset @> {origin:slack} (25%)  vs  text[] @>', p.ours_ms, p.baseline_ms, 'ms', 1.2
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE l @> '{origin:slack}'$$,
                         $$SELECT count(*) FROM bench WHERE a @> '{origin:slack}'$$, 31) p;
INSERT INTO results SELECT 5, 'GIN: labelset @> {origin:webhook} (1%)  vs  text[] @>', p.ours_ms, p.baseline_ms, 'ms', 1.2
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE l @> '{origin:webhook}'$$,
                         $$SELECT count(*) FROM bench WHERE a @> '{origin:webhook}'$$, 31) p;
INSERT INTO results SELECT 6, 'GIN: labelset ? origin:webhook (1%)  vs  text[] @>', p.ours_ms, p.baseline_ms, 'ms', 1.2
    FROM pg_temp.pair_ms($$SELECT count(*) FROM bench WHERE l ? 'origin:webhook'$$,
                         $$SELECT count(*) FROM bench WHERE a @> '{origin:webhook}'$$, 31) p;
RESET enable_seqscan;

-- Size.
INSERT INTO results SELECT 7, 'stored size: labelset  vs  text[] (average bytes)',
    avg(pg_column_size(l)), avg(pg_column_size(a)), 'bytes', 1.0 FROM bench;
INSERT INTO results SELECT 8, 'GIN index size: labelset  vs  text[] (MB)',
    pg_relation_size('bench_l_gin') / 1048576.0, pg_relation_size('bench_a_gin') / 1048576.0, 'MB', NULL;

-- Same answers, or the timings mean nothing.
SELECT (SELECT count(*) FROM bench WHERE s <@ 'acme') = (SELECT count(*) FROM bench WHERE p <@ 'acme')
   AND (SELECT count(*) FROM bench WHERE 'acme'::scope @> l) = (SELECT count(*) FROM bench WHERE 'acme'::ltree @> lp)
   AND (SELECT count(*) FROM bench WHERE l @> '{origin:slack}') = (SELECT count(*) FROM bench WHERE a @> '{origin:slack}')
   AS "same answers";

\echo 'Sequential scan floor (count(*) with no predicate):' :floor_ms 'ms'
SELECT n AS "#", measurement, round(ours::numeric, 2) AS "pg_labels", round(baseline::numeric, 2) AS baseline,
       unit, round((ours / baseline)::numeric, 2) AS ratio,
       CASE WHEN measurement LIKE 'seq scan%' THEN
            round(((ours - :floor_ms) / nullif(baseline - :floor_ms, 0))::numeric, 2) END AS "net ratio",
       goal AS "goal (ratio at most)",
       CASE WHEN goal IS NULL THEN '' WHEN ours / baseline <= goal THEN 'met' ELSE 'MISSED' END AS verdict
FROM results ORDER BY n;
