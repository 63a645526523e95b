-- Bulk writes decide exactly as single-row inserts, on random steps (issue 50's property; bulk.sql
-- is the same on one fixed set). Three rounds, each drawing 400 steps over four runs at random
-- (a new draw on every run of the test), are written one INSERT per transaction into runs a…,
-- in one INSERT ... SELECT into runs b… and in one COPY into runs c…, by a writer that is not a
-- superuser. In every round the three trails must hold the same steps, with the same decisions,
-- rules, reasons, labels, crossings, scopes and requests, ids order aside (a run's steps in the
-- order they were decided), leave their runs carrying the same labels, and verify. Then, inside
-- a bulk statement: a granted approval lets exactly one call through, as one row does, and a
-- refused call refuses the whole statement with the single row's refusal.
\pset null '(null)'
CREATE ROLE regress_pg_labels_bulkr;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_bulkr;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_pg_labels_bulkr;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_bulkr', '*') ON CONFLICT DO NOTHING;
GRANT SELECT ON pg_labels.tools TO regress_pg_labels_bulkr;
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
  ('br.lookup', 'read', true),
  ('br.fetch', 'read', false),
  ('br.update', 'reversible_write', true),
  ('br.wipe', 'destructive', true),
  ('br.pay', 'financial', true);
SELECT pg_labels.authorize_crossing('globex/sales', 'initech/sales', 'the shared pipeline') > 0 AS crossing;

-- the draw: round g (1..3), step n, run r (1..4: 1 and 3 in initech/ops, 2 and 4 in
-- initech/sales). Runs 1 and 2 take in only their own area's data, so a tool call there is
-- allowed and is written as tool_called; runs 3 and 4 take in anything (Slack, globex, pii,
-- untrusted results), where their calls are gates, which decide allow, ask or block
CREATE TABLE public.bulkr_input AS
SELECT g, n, r, kind, tool, labels, args
FROM (
  SELECT g, n, r, CASE WHEN r % 2 = 0 THEN '{area:initech/sales}' ELSE '{area:initech/ops}' END AS own,
         floor(random() * 9)::int AS pick, floor(random() * 6)::int AS lab, floor(random() * 5)::int AS t,
         floor(random() * 1000)::int AS x
  FROM (SELECT g, n, 1 + floor(random() * 4)::int AS r
          FROM generate_series(1, 3) g, generate_series(1, 400) n) gn
) d
CROSS JOIN LATERAL (
  SELECT * FROM (VALUES
    (0, 'input', NULL,
        (CASE WHEN r <= 2 THEN (ARRAY['{}', own, '{}', own, '{}', '{}'])[lab + 1]
              ELSE (ARRAY['{origin:slack}', '{area:globex/sales}', '{tag:pii}', '{area:initech/sales}',
                          '{origin:slack,tag:pii}', '{}'])[lab + 1] END)::labelset,
        NULL::jsonb),
    (1, 'planned', NULL, '{}', jsonb_build_object('plan', x)),
    (2, CASE WHEN r <= 2 THEN 'tool_called' ELSE 'gate_decided' END,
        CASE WHEN r <= 2 THEN 'br.lookup' ELSE (ARRAY['br.lookup', 'br.fetch', 'br.update', 'br.wipe', 'br.pay'])[t + 1] END,
        '{}', jsonb_build_object('q', x)),
    (3, 'tool_result', CASE WHEN r <= 2 THEN 'br.lookup' ELSE (ARRAY['br.lookup', 'br.fetch'])[t % 2 + 1] END, '{}', NULL),
    (4, 'gate_decided', (ARRAY['br.update', 'br.wipe', 'br.pay', 'br.fetch', 'br.none'])[t + 1], '{}',
        jsonb_build_object('ticket', x % 7)),
    (5, 'approval_requested', (ARRAY['br.update', 'br.wipe', 'br.pay', 'br.update', 'br.pay'])[t + 1], '{}',
        jsonb_build_object('ticket', x % 7)),
    (6, CASE WHEN r <= 2 THEN 'tool_called' ELSE 'gate_decided' END, 'br.lookup', own::labelset, NULL),
    (7, 'input', NULL, '{}', NULL),
    (8, 'tool_result', 'br.lookup', '{}', jsonb_build_object('rows', x))
  ) v (p, kind, tool, labels, args)
  WHERE v.p = d.pick
) s;
GRANT SELECT ON public.bulkr_input TO regress_pg_labels_bulkr;
SELECT g, count(*) AS steps FROM public.bulkr_input GROUP BY g ORDER BY g;

