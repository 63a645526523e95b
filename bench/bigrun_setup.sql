-- Set-up for the big-run benchmark (scripts/bench.sh bigrun): a run carrying 100,000 labels
-- next to a run carrying one, the same tool, the same steps. Autovacuum is off on the platform
-- tables so that "fresh data" stays fresh.
\set ON_ERROR_STOP on
SELECT format('ALTER TABLE %s SET (autovacuum_enabled = off)', inhrelid::regclass)
  FROM pg_inherits WHERE inhparent = 'pg_labels.steps'::regclass \gexec
ALTER TABLE pg_labels.runs SET (autovacuum_enabled = off);
INSERT INTO pg_labels.tools (name, effect) VALUES ('bench.read', 'read'), ('bench.pay', 'financial');
INSERT INTO pg_labels.runs (id, scope) VALUES
  ('b0000000-0000-0000-0000-000000000001', 'acme/platform'),
  ('b0000000-0000-0000-0000-000000100000', 'acme/platform');
INSERT INTO pg_labels.steps (run_id, kind, labels)
SELECT 'b0000000-0000-0000-0000-000000100000', 'input', labelset(array_agg('origin:slack/C' || i))
FROM generate_series(1, 100000) i;
INSERT INTO pg_labels.steps (run_id, kind, labels)
VALUES ('b0000000-0000-0000-0000-000000000001', 'input', '{origin:slack/C1}');
SELECT id, labelset_count(labels) AS labels, pg_column_size(labels) AS bytes FROM pg_labels.runs
WHERE id::text LIKE 'b0000000%' ORDER BY 2;
