-- Bulk writes decide exactly as single-row inserts (issue 18): the same 1,200 steps over six
-- runs are written one INSERT per transaction into runs a…, in one INSERT ... SELECT into runs
-- b…, and in one COPY into runs c…, by a writer that is not a superuser. The three trails must
-- hold the same steps with the same decisions, rules, reasons, labels and crossings, leave
-- their runs carrying the same labels, and verify; a bulk statement with a refused call in it
-- is refused whole, with the refusal the single-row insert gets.
\pset null '(null)'
CREATE ROLE regress_pg_labels_bulk;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_bulk;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_pg_labels_bulk;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_bulk', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_pg_labels_bulk;
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('bk.lookup', 'read', true),
  ('bk.fetch', 'read', false),
  ('bk.update', 'reversible_write', true),
  ('bk.wipe', 'destructive', true),
  ('bk.pay', 'financial', true);
-- globex's sales data may enter initech/sales runs (runs 5 and 6), not initech/ops ones
SELECT pg_labels.authorize_crossing('globex/sales', 'initech/sales', 'the shared pipeline') > 0 AS crossing;

-- the steps: run r (1..6), in order n; runs 1 and 2 see only their own data and read, so
-- their tool calls are allowed; runs 3..6 take in Slack messages, untrusted results and
-- globex's data, and their gates decide allow, ask and block as the labels grow
CREATE TABLE public.bulk_input AS
SELECT n, r, kind, tool, labels, args
FROM (
  SELECT n, n % 6 + 1 AS r, (n * 7919) % 11 AS pick
  FROM generate_series(1, 1200) n
) g
CROSS JOIN LATERAL (
  SELECT * FROM (VALUES
    (0, 'input', NULL, (CASE WHEN r <= 2 THEN '{area:initech/ops}' WHEN n % 5 = 0 THEN '{area:globex/sales}' ELSE '{origin:slack}' END)::labelset, NULL::jsonb),
    (1, 'planned', NULL, '{}', NULL),
    (2, CASE WHEN r <= 2 THEN 'tool_called' ELSE 'gate_decided' END, 'bk.lookup', '{}', jsonb_build_object('q', n)),
    (3, 'tool_result', CASE WHEN r <= 2 THEN 'bk.lookup' ELSE 'bk.fetch' END, '{}', NULL),
    (4, 'gate_decided', 'bk.update', '{}', jsonb_build_object('ticket', n % 7)),
    (5, 'gate_decided', 'bk.wipe', '{}', NULL),
    (6, 'gate_decided', 'bk.pay', '{}', jsonb_build_object('amount', n)),
    (7, CASE WHEN r <= 2 THEN 'tool_called' ELSE 'gate_decided' END, 'bk.lookup',
        (CASE WHEN r >= 5 THEN '{area:initech/sales}' ELSE '{area:initech/ops}' END)::labelset, NULL),
    (8, 'approval_requested', 'bk.update', '{}', jsonb_build_object('ticket', n % 7)),
    (9, 'gate_decided', 'bk.unknown', '{}', NULL),
    (10, 'input', NULL, (CASE WHEN r <= 2 THEN '{}' ELSE '{tag:pii}' END)::labelset, NULL)
  ) v (p, kind, tool, labels, args)
  WHERE v.p = g.pick
) s;
GRANT SELECT ON public.bulk_input TO regress_pg_labels_bulk;
SELECT kind, count(*) FROM public.bulk_input GROUP BY kind ORDER BY kind;

SET ROLE regress_pg_labels_bulk;
INSERT INTO pg_labels.runs (id, scope)
SELECT format('%s0000000-0000-0000-0000-00000000000%s', via, r)::uuid,
       CASE WHEN r >= 5 THEN 'initech/sales' ELSE 'initech/ops' END
FROM unnest(ARRAY['a', 'b', 'c']) via, generate_series(1, 6) r;

-- a: one INSERT per transaction, in order (not echoed: 1,200 statements; an error would show)
\set ECHO none
\o /dev/null
SELECT format('INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args) VALUES (%L, %L, %L, %L, %L)',
              format('a0000000-0000-0000-0000-00000000000%s', r), kind, tool, labels, args)
