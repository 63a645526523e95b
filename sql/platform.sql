-- pg_labels: the platform tables (schema pg_labels), their enforcement triggers, the gate,
-- approvals and retention. The triggers are C functions (src/trail.rs, src/seal.rs); they read
-- and update the platform tables as the tables' owner, so writers need no privilege beyond
-- INSERT (and SELECT) on runs and steps.

-- The pg_ prefix is reserved, so creating this schema needs allow_system_table_mods, for this
-- one statement (CREATE EXTENSION runs as a superuser and restores settings at its end anyway).
SET allow_system_table_mods = on;
CREATE SCHEMA pg_labels;
RESET allow_system_table_mods;
COMMENT ON SCHEMA pg_labels IS 'pg_labels platform tables: runs, steps, tools, listeners';

--------------------------------------------------------------------------------------------
-- Tables
--------------------------------------------------------------------------------------------

CREATE TABLE pg_labels.tools (
    name text PRIMARY KEY,
    effect text NOT NULL
        CONSTRAINT tools_effect_check CHECK (effect IN ('read', 'reversible_write', 'destructive', 'financial')),
    trusted_output boolean NOT NULL DEFAULT false,
    description text,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.tools IS
    'The tool catalog: a tool_called step naming a tool absent from it is refused (unknown_tool)';
COMMENT ON COLUMN pg_labels.tools.effect IS 'read, reversible_write, destructive or financial';
COMMENT ON COLUMN pg_labels.tools.trusted_output IS
    'false: the tool''s results come from outside, and a tool_result step of it carries origin:tool';

CREATE TABLE pg_labels.listeners (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent text,
    scope @extschema@.scope NOT NULL,
    event text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.listeners IS 'Event bindings: which agent listens, in which scope, to which event';

CREATE TABLE pg_labels.runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent text,
    agent_version int,
    scope @extschema@.scope NOT NULL,
    labels @extschema@.labelset NOT NULL DEFAULT '{}',
    listener_id bigint REFERENCES pg_labels.listeners (id),
    opened_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.runs IS
    'Agent runs: scope is sealed when the run is opened; labels is the union of everything that entered the run and only grows';
CREATE INDEX runs_scope_idx ON pg_labels.runs (scope);
CREATE INDEX runs_labels_idx ON pg_labels.runs USING gin (labels);
CREATE INDEX runs_opened_at_idx ON pg_labels.runs (opened_at);

-- run_id is checked by the insert trigger, which locks the run row anyway (23503 when the run
-- does not exist); runs are never deleted but by pg_labels.purge(), which removes their steps
-- first. So no foreign key, whose own check would lock the same row a second time.
-- id and created_at are the database's: the insert trigger takes the id from steps_id_seq
-- under the run's lock (so ids follow the order in which a run's steps were decided) and
-- refuses a writer's id, time or actor.
CREATE TABLE pg_labels.steps (
    id bigint NOT NULL PRIMARY KEY,
    run_id uuid NOT NULL,
    kind text NOT NULL
        CONSTRAINT steps_kind_check CHECK (kind IN ('input', 'planned', 'gate_decided', 'approval_requested',
                                                    'approval_decided', 'tool_called', 'tool_result', 'context_read')),
    tool text,
    labels @extschema@.labelset NOT NULL DEFAULT '{}',
    args jsonb,
    decision text
        CONSTRAINT steps_decision_check CHECK (decision IN ('allow', 'ask', 'block', 'granted', 'denied')),
    rule text,
    reason text,
    request_id bigint,
    origin_run uuid,
    artifact_id uuid,
    digest text,
    share_id bigint,
    crossing_ids bigint[],
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE SEQUENCE pg_labels.steps_id_seq OWNED BY pg_labels.steps.id;
COMMENT ON TABLE pg_labels.steps IS
    'The trail, append-only: every step of every run, with the labels it carried; tool calls are judged on insert';
COMMENT ON COLUMN pg_labels.steps.request_id IS
    'approval_decided: the approval_requested step decided; tool_called: the approval it used (set by the trigger)';
COMMENT ON COLUMN pg_labels.steps.actor IS 'The role that wrote the step (set by the trigger, cannot be forged)';
COMMENT ON COLUMN pg_labels.steps.artifact_id IS
    'context_read: the artifact read; origin_run, digest and (at least) its labels are filled from it';
COMMENT ON COLUMN pg_labels.steps.share_id IS 'context_read: the share that let the run read the artifact (set by the trigger)';
COMMENT ON COLUMN pg_labels.steps.crossing_ids IS
    'context_read, tool_called, gate_decided: the crossings that let labels the run''s scope cannot carry through (set by the trigger)';
CREATE INDEX steps_run_idx ON pg_labels.steps (run_id, id);
CREATE INDEX steps_labels_idx ON pg_labels.steps USING gin (labels);
CREATE INDEX steps_artifact_idx ON pg_labels.steps (artifact_id) WHERE artifact_id IS NOT NULL;
-- one decision per request, and one tool call per approval
CREATE UNIQUE INDEX steps_one_decision_idx ON pg_labels.steps (request_id) WHERE kind = 'approval_decided';
CREATE UNIQUE INDEX steps_one_use_idx ON pg_labels.steps (request_id) WHERE kind = 'tool_called';

SELECT pg_catalog.pg_extension_config_dump('pg_labels.tools', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.listeners', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.listeners_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.runs', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.steps', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.steps_id_seq', '');

--------------------------------------------------------------------------------------------
-- Triggers
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.runs_open() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_runs_open' LANGUAGE C;
CREATE FUNCTION pg_labels.runs_seal() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_runs_seal' LANGUAGE C;
CREATE FUNCTION pg_labels.steps_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_steps_insert' LANGUAGE C;
CREATE FUNCTION pg_labels.append_only() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_append_only' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.runs_open() IS
    'Opening a run: adds the run''s own scope label, refuses initial labels or a listener scope the run''s scope cannot carry';
COMMENT ON FUNCTION pg_labels.runs_seal() IS 'A run''s scope never changes and its labels only grow';
COMMENT ON FUNCTION pg_labels.steps_insert() IS
    'Every step: labels accumulate into the run (serialized per run); tool calls are judged; gate decisions recorded';
COMMENT ON FUNCTION pg_labels.append_only() IS 'Refuses UPDATE, DELETE and TRUNCATE of the trail';

CREATE TRIGGER runs_open BEFORE INSERT ON pg_labels.runs
    FOR EACH ROW EXECUTE FUNCTION pg_labels.runs_open();
CREATE TRIGGER runs_seal BEFORE UPDATE OR DELETE ON pg_labels.runs
    FOR EACH ROW EXECUTE FUNCTION pg_labels.runs_seal();
CREATE TRIGGER runs_no_truncate BEFORE TRUNCATE ON pg_labels.runs
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER steps_insert BEFORE INSERT ON pg_labels.steps
    FOR EACH ROW EXECUTE FUNCTION pg_labels.steps_insert();
CREATE TRIGGER steps_append_only BEFORE UPDATE OR DELETE ON pg_labels.steps
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER steps_no_truncate BEFORE TRUNCATE ON pg_labels.steps
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();

--------------------------------------------------------------------------------------------
-- Functions: the gate, approvals, retention
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.gate(run uuid, tool text, args jsonb DEFAULT NULL,
                               labels @extschema@.labelset DEFAULT '{}')
RETURNS TABLE (decision text, rule text, reason text, step_id bigint)
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels)
    VALUES (run, 'gate_decided', tool, args, labels)
    RETURNING steps.decision, steps.rule, steps.reason, steps.id;
END;
COMMENT ON FUNCTION pg_labels.gate(uuid, text, jsonb, @extschema@.labelset) IS
    'Judges a proposed tool call by the rules the trigger applies to tool_called, without raising: allow, ask or block; records a gate_decided step';

CREATE FUNCTION pg_labels.request_approval(run uuid, tool text, args jsonb DEFAULT NULL,
                                           labels @extschema@.labelset DEFAULT '{}', reason text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels, reason)
    VALUES (run, 'approval_requested', tool, args, labels, reason)
    RETURNING steps.id;
END;
COMMENT ON FUNCTION pg_labels.request_approval(uuid, text, jsonb, @extschema@.labelset, text) IS
    'Records an approval_requested step for one concrete call (run, tool, args); returns its id';

CREATE FUNCTION pg_labels.decide_approval(request bigint, granted boolean, reason text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_decide_approval' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) IS
    'Records a person''s decision on an approval request; EXECUTE only for roles the DBA grants it to, never the requester';

CREATE FUNCTION pg_labels.purge(older_than timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_purge' LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION pg_labels.purge(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.purge(timestamptz) IS
    'Retention: deletes whole runs (and their steps) opened before the cutoff and without a later step; returns the number of runs';
