\set r random(1, 40)
\set ms random(0, 3)
BEGIN;
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES (md5(:r::text)::uuid, 'input', '{origin:slack}');
SELECT pg_sleep(0.001 * :ms);
COMMIT;