FROM public.bulk_input ORDER BY n \gexec
\o
\set ECHO all

-- b: one INSERT ... SELECT
INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args)
SELECT format('b0000000-0000-0000-0000-00000000000%s', r)::uuid, kind, tool, labels, args
FROM public.bulk_input ORDER BY n;
RESET ROLE;

-- c: one COPY (the writer loads with COPY: it reads server files and bypasses row-level
-- security, which skips policies but never triggers)
\getenv scratch PG_LABELS_SCRATCH
\set steps_file :scratch '/bulk_steps.tsv'
COPY (SELECT format('c0000000-0000-0000-0000-00000000000%s', r)::uuid, kind, tool, labels, args
      FROM public.bulk_input ORDER BY n) TO :'steps_file';
GRANT pg_read_server_files TO regress_pg_labels_bulk;
ALTER ROLE regress_pg_labels_bulk BYPASSRLS;
SET ROLE regress_pg_labels_bulk;
COPY pg_labels.steps (run_id, kind, tool, labels, args) FROM :'steps_file';
RESET ROLE;

-- the three trails, step by step in each run's order
CREATE TEMP VIEW written AS
SELECT left(run_id::text, 1) AS via, right(run_id::text, 1)::int AS r,
       row_number() OVER (PARTITION BY run_id ORDER BY id) AS pos,
       kind, tool, labels, args, decision, rule, reason, request_id IS NOT NULL AS requested,
       crossing_ids, actor
FROM pg_labels.steps
WHERE run_id::text ~ '^[abc]0000000-';
SELECT via, count(*) AS steps,
       count(*) FILTER (WHERE decision = 'allow') AS allowed,
       count(*) FILTER (WHERE decision = 'ask') AS asked,
       count(*) FILTER (WHERE decision = 'block') AS blocked,
       count(*) FILTER (WHERE crossing_ids IS NOT NULL) AS under_crossing,
       count(DISTINCT rule) AS rules
FROM written GROUP BY via ORDER BY via;
-- every step of b and c is the step of a at the same place, and the other way round
SELECT other.via, count(d.r) AS differences
FROM (VALUES ('b'), ('c')) other (via)
LEFT JOIN LATERAL (
  (SELECT r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor
     FROM written WHERE via = 'a'
   EXCEPT ALL
   SELECT r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor
     FROM written WHERE via = other.via)
  UNION ALL
  (SELECT r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor
     FROM written WHERE via = other.via
   EXCEPT ALL
   SELECT r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor
     FROM written WHERE via = 'a')
) d ON true
GROUP BY other.via ORDER BY other.via;
-- the runs carry the same labels and hold chains of the same length, intact
SELECT r, count(DISTINCT labels) AS distinct_labels, min(labels::text) AS labels,
       count(DISTINCT chain_length) AS distinct_lengths, min(chain_length) AS length,
       bool_and((SELECT intact FROM pg_labels.verify(id))) AS intact
FROM (SELECT right(id::text, 1)::int AS r, *,
             (SELECT count(*) FROM pg_labels.steps s WHERE s.run_id = runs.id) AS chain_length
        FROM pg_labels.runs WHERE id::text ~ '^[abc]0000000-') runs
GROUP BY r ORDER BY r;

-- a refused call refuses the whole bulk statement, as it refuses the single-row insert
SET ROLE regress_pg_labels_bulk;
INSERT INTO pg_labels.steps (run_id, kind, tool)
VALUES ('a0000000-0000-0000-0000-000000000003', 'tool_called', 'bk.wipe');
INSERT INTO pg_labels.steps (run_id, kind, tool)
SELECT 'b0000000-0000-0000-0000-000000000003', kind, tool
FROM (VALUES (1, 'planned', NULL), (2, 'tool_called', 'bk.wipe'), (3, 'planned', NULL)) v (o, kind, tool)
ORDER BY o;
SELECT count(*) AS steps_of_b3 FROM pg_labels.steps WHERE run_id = 'b0000000-0000-0000-0000-000000000003';
RESET ROLE;
ALTER ROLE regress_pg_labels_bulk NOBYPASSRLS;
REVOKE pg_read_server_files FROM regress_pg_labels_bulk;
