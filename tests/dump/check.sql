SELECT (SELECT count(*) FROM pg_labels.tools) AS tools, (SELECT count(*) FROM pg_labels.listeners) AS listeners,
       (SELECT count(*) FROM pg_labels.runs) AS runs, (SELECT count(*) FROM pg_labels.steps) AS steps,
       (SELECT string_agg(kind || coalesce(':' || decision, ''), ',' ORDER BY id) FROM pg_labels.steps) AS trail,
       (SELECT labels::text FROM pg_labels.runs) AS run_labels;
