SELECT (SELECT count(*) FROM pg_labels.tools) AS tools, (SELECT count(*) FROM pg_labels.listeners) AS listeners,
       (SELECT count(*) FROM pg_labels.runs) AS runs, (SELECT count(*) FROM pg_labels.steps) AS steps,
       (SELECT string_agg(kind || coalesce(':' || decision, ''), ',' ORDER BY id) FROM pg_labels.steps) AS trail,
       (SELECT labels::text FROM pg_labels.runs WHERE id = 'e0000000-0000-0000-0000-000000000001') AS run_labels,
       (SELECT string_agg(a.labels::text || '>' || s.to_scope || '#' || coalesce(s.crossing_id::text, '-'), ',' ORDER BY s.id)
          FROM pg_labels.shares s JOIN pg_labels.artifacts a ON a.id = s.artifact_id) AS shares,
       (SELECT string_agg(id || ':' || from_scope || '>' || to_scope || ':' || authorized_by || ':' || (revoked_at IS NOT NULL), ',' ORDER BY id)
          FROM pg_labels.crossings) AS crossings,
       (SELECT string_agg(agent || '/' || version || ':' || scope || ':' || needs_approval::text, ',') FROM pg_labels.agent_versions) AS versions,
       (SELECT string_agg(role || ':' || scope, ',') FROM pg_labels.grants) AS grants;
