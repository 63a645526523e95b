\set r random(1, 100)
INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args)
VALUES (md5(:r::text)::uuid, 'tool_called', 'tickets.read', '{area:acme/platform}', '{"ticket": 42}');
