-- Retention (scripts/bench.sh purge): remove a month of a trail of PURGE_STEPS steps (10
-- million by default) and a few more, two ways, on the same rows:
--   (a) pg_labels.purge(): the month's partition of the ring is emptied (TRUNCATE); and (a'),
--       the part that stays row by row: a cutoff in the middle of a month;
--   (b) what 0.1.0 did: DELETE of the month's rows from one table with the same columns and
--       indexes (bench_plain.steps), then the VACUUM that gives their space back.
-- Time and WAL of each, from one run. The rows are loaded as a restore loads them (triggers
-- off): this measures removing them, not writing them.
\set ON_ERROR_STOP on
\if :{?steps}
\else
\set steps 10000000
\endif
SET session_replication_role = replica;
ALTER TABLE pg_labels.runs SET (autovacuum_enabled = off);
CREATE SCHEMA bench_plain;
CREATE TABLE bench_plain.steps (LIKE pg_labels.steps INCLUDING ALL) WITH (autovacuum_enabled = off);

-- the month to purge is three months ago (UTC), the month the cutoff falls in two months ago
-- (retention keeps the current month and the one before it)
SELECT date_trunc('month', now() AT TIME ZONE 'UTC' - interval '3 months') AT TIME ZONE 'UTC' AS old_month,
       date_trunc('month', now() AT TIME ZONE 'UTC' - interval '2 months') AT TIME ZONE 'UTC' AS cut_month \gset
-- 10,000 runs opened in the old month; half of them go on into the next (over 25 days of it)
INSERT INTO pg_labels.runs (id, scope, labels, opened_at)
SELECT md5('run' || r)::uuid, 'acme/platform', '{area:acme/platform}', :'old_month'::timestamptz + r * interval '1 second'
FROM generate_series(1, 10000) r;
INSERT INTO pg_labels.steps (id, run_id, kind, tool, labels, args, actor, created_at, slot)
SELECT i, md5('run' || (i % 10000 + 1))::uuid, 'tool_called', 'tickets.read', '{origin:tool}',
       '{"ticket": 1}', 'platform', t, pg_labels.trail_slot(t)
FROM generate_series(1, :steps) i, LATERAL (SELECT :'old_month'::timestamptz + (i % 2000000) * interval '1 second' AS t) x;
INSERT INTO pg_labels.steps (id, run_id, kind, tool, labels, args, actor, created_at, slot)
SELECT :steps + i, md5('run' || (i % 5000 + 1))::uuid, 'tool_called', 'tickets.read', '{origin:tool}',
       '{"ticket": 1}', 'platform', t, pg_labels.trail_slot(t)
FROM generate_series(1, :steps / 10) i, LATERAL (SELECT :'cut_month'::timestamptz + (i % 25) * interval '1 day' + (i % 86400) * interval '1 second' AS t) x;
INSERT INTO bench_plain.steps SELECT * FROM pg_labels.steps;
RESET session_replication_role;
VACUUM ANALYZE pg_labels.steps, pg_labels.runs, bench_plain.steps;
CHECKPOINT;

SELECT count(*) AS steps, pg_size_pretty(pg_total_relation_size('bench_plain.steps')) AS trail_size
FROM bench_plain.steps;

-- (a) purge() at the first day of the cut month: the old month goes whole (and the 5,000 runs
--     that ended in it)
SELECT pg_current_wal_insert_lsn() AS lsn0, clock_timestamp() AS t0 \gset
SELECT pg_labels.purge(:'cut_month') AS runs_purged;
SELECT pg_current_wal_insert_lsn() AS lsn1, clock_timestamp() AS t1 \gset
-- (a') then purge() in the middle of the cut month: what remains row by row, the runs that ended
--      before the cutoff in that month (their steps, then them)
SELECT count(*) AS steps_of_runs_ending_before_the_cutoff FROM pg_labels.steps s
 WHERE NOT EXISTS (SELECT FROM pg_labels.steps l WHERE l.run_id = s.run_id AND l.created_at >= :'cut_month'::timestamptz + interval '10 days');
SELECT pg_current_wal_insert_lsn() AS lsn5, clock_timestamp() AS t5 \gset
SELECT pg_labels.purge(:'cut_month'::timestamptz + interval '10 days') AS runs_purged;
SELECT pg_current_wal_insert_lsn() AS lsn6, clock_timestamp() AS t6 \gset

-- (b) DELETE of the same month, then VACUUM
SELECT pg_current_wal_insert_lsn() AS lsn2, clock_timestamp() AS t2 \gset
DELETE FROM bench_plain.steps WHERE created_at < :'cut_month';
SELECT pg_current_wal_insert_lsn() AS lsn3, clock_timestamp() AS t3 \gset
VACUUM bench_plain.steps;
SELECT pg_current_wal_insert_lsn() AS lsn4, clock_timestamp() AS t4 \gset

SELECT (SELECT count(*) FROM pg_labels.steps) AS steps_left_a, (SELECT count(*) FROM bench_plain.steps) AS steps_left_b;
SELECT x.how, round(x.seconds::numeric, 3) AS seconds, pg_size_pretty(x.wal) AS wal
FROM (VALUES
    ('(a) purge(): the month''s partition emptied (TRUNCATE)', extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz), pg_wal_lsn_diff(:'lsn1', :'lsn0')),
    ('(b) 0.1.0: DELETE the month''s rows', extract(epoch FROM :'t3'::timestamptz - :'t2'::timestamptz), pg_wal_lsn_diff(:'lsn3', :'lsn2')),
    ('(b) then VACUUM (gives the space back)', extract(epoch FROM :'t4'::timestamptz - :'t3'::timestamptz), pg_wal_lsn_diff(:'lsn4', :'lsn3')),
    ('(a'') purge() mid-month: runs ending before the cutoff, row by row', extract(epoch FROM :'t6'::timestamptz - :'t5'::timestamptz), pg_wal_lsn_diff(:'lsn6', :'lsn5'))
) x(how, seconds, wal);
