-- (the label is written with \x3a for its colon: pgbench would read :acme as a variable)
\set r random(1, 100)
INSERT INTO bench_plpgsql.steps (run_id, kind, tool, labels, args)
VALUES (md5(:r::text)::uuid, 'tool_called', 'tickets.read', E'{area\x3aacme/platform}', '{"ticket": 42}');
