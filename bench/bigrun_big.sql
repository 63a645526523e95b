INSERT INTO pg_labels.steps (run_id, kind, tool, labels) VALUES ('b0000000-0000-0000-0000-000000100000', 'tool_called', 'bench.read', E'{origin\x3aslack/C1}');
