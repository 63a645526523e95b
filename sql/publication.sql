-- pg_labels: published agent versions and the publication check. The trigger is a C function
-- (src/publication.rs) over the flow analysis of pg_labels_core (core/src/flow.rs).

CREATE TABLE pg_labels.agent_versions (
    agent text NOT NULL,
    version int NOT NULL,
    scope @extschema@.scope NOT NULL,
    steps jsonb NOT NULL,
    needs_approval jsonb NOT NULL DEFAULT '[]',
    description text,
    published_by text NOT NULL DEFAULT current_user,
    published_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent, version)
);
COMMENT ON TABLE pg_labels.agent_versions IS
    'Published agents: the company or area they run in and their declared steps. A version whose steps let untrusted data reach a destructive or financial tool is refused (untrusted_to_irreversible); published versions never change';
COMMENT ON COLUMN pg_labels.agent_versions.steps IS
    '{"steps": [{"id": ..., "tool": ..., "inputs": [step ids or source:slack, source:webhook, source:event, source:agent]}]}';
COMMENT ON COLUMN pg_labels.agent_versions.needs_approval IS
    'Set by the publication check: the reversible writes untrusted data can reach, [{"step", "tool", "path"}]; a person approves each such call at run time';
COMMENT ON COLUMN pg_labels.agent_versions.published_by IS 'The role that published the version (set by the database)';
CREATE INDEX agent_versions_scope_idx ON pg_labels.agent_versions (scope);
SELECT pg_catalog.pg_extension_config_dump('pg_labels.agent_versions', '');

-- A run opened for an agent version names a published one (its scope is checked by runs_open).
ALTER TABLE pg_labels.runs ADD CONSTRAINT runs_agent_version_fkey
    FOREIGN KEY (agent, agent_version) REFERENCES pg_labels.agent_versions (agent, version);

CREATE FUNCTION pg_labels.agent_versions_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_agent_versions_insert' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.agent_versions_insert() IS
    'The publication check: refuses a version whose declared steps let untrusted data reach an irreversible tool; records the steps that need approval';
CREATE TRIGGER agent_versions_insert BEFORE INSERT ON pg_labels.agent_versions
    FOR EACH ROW EXECUTE FUNCTION pg_labels.agent_versions_insert();
CREATE TRIGGER agent_versions_append_only BEFORE UPDATE OR DELETE ON pg_labels.agent_versions
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER agent_versions_no_truncate BEFORE TRUNCATE ON pg_labels.agent_versions
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();

-- What analysts query: every step of every version that needs a person's approval at run time.
CREATE VIEW pg_labels.approval_points WITH (security_invoker = true) AS
SELECT v.agent, v.version, v.scope, p.step, p.tool, t.effect, p.path, v.published_at
FROM pg_labels.agent_versions v
CROSS JOIN LATERAL pg_catalog.jsonb_to_recordset(v.needs_approval) AS p (step text, tool text, path text)
LEFT JOIN pg_labels.tools t ON t.name = p.tool;
COMMENT ON VIEW pg_labels.approval_points IS
    'The reversible writes of published versions that untrusted data can reach: the gate asks a person for each such call';