SET ROLE regress_pg_labels_bulkr;
INSERT INTO pg_labels.runs (id, scope)
SELECT format('%s%s000000-0000-0000-0000-00000000000%s', via, g, r)::uuid,
       CASE WHEN r % 2 = 0 THEN 'initech/sales' ELSE 'initech/ops' END
FROM unnest(ARRAY['a', 'b', 'c']) via, generate_series(1, 3) g, generate_series(1, 4) r;

-- a: one INSERT per transaction, in order (not echoed: 1,200 statements; an error would show)
\set ECHO none
\o /dev/null
SELECT format('INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args) VALUES (%L, %L, %L, %L, %L)',
              format('a%s000000-0000-0000-0000-00000000000%s', g, r), kind, tool, labels, args)
FROM public.bulkr_input ORDER BY g, n \gexec
\o
\set ECHO all

-- b: one INSERT ... SELECT per round
INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args)
SELECT format('b1000000-0000-0000-0000-00000000000%s', r)::uuid, kind, tool, labels, args
FROM public.bulkr_input WHERE g = 1 ORDER BY n;
INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args)
SELECT format('b2000000-0000-0000-0000-00000000000%s', r)::uuid, kind, tool, labels, args
FROM public.bulkr_input WHERE g = 2 ORDER BY n;
INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args)
SELECT format('b3000000-0000-0000-0000-00000000000%s', r)::uuid, kind, tool, labels, args
FROM public.bulkr_input WHERE g = 3 ORDER BY n;
RESET ROLE;

-- c: one COPY of all three rounds
\getenv scratch PG_LABELS_SCRATCH
\set steps_file :scratch '/bulkr_steps.tsv'
COPY (SELECT format('c%s000000-0000-0000-0000-00000000000%s', g, r)::uuid, kind, tool, labels, args
      FROM public.bulkr_input ORDER BY g, n) TO :'steps_file';
GRANT pg_read_server_files TO regress_pg_labels_bulkr;
ALTER ROLE regress_pg_labels_bulkr BYPASSRLS;
SET ROLE regress_pg_labels_bulkr;
COPY pg_labels.steps (run_id, kind, tool, labels, args) FROM :'steps_file';
RESET ROLE;

-- the three trails, step by step in each run's order
CREATE TEMP VIEW bulkr_written AS
SELECT left(run_id::text, 1) AS via, substr(run_id::text, 2, 1)::int AS g, right(run_id::text, 1)::int AS r,
       row_number() OVER (PARTITION BY run_id ORDER BY id) AS pos,
       kind, tool, labels, args, decision, rule, reason, request_id IS NOT NULL AS requested,
       crossing_ids, actor, carried_scope, run_scope, slot, created_at
FROM pg_labels.steps
WHERE run_id::text ~ '^[abc][123]000000-';
-- every round wrote every drawn step, and its gates decided more than one way
SELECT via, count(*) = 1200 AS all_written,
       count(DISTINCT decision) >= 2 AS decisions_vary
FROM bulkr_written GROUP BY via ORDER BY via;
-- every step of b and c is the step of a at the same place, and the other way round
SELECT other.via, count(d.r) AS differences
FROM (VALUES ('b'), ('c')) other (via)
LEFT JOIN LATERAL (
  (SELECT g, r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor,
          carried_scope, run_scope, slot
     FROM bulkr_written WHERE via = 'a'
   EXCEPT ALL
   SELECT g, r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor,
          carried_scope, run_scope, slot
     FROM bulkr_written WHERE via = other.via)
  UNION ALL
  (SELECT g, r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor,
          carried_scope, run_scope, slot
     FROM bulkr_written WHERE via = other.via
   EXCEPT ALL
   SELECT g, r, pos, kind, tool, labels, args, decision, rule, reason, requested, crossing_ids, actor,
          carried_scope, run_scope, slot
     FROM bulkr_written WHERE via = 'a')
) d ON true
GROUP BY other.via ORDER BY other.via;
-- a bulk statement's steps carry its transaction's time, as a single row does (three
-- statements of b, one COPY of c)
SELECT via, count(DISTINCT created_at) AS times FROM bulkr_written WHERE via <> 'a' GROUP BY via ORDER BY via;
-- the runs carry the same labels and hold chains of the same length, every one intact
SELECT count(*) AS runs_differing
FROM (SELECT substr(id::text, 2) AS place, count(DISTINCT labels) AS labels,
             count(DISTINCT (SELECT count(*) FROM pg_labels.steps s WHERE s.run_id = runs.id)) AS lengths
        FROM pg_labels.runs WHERE id::text ~ '^[abc][123]000000-'
       GROUP BY 1) p
