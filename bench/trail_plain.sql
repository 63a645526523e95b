\set r random(1, 100)
INSERT INTO bench_plain.steps (run_id, kind, tool, labels, args)
VALUES (md5(:r::text)::uuid, 'tool_called', 'tickets.read', '{area:acme/platform}', '{"ticket": 42}');
