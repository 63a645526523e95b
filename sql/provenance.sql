-- pg_labels: provenance for analysts, in plain SQL. The views run with the caller's rights
-- (security_invoker), so row-level security decides what each analyst sees.

CREATE INDEX steps_context_read_idx ON pg_labels.steps (run_id) WHERE kind = 'context_read';

CREATE VIEW pg_labels.trail WITH (security_invoker = true) AS
SELECT s.id, s.run_id, r.scope AS run_scope, r.agent, r.agent_version, s.kind, s.tool, s.labels,
       s.args, s.decision, s.rule, s.reason, s.request_id, s.origin_run, s.artifact_id, s.digest,
       s.share_id, s.crossing_ids, s.actor, s.created_at
FROM pg_labels.steps s
JOIN pg_labels.runs r ON r.id = s.run_id;
COMMENT ON VIEW pg_labels.trail IS 'Every step with its run''s scope and agent, ready to read';

CREATE VIEW pg_labels.refusals WITH (security_invoker = true) AS
SELECT t.id AS step_id, t.run_id, t.run_scope, t.agent, t.tool, t.args, t.labels, t.decision,
       t.rule, t.reason, t.actor, t.created_at
FROM pg_labels.trail t
WHERE t.kind = 'gate_decided' AND t.decision IN ('block', 'ask');
COMMENT ON VIEW pg_labels.refusals IS
    'Gate decisions that blocked a call or asked for a person, by rule (refused tool_called steps roll back and leave no row)';

CREATE FUNCTION pg_labels.lineage(run uuid)
RETURNS TABLE (depth int, run_id uuid, scope @extschema@.scope, agent text, artifact_id uuid,
               digest text, labels @extschema@.labelset, read_by uuid, read_step bigint,
               read_at timestamptz)
AS 'MODULE_PATHNAME', 'pgl_lineage' LANGUAGE C STABLE STRICT ROWS 100;
COMMENT ON FUNCTION pg_labels.lineage(uuid) IS
    'Every upstream run reached through context reads, breadth first: the run read (run_id, its scope and agent), the artifact, digest and labels read, which run read it (read_by) and the depth; each run expanded once, so cycles end';

CREATE FUNCTION pg_labels.lineage_dot(run uuid) RETURNS text
AS 'MODULE_PATHNAME', 'pgl_lineage_dot' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION pg_labels.lineage_dot(uuid) IS
    'pg_labels.lineage(run) as a Graphviz DOT graph: runs as boxes (the run itself in bold), one edge per context read labelled with the digest and labels';