WHERE labels <> 1 OR lengths <> 1;
SELECT count(*) AS runs, bool_and((SELECT intact FROM pg_labels.verify(id))) AS intact
FROM pg_labels.runs WHERE id::text ~ '^[abc][123]000000-';

-- inside a bulk statement, a granted approval lets exactly one identical call through, as a
-- single row: runs a9…1 and b9…1 take in a Slack message, an update is requested for each,
-- and a person grants both
CREATE ROLE regress_pg_labels_bulkr_approver;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_bulkr_approver;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_pg_labels_bulkr_approver;
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_bulkr_approver', '*');
SET ROLE regress_pg_labels_bulkr;
INSERT INTO pg_labels.runs (id, scope)
SELECT format('%s9000000-0000-0000-0000-00000000000%s', via, r)::uuid, 'initech/ops'
FROM unnest(ARRAY['a', 'b']) via, generate_series(1, 2) r;
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT id, 'input', '{origin:slack}' FROM pg_labels.runs WHERE id::text ~ '^[ab]9000000-' ORDER BY id;
CREATE TEMP TABLE bulkr_requests AS
SELECT via, pg_labels.request_approval(format('%s9000000-0000-0000-0000-000000000001', via)::uuid,
                                       'br.update', '{"ticket": 1}', '{}', 'a bulk load') AS request
FROM unnest(ARRAY['a', 'b']) via;
GRANT SELECT ON bulkr_requests TO regress_pg_labels_bulkr_approver;
RESET ROLE;
SET ROLE regress_pg_labels_bulkr_approver;
SELECT count(pg_labels.decide_approval(request, true, 'ok')) AS granted FROM bulkr_requests;
RESET ROLE;
SET ROLE regress_pg_labels_bulkr;
-- a: the call, then the same call again (refused: the approval was used)
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
VALUES ('a9000000-0000-0000-0000-000000000001', 'tool_called', 'br.update', '{"ticket": 1}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
VALUES ('a9000000-0000-0000-0000-000000000001', 'tool_called', 'br.update', '{"ticket": 1}');
-- b: both calls in one statement: refused whole, with the second row's refusal
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
SELECT 'b9000000-0000-0000-0000-000000000001', 'tool_called', 'br.update', '{"ticket": 1}'
FROM generate_series(1, 2);
-- the call in one statement with other steps around it: let through, once
INSERT INTO pg_labels.steps (run_id, kind, tool, args)
SELECT 'b9000000-0000-0000-0000-000000000001', kind, tool, args::jsonb
FROM (VALUES (1, 'planned', NULL, NULL), (2, 'tool_called', 'br.update', '{"ticket": 1}'),
             (3, 'tool_result', 'br.update', NULL)) v (o, kind, tool, args)
ORDER BY o;
RESET ROLE;
SELECT q.via, s.decision, s.rule, s.reason ~ 'approved \(request' AS approved
FROM pg_labels.steps s JOIN bulkr_requests q ON s.request_id = q.request
WHERE s.kind = 'tool_called' ORDER BY q.via;

-- a refused call refuses the whole bulk statement, as it refuses the single-row insert
SET ROLE regress_pg_labels_bulkr;
INSERT INTO pg_labels.steps (run_id, kind, tool)
VALUES ('a9000000-0000-0000-0000-000000000002', 'tool_called', 'br.wipe');
INSERT INTO pg_labels.steps (run_id, kind, tool)
SELECT 'b9000000-0000-0000-0000-000000000002', kind, tool
FROM (VALUES (1, 'planned', NULL), (2, 'tool_called', 'br.wipe'), (3, 'planned', NULL)) v (o, kind, tool)
ORDER BY o;
RESET ROLE;
SELECT run_id, count(*) AS steps FROM pg_labels.steps
WHERE run_id::text ~ '^[ab]9000000-.*2$' GROUP BY run_id ORDER BY run_id;
ALTER ROLE regress_pg_labels_bulkr NOBYPASSRLS;
REVOKE pg_read_server_files FROM regress_pg_labels_bulkr;
