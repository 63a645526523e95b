\set r random(1, 40)
\set num random(1, 20)
INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES (md5(:r::text)::uuid, 'tool_called', 'stress.read', labelset(ARRAY['tag' || ':' || 'n' || :num]));
