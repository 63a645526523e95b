-- A step finds the hash of its run's last step by reading the trail index's pages itself
-- (src/pg/btree.rs): from the leaf page where it found the run last time, or down from the
-- root, and with no row read when that step is the last one this backend committed. When the
-- pages prove nothing, PostgreSQL's index scan is asked. Here the index is three levels tall,
-- its pages split under the searches, steps of aborted transactions lie past runs' last steps,
-- another connection writes runs' last steps, and VACUUM deletes pages a search starts from:
-- every chain holds, step for step.
SET client_min_messages = warning;
CREATE TABLE public.pages_runs AS
SELECT r, md5('pages ' || r)::uuid AS id FROM generate_series(1, 300) r;
INSERT INTO pg_labels.runs (id, scope) SELECT id, 'acme/platform' FROM public.pages_runs;

-- 90,000 steps in one statement, over the 300 runs in turn
INSERT INTO pg_labels.steps (run_id, kind)
SELECT p.id, 'planned' FROM generate_series(1, 90000) n JOIN public.pages_runs p ON p.r = n % 300 + 1
ORDER BY n;
-- the partition's (run_id, id) index: more leaf pages than one page can point to, so a search
-- goes down through three levels
SELECT max(pg_relation_size(i.indexrelid)) / current_setting('block_size')::int > 400 AS three_levels
  FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indrelid
 WHERE h.inhparent = 'pg_labels.steps'::regclass
   AND (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) = '{run_id,id}';

-- 3,000 steps, one transaction each, over the runs in a scattered order: each finds its run's
-- last step from the page it was found on last time (pages split meanwhile)
\set ECHO none
SELECT format('INSERT INTO pg_labels.steps (run_id, kind) VALUES (%L, ''planned'')', p.id)
  FROM generate_series(1, 3000) n JOIN public.pages_runs p ON p.r = (n * 7919) % 300 + 1
 ORDER BY n \gexec
\set ECHO all

-- steps of a transaction that aborts: their entries lie past 50 runs' last steps
BEGIN;
INSERT INTO pg_labels.steps (run_id, kind) SELECT id, 'planned' FROM public.pages_runs WHERE r <= 50;
INSERT INTO pg_labels.steps (run_id, kind) SELECT id, 'planned' FROM public.pages_runs WHERE r <= 50;
ROLLBACK;
\set ECHO none
SELECT format('INSERT INTO pg_labels.steps (run_id, kind) VALUES (%L, ''planned'')', id)
  FROM public.pages_runs WHERE r <= 60 ORDER BY r \gexec
\set ECHO all

-- another connection writes the last step of runs 41..80
\setenv PGDATABASE :DBNAME
\! "$PG_LABELS_PSQL" -X -q -U postgres -c "INSERT INTO pg_labels.steps (run_id, kind) SELECT md5('pages ' || r)::uuid, 'planned' FROM generate_series(41, 80) r"
\set ECHO none
SELECT format('INSERT INTO pg_labels.steps (run_id, kind) VALUES (%L, ''planned'')', id)
  FROM public.pages_runs WHERE r BETWEEN 31 AND 90 ORDER BY r \gexec
\set ECHO all

-- 300 steps, one transaction each, to two runs next to each other in the index's order (and
-- a third, further on) in turns: a search looks for the run's last entry right after where it
-- was found last time, which holds in the run's turn and misses when the neighbour's entries
-- moved it on the page
CREATE TABLE public.pages_next AS
SELECT id, row_number() OVER (ORDER BY id) AS k FROM public.pages_runs WHERE r <= 280;
\set ECHO none
SELECT format('INSERT INTO pg_labels.steps (run_id, kind) VALUES (%L, ''planned'')', x.id)
  FROM generate_series(0, 299) n
  JOIN public.pages_next x ON x.k = CASE WHEN n % 7 = 6 THEN 200 ELSE 100 + (n / 5) % 2 END
 ORDER BY n \gexec
\set ECHO all
DROP TABLE public.pages_next;

-- runs 281..300 lose every step (a superuser in replica mode, around the triggers), and
-- VACUUM deletes the pages they leave empty: their next steps may start from a deleted page, and
-- chain to the run's checkpoint, where a scan of the index would chain them
CREATE TABLE public.pages_cut AS
SELECT p.id, r.chain_head FROM public.pages_runs p JOIN pg_labels.runs r USING (id) WHERE p.r > 280;
SET session_replication_role = replica;
DELETE FROM pg_labels.steps WHERE run_id IN (SELECT id FROM public.pages_cut);
RESET session_replication_role;
VACUUM pg_labels.steps;
\set ECHO none
SELECT format('INSERT INTO pg_labels.steps (run_id, kind) VALUES (%L, ''planned'')', id)
  FROM public.pages_cut ORDER BY id \gexec
\set ECHO all
SELECT count(*) AS chained_to_the_checkpoint
  FROM public.pages_cut c JOIN pg_labels.steps s ON s.run_id = c.id AND s.prev_hash = c.chain_head;

-- every other run: its chain intact, with every step it was given
SELECT count(*) FILTER (WHERE v.intact) AS intact, count(*) AS runs, sum(v.steps) AS steps
  FROM public.pages_runs p, pg_labels.verify(p.id) v WHERE p.r <= 280;
SELECT count(*) AS steps_written FROM pg_labels.steps s JOIN public.pages_runs p ON p.id = s.run_id WHERE p.r <= 280;
DROP TABLE public.pages_runs, public.pages_cut;
