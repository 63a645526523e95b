-- pg_labels: the platform's tables, views, triggers and policies.
--
-- The tables are members of the extension registered with pg_extension_config_dump: pg_dump
-- dumps a table of a schema whose name starts with pg_ only that way. A restore loads their
-- rows after CREATE EXTENSION has made them (with their triggers): the triggers take the rows
-- of a restoring session (a superuser with row_security off, as pg_dump and pg_restore set
-- it) as they were decided, and no foreign key depends on the order the tables are loaded in
-- (the triggers check every reference a writer makes).
--
-- The trail (pg_labels.steps) is a ring of 24 partitions by month (UTC), all made here, so
-- that every one is a member whose rows are dumped: pg_labels.purge() empties whole months in
-- constant time.

CREATE FUNCTION pg_labels.trail_slot(at timestamptz) RETURNS smallint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ((pg_catalog.date_part('year', at AT TIME ZONE 'UTC')::int * 12
         + pg_catalog.date_part('month', at AT TIME ZONE 'UTC')::int - 1) % 24)::smallint;
COMMENT ON FUNCTION pg_labels.trail_slot(timestamptz) IS
    'The partition of the trail''s ring a step made at this time is in: its month (UTC) modulo 24';

-- The values the trail's kind and decision may take, as its CHECK constraints (on every node
-- of a Citus cluster, where the trail's shards check them). An executor reads a table's CHECK
-- constraints again from their stored text at every statement: the lists of constants these
-- replace cost a single-row insert about 15 µs of its 120 (issue 38).
CREATE FUNCTION pg_labels.is_step_kind(kind text) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_is_step_kind' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pg_labels.is_step_kind(text) IS
    'A kind of step: input, planned, gate_decided, approval_requested, approval_decided, tool_called, tool_result or context_read (the trail''s steps_kind_check)';
CREATE FUNCTION pg_labels.is_step_decision(decision text) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_is_step_decision' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pg_labels.is_step_decision(text) IS
    'A decision a step holds: allow, ask or block (a judged call), granted or denied (a person''s on an approval request; the trail''s steps_decision_check)';

-- The ids of steps and of shares: the triggers take them (on every node of a Citus cluster, so
-- they are made outside the block below; each table owns its sequence where it exists).
CREATE SEQUENCE pg_labels.steps_id_seq;
COMMENT ON SEQUENCE pg_labels.steps_id_seq IS 'The ids of steps, taken by the insert trigger under the run''s lock';
CREATE SEQUENCE pg_labels.shares_id_seq;
COMMENT ON SEQUENCE pg_labels.shares_id_seq IS 'The ids of shares, taken by the insert trigger';

-- The copy of the extension Citus makes on a worker (a session of Citus' own) has no platform -- citus-copy
-- tables: Citus makes their shells and shards there after pg_labels.distribute(), and it could -- citus-copy
-- not if they were the extension's (README, "Scaling out with Citus").                        -- citus-copy
DO $platform$ BEGIN IF pg_catalog.current_setting('application_name') LIKE 'citus\_internal gpid=%' THEN RETURN; END IF; EXECUTE $schema$ -- citus-copy
----------------------------------------------------------------------------------------
-- The tool catalog, event bindings, grants
----------------------------------------------------------------------------------------
CREATE TABLE pg_labels.tools (
    name text PRIMARY KEY,
    effect text NOT NULL
        CONSTRAINT tools_effect_check CHECK (effect IN ('read', 'reversible_write', 'destructive', 'financial')),
    trusted_output boolean NOT NULL DEFAULT false,
    description text,
    created_at timestamptz NOT NULL DEFAULT now(),
    owner text CONSTRAINT tools_owner_check CHECK (owner <> '' AND owner !~ '[[:cntrl:]]'),
    definition_digest text
);
COMMENT ON TABLE pg_labels.tools IS
    'The tool catalog: a tool_called step naming a tool absent from it is refused (unknown_tool). Global: tools belong to no company';
COMMENT ON COLUMN pg_labels.tools.name IS 'The tool''s name, as steps name it';
COMMENT ON COLUMN pg_labels.tools.effect IS 'read, reversible_write, destructive or financial';
COMMENT ON COLUMN pg_labels.tools.trusted_output IS
    'false: the tool''s results come from outside, and a tool_result step of it carries origin:tool';
COMMENT ON COLUMN pg_labels.tools.description IS 'Free text for people';
COMMENT ON COLUMN pg_labels.tools.created_at IS 'When the tool was added';
COMMENT ON COLUMN pg_labels.tools.owner IS
    'Who set the effect: NULL for the DBA (the tables'' owner), else the gateway that claimed the tool''s namespace (tool_namespaces); only they change the row';
COMMENT ON COLUMN pg_labels.tools.definition_digest IS
    'SHA-256 (hex) of the tool''s definition as accepted (name, title, description, schemas, annotations; tool_definitions): a gateway refuses the tool while its upstream offers another';

-- Who may write which tools: the DBA gives a gateway the namespace of an upstream (the prefix
-- of its tools' names), for the gateway's name and its catalog role; then that role writes
-- tools of that namespace as that owner, and nothing else (the policies below). The DBA (the
-- tables' owner, a superuser) writes any tool; a row a gateway does not own it leaves as it is.
CREATE TABLE pg_labels.tool_namespaces (
    namespace text PRIMARY KEY
        CONSTRAINT tool_namespaces_namespace_check CHECK (namespace <> '' AND pg_catalog.strpos(namespace, '.') = 0 AND namespace !~ '[[:cntrl:]]'),
    owner text NOT NULL
        CONSTRAINT tool_namespaces_owner_check CHECK (owner <> '' AND owner !~ '[[:cntrl:]]'),
    role name NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.tool_namespaces IS
    'Which gateway owns the tools of a namespace (the part of a tool''s name before its first dot): given and taken back by the DBA';
COMMENT ON COLUMN pg_labels.tool_namespaces.namespace IS 'The prefix (an MCP gateway''s upstream name)';
COMMENT ON COLUMN pg_labels.tool_namespaces.owner IS 'The gateway''s name (its configuration''s name)';
COMMENT ON COLUMN pg_labels.tool_namespaces.role IS 'The role that writes its tools (the gateway''s catalog role)';
COMMENT ON COLUMN pg_labels.tool_namespaces.claimed_at IS 'When the DBA gave it';

-- Every definition of a tool a gateway was offered, as its upstream gave it: the first one
-- accepted as it was seen, a changed one waiting for an operator (accept_tool_definition()).
CREATE TABLE pg_labels.tool_definitions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    owner text NOT NULL,
    digest text NOT NULL,
    definition jsonb NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now(),
    accepted_at timestamptz,
    accepted_by name,
    CONSTRAINT tool_definitions_name_digest_key UNIQUE (name, digest)
);
COMMENT ON TABLE pg_labels.tool_definitions IS
    'Each definition of a tool its gateway was offered: the accepted one and changes waiting for an operator';
COMMENT ON COLUMN pg_labels.tool_definitions.id IS 'The definition as seen';
COMMENT ON COLUMN pg_labels.tool_definitions.name IS 'The tool (pg_labels.tools.name)';
COMMENT ON COLUMN pg_labels.tool_definitions.owner IS 'The gateway that was offered it';
COMMENT ON COLUMN pg_labels.tool_definitions.digest IS 'SHA-256 (hex) of the definition';
COMMENT ON COLUMN pg_labels.tool_definitions.definition IS 'What the upstream offered: name, title, description, inputSchema, outputSchema, annotations';
COMMENT ON COLUMN pg_labels.tool_definitions.seen_at IS 'When the gateway was first offered it';
COMMENT ON COLUMN pg_labels.tool_definitions.accepted_at IS 'When it was accepted (NULL: waiting)';
COMMENT ON COLUMN pg_labels.tool_definitions.accepted_by IS 'The role that accepted it';

-- The newest waiting definition of a tool becomes its accepted one
CREATE FUNCTION pg_labels.accept_tool_definition(tool text) RETURNS text
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH waiting AS (
        SELECT d.id, d.digest FROM pg_labels.tool_definitions d
         WHERE d.name = accept_tool_definition.tool AND d.accepted_at IS NULL
         ORDER BY d.id DESC LIMIT 1
    ), pinned AS (
        UPDATE pg_labels.tools t SET definition_digest = w.digest
          FROM waiting w WHERE t.name = accept_tool_definition.tool
        RETURNING w.id, w.digest
    ), accepted AS (
        UPDATE pg_labels.tool_definitions d SET accepted_at = now(), accepted_by = CURRENT_USER
          FROM pinned p WHERE d.id = p.id
        RETURNING p.digest
    )
    SELECT digest FROM accepted;
END;
COMMENT ON FUNCTION pg_labels.accept_tool_definition(text) IS
    'An operator accepts the newest changed definition of a tool its gateway was offered: the gateway offers the tool again (returns its digest; NULL when none waits)';

CREATE TABLE pg_labels.listeners (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent text,
    scope @extschema@.scope NOT NULL,
    event text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.listeners IS 'Event bindings: which agent listens, in which scope, to which event';
COMMENT ON COLUMN pg_labels.listeners.id IS 'The listener; runs opened by its events name it (runs.listener_id)';
COMMENT ON COLUMN pg_labels.listeners.agent IS 'The agent its runs are of';
COMMENT ON COLUMN pg_labels.listeners.scope IS 'The scope its runs have';
COMMENT ON COLUMN pg_labels.listeners.event IS 'The event it listens to';
COMMENT ON COLUMN pg_labels.listeners.created_at IS 'When it was bound';

CREATE TABLE pg_labels.grants (
    role name NOT NULL,
    scope @extschema@.scope NOT NULL,
    granted_by text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    enters boolean NOT NULL DEFAULT true,
    PRIMARY KEY (role, scope)
);
COMMENT ON TABLE pg_labels.grants IS
    'Where database roles act (and every scope below): a role, or a member of it, writes, reads what it writes, decides approvals and records crossings only where a grant reaches, and may pg_labels.enter_scope() a scope a grant that enters reaches. Written by the DBA';
COMMENT ON COLUMN pg_labels.grants.role IS 'The role (its members too)';
COMMENT ON COLUMN pg_labels.grants.scope IS 'Where it acts (and may enter, unless enters is false), with every scope below';
COMMENT ON COLUMN pg_labels.grants.granted_by IS 'Who granted it';
COMMENT ON COLUMN pg_labels.grants.created_at IS 'When';
COMMENT ON COLUMN pg_labels.grants.enters IS
    'Whether the role may also enter the scope (enter_scope()) and read there as an analyst; false: it only acts there (writes, reads what it writes, decides, records crossings). ALTER EXTENSION UPDATE to 0.3.1 gave * with false to the roles that acted everywhere';

----------------------------------------------------------------------------------------
-- Published agents
----------------------------------------------------------------------------------------
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
COMMENT ON COLUMN pg_labels.agent_versions.agent IS 'The agent';
COMMENT ON COLUMN pg_labels.agent_versions.version IS 'Its version, from 1';
COMMENT ON COLUMN pg_labels.agent_versions.scope IS 'The company or area its runs have';
COMMENT ON COLUMN pg_labels.agent_versions.steps IS
    '{"steps": [{"id": ..., "tool": ..., "inputs": [step ids or source:slack, source:webhook, source:event, source:agent]}]}';
COMMENT ON COLUMN pg_labels.agent_versions.needs_approval IS
    'Set by the publication check: the reversible writes untrusted data can reach, [{"step", "tool", "path"}]; a person approves each such call at run time';
COMMENT ON COLUMN pg_labels.agent_versions.description IS 'Free text for people';
COMMENT ON COLUMN pg_labels.agent_versions.published_by IS 'The role that published the version (set by the database)';
COMMENT ON COLUMN pg_labels.agent_versions.published_at IS 'When it was published (set by the database)';
CREATE INDEX agent_versions_scope_idx ON pg_labels.agent_versions (scope);

----------------------------------------------------------------------------------------
-- Runs and the trail
----------------------------------------------------------------------------------------
CREATE TABLE pg_labels.runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent text,
    agent_version int,
    scope @extschema@.scope NOT NULL,
    labels @extschema@.labelset NOT NULL DEFAULT '{}',
    listener_id bigint,
    opened_at timestamptz NOT NULL DEFAULT now(),
    opened_labels @extschema@.labelset,
    chain_head bytea,
    chain_slot smallint,
    chain_cut bytea,
    chain_cut_length bigint,
    carried_scope @extschema@.scope
-- a step writes its run's row only when it grows the run's labels or is the run's first in
-- a month of the ring: room on the page for those versions (HOT updates)
) WITH (fillfactor = 80);
COMMENT ON TABLE pg_labels.runs IS
    'Agent runs: scope is sealed when the run is opened; labels is the union of everything that entered the run and only grows';
COMMENT ON COLUMN pg_labels.runs.id IS 'The run (a service may bring its own)';
COMMENT ON COLUMN pg_labels.runs.agent IS 'The agent (filled from the listener when omitted)';
COMMENT ON COLUMN pg_labels.runs.agent_version IS 'The published version it runs, if any: the run has its scope';
COMMENT ON COLUMN pg_labels.runs.scope IS 'The company or area it runs in, sealed when it is opened';
COMMENT ON COLUMN pg_labels.runs.labels IS 'What it carries: everything that entered it, and its own scope label; only grows';
COMMENT ON COLUMN pg_labels.runs.listener_id IS 'The listener whose event opened it, if any: the run has its scope';
COMMENT ON COLUMN pg_labels.runs.opened_at IS 'When it was opened (the database''s time)';
COMMENT ON COLUMN pg_labels.runs.opened_labels IS 'What it carried when it was opened (set by the database; its hash chain starts from it)';
COMMENT ON COLUMN pg_labels.runs.chain_head IS 'Its hash chain''s checkpoint: the hash of its opening, of a purge''s cut, or of the last step that wrote this row (one that grew its labels or was its first in a month of the ring); its chain passes through it (set by the database; see verify())';
COMMENT ON COLUMN pg_labels.runs.chain_slot IS 'The partition of the trail''s ring (steps.slot) that holds every step chained after chain_head (set by the database)';
COMMENT ON COLUMN pg_labels.runs.chain_cut IS 'Where its chain continues from after purge() removed its oldest steps: the hash of the last one removed (set by the database)';
COMMENT ON COLUMN pg_labels.runs.chain_cut_length IS 'How many of its steps purge() removed (set by the database)';
COMMENT ON COLUMN pg_labels.runs.carried_scope IS
    'Where the run can be read: the deepest scope that can carry its labels; an analyst sees the run when the entered scope reaches it (set by the database, kept inline: the policy reads it, never the labels)';
CREATE INDEX runs_scope_idx ON pg_labels.runs (scope);
CREATE INDEX runs_labels_idx ON pg_labels.runs USING gin (labels);
CREATE INDEX runs_opened_at_idx ON pg_labels.runs (opened_at);

-- id, created_at, slot and actor are the database's: the insert trigger takes the id from
-- steps_id_seq under the run's lock (ids follow the order in which a run's steps were
-- decided) and refuses a writer's id, time, slot or actor. One decision per request and one
-- use per approval are checked under the run's lock too.
CREATE TABLE pg_labels.steps (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    kind text NOT NULL
        CONSTRAINT steps_kind_check CHECK (pg_labels.is_step_kind(kind)),
    tool text,
    labels @extschema@.labelset NOT NULL DEFAULT '{}',
    args jsonb,
    decision text
        CONSTRAINT steps_decision_check CHECK (pg_labels.is_step_decision(decision)),
    rule text,
    reason text,
    request_id bigint,
    origin_run uuid,
    artifact_id uuid,
    digest text,
    share_id bigint,
    crossing_ids bigint[],
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    slot smallint NOT NULL DEFAULT pg_labels.trail_slot(now()),
    prev_hash bytea,
    hash bytea,
    carried_scope @extschema@.scope,
    run_scope @extschema@.scope,
    expires_at timestamptz,
    PRIMARY KEY (id, slot)
) PARTITION BY LIST (slot);
COMMENT ON TABLE pg_labels.steps IS
    'The trail, append-only: every step of every run, with the labels it carried; tool calls are judged on insert. A ring of 24 monthly partitions (slot): purge() empties whole months';
COMMENT ON COLUMN pg_labels.steps.id IS 'The step, in the order its run''s steps were decided (set by the database)';
COMMENT ON COLUMN pg_labels.steps.run_id IS 'Its run';
COMMENT ON COLUMN pg_labels.steps.kind IS
    'input, planned, gate_decided, approval_requested, approval_decided, tool_called, tool_result or context_read';
COMMENT ON COLUMN pg_labels.steps.tool IS 'The tool called, proposed or answered';
COMMENT ON COLUMN pg_labels.steps.labels IS 'What the step carried (it enters the run''s labels)';
COMMENT ON COLUMN pg_labels.steps.args IS 'The call''s arguments, or the input''s description';
COMMENT ON COLUMN pg_labels.steps.decision IS
    'gate_decided, tool_called: allow, ask or block; approval_decided: granted or denied (set by the database)';
COMMENT ON COLUMN pg_labels.steps.rule IS 'The rule that decided (set by the database)';
COMMENT ON COLUMN pg_labels.steps.reason IS 'Why, in one line (set by the database for judged steps)';
COMMENT ON COLUMN pg_labels.steps.request_id IS
    'approval_decided: the approval_requested step decided; tool_called: the approval it used (set by the database)';
COMMENT ON COLUMN pg_labels.steps.origin_run IS 'context_read: the run that made the artifact read (filled from it)';
COMMENT ON COLUMN pg_labels.steps.artifact_id IS
    'context_read: the artifact read; origin_run, digest and (at least) its labels are filled from it';
COMMENT ON COLUMN pg_labels.steps.digest IS 'context_read: the artifact''s digest (filled from it)';
COMMENT ON COLUMN pg_labels.steps.share_id IS 'context_read: the share that let the run read the artifact (set by the database)';
COMMENT ON COLUMN pg_labels.steps.crossing_ids IS
    'context_read, tool_called, gate_decided: the crossings that let labels the run''s scope cannot carry through (set by the database)';
COMMENT ON COLUMN pg_labels.steps.actor IS 'The role that wrote the step; for approval_decided, the person deciding (set by the database)';
COMMENT ON COLUMN pg_labels.steps.created_at IS 'When (the transaction''s time, set by the database)';
COMMENT ON COLUMN pg_labels.steps.slot IS
    'The partition of the trail''s ring it is in: the month of created_at (UTC) modulo 24 (set by the database)';
COMMENT ON COLUMN pg_labels.steps.prev_hash IS 'The hash of the step before it in its run (or of the run''s opening) (set by the database)';
COMMENT ON COLUMN pg_labels.steps.hash IS 'SHA-256 of prev_hash and the step''s canonical content: its run''s hash chain (set by the database; see verify())';
COMMENT ON COLUMN pg_labels.steps.carried_scope IS
    'Where the step can be read: the deepest scope that can carry what its run carried once the step was written (its labels with the run''s); an analyst sees the step when the entered scope reaches it (set by the database)';
COMMENT ON COLUMN pg_labels.steps.run_scope IS
    'Where the run''s writers read the step: its run''s scope, when carried_scope is wider (NULL: the same; set by the database)';
COMMENT ON COLUMN pg_labels.steps.expires_at IS
    'approval_requested: when the request expires, undecided (request_approval()''s ttl; NULL: never); past it nobody decides it';
ALTER SEQUENCE pg_labels.steps_id_seq OWNED BY pg_labels.steps.id;
CREATE INDEX steps_created_at_idx ON pg_labels.steps (created_at);
CREATE INDEX steps_run_idx ON pg_labels.steps (run_id, id);
CREATE INDEX steps_labels_idx ON pg_labels.steps USING gin (labels);
CREATE INDEX steps_artifact_idx ON pg_labels.steps (artifact_id) WHERE artifact_id IS NOT NULL;
-- the approval requests and the steps that answer a request (approval_decided) or use its
-- approval (tool_called), by request (a request has none: the requests come last, by id) and
-- id, with what row-level security and the approver's queue read of them: the queue finds the
-- requests no decision answers in this index alone (issue 50). Partial: any other step costs an
-- insert this test and no entry; an entry is bounded (two scopes of at most 1 kB each, the rest
-- fixed size)
CREATE INDEX steps_request_idx ON pg_labels.steps (request_id, id)
    INCLUDE (kind, run_id, created_at, expires_at, carried_scope, run_scope)
    WHERE request_id IS NOT NULL OR kind = 'approval_requested';
CREATE INDEX steps_context_read_idx ON pg_labels.steps (run_id) WHERE kind = 'context_read';
-- refusals by time: gate decisions that blocked or asked (the partition key is the ring slot,
-- so time is served by indexes). Not with the labels the steps' policy reads: a labelset has
-- no bound, a btree entry has (2.7 kB), and a refusal must always be recorded
CREATE INDEX steps_refusals_idx ON pg_labels.steps (created_at)
    WHERE kind = 'gate_decided' AND decision IN ('block', 'ask');
-- the ring: 24 monthly partitions, each a member of the extension whose rows pg_dump dumps
DO $ring$
DECLARE
    s int;
BEGIN
    FOR s IN 0..23 LOOP
        EXECUTE format('CREATE TABLE pg_labels.%I PARTITION OF pg_labels.steps FOR VALUES IN (%s)', -- %s: an int
                       'steps_' || lpad(s::text, 2, '0'), s);
        EXECUTE format('COMMENT ON TABLE pg_labels.%I IS %L', 'steps_' || lpad(s::text, 2, '0'),
                       'The steps of months ' || s || ' modulo 24 (UTC): a partition of the trail''s ring');
        PERFORM pg_catalog.pg_extension_config_dump(format('pg_labels.%I', 'steps_' || lpad(s::text, 2, '0')), '');
    END LOOP;
END
$ring$;

----------------------------------------------------------------------------------------
-- Context by reference, and crossings
----------------------------------------------------------------------------------------
CREATE TABLE pg_labels.crossings (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_scope @extschema@.scope NOT NULL,
    to_scope @extschema@.scope NOT NULL,
    authorized_by text NOT NULL DEFAULT current_user,
    reason text NOT NULL,
    expires_at timestamptz,
    revoked_at timestamptz,
    revoked_by text,
    revoke_reason text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT crossings_revoked_check CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
COMMENT ON TABLE pg_labels.crossings IS
    'Boundary-crossing authorizations: data of from_scope may be carried by runs and shares within to_scope while the crossing is active (not expired, not revoked). Recorded by pg_labels.authorize_crossing(), ended by pg_labels.revoke_crossing(); never rewrites labels';
COMMENT ON COLUMN pg_labels.crossings.id IS 'The crossing, as shares and steps name it';
COMMENT ON COLUMN pg_labels.crossings.from_scope IS 'Data of this scope (and below) may cross';
COMMENT ON COLUMN pg_labels.crossings.to_scope IS 'into runs and shares of this scope (and below)';
COMMENT ON COLUMN pg_labels.crossings.authorized_by IS 'The role that authorized the crossing (set by the database)';
COMMENT ON COLUMN pg_labels.crossings.reason IS 'Why, for the record (not blank)';
COMMENT ON COLUMN pg_labels.crossings.expires_at IS 'NULL or infinity: until revoked';
COMMENT ON COLUMN pg_labels.crossings.revoked_at IS 'When it was ended (set by revoke_crossing())';
COMMENT ON COLUMN pg_labels.crossings.revoked_by IS 'Who ended it (set by revoke_crossing())';
COMMENT ON COLUMN pg_labels.crossings.revoke_reason IS 'Why it was ended';
COMMENT ON COLUMN pg_labels.crossings.created_at IS 'When it was authorized';
CREATE INDEX crossings_to_scope_idx ON pg_labels.crossings (to_scope);

CREATE TABLE pg_labels.artifacts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    origin_run uuid NOT NULL,
    digest text NOT NULL,
    labels @extschema@.labelset NOT NULL DEFAULT '{}',
    description text,
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    carried_scope @extschema@.scope,
    run_scope @extschema@.scope
);
COMMENT ON TABLE pg_labels.artifacts IS
    'Context shared by reference: the content stays where it is; its digest, origin run and labels are recorded here. Labels are at least what the origin run carried when the artifact was made';
COMMENT ON COLUMN pg_labels.artifacts.id IS 'The artifact (a service may bring its own)';
COMMENT ON COLUMN pg_labels.artifacts.origin_run IS 'The run that made it';
COMMENT ON COLUMN pg_labels.artifacts.digest IS 'Hex SHA-256 of the content: pg_labels.digest(content)';
COMMENT ON COLUMN pg_labels.artifacts.labels IS 'What it carries: at least what its run carried when it was made';
COMMENT ON COLUMN pg_labels.artifacts.description IS 'Free text for people';
COMMENT ON COLUMN pg_labels.artifacts.actor IS 'The role that made it (set by the database)';
COMMENT ON COLUMN pg_labels.artifacts.created_at IS 'When (set by the database)';
COMMENT ON COLUMN pg_labels.artifacts.carried_scope IS
    'Where the artifact can be read: the deepest scope that can carry its labels; an analyst sees it when the entered scope reaches it (set by the database, kept inline: the policy reads it, never the labels)';
COMMENT ON COLUMN pg_labels.artifacts.run_scope IS
    'Where its run''s writers read the artifact: its run''s scope, when carried_scope is wider (NULL: the same; set by the database)';
CREATE INDEX artifacts_origin_run_idx ON pg_labels.artifacts (origin_run);
CREATE INDEX artifacts_labels_idx ON pg_labels.artifacts USING gin (labels);
CREATE INDEX artifacts_digest_idx ON pg_labels.artifacts (digest);

CREATE TABLE pg_labels.shares (
    id bigint NOT NULL PRIMARY KEY,
    artifact_id uuid NOT NULL,
    to_scope @extschema@.scope NOT NULL,
    to_run uuid,
    crossing_id bigint,
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    carried_scope @extschema@.scope,
    run_scope @extschema@.scope
);
COMMENT ON TABLE pg_labels.shares IS
    'An artifact offered to the runs of a scope (to_scope and its sub-areas), or to one run (to_run; to_scope is then that run''s scope). Refused (data_barrier) unless to_scope can carry the artifact''s labels or an active crossing covers the rest';
COMMENT ON COLUMN pg_labels.shares.id IS 'The share (set by the database)';
COMMENT ON COLUMN pg_labels.shares.artifact_id IS 'The artifact offered';
COMMENT ON COLUMN pg_labels.shares.to_scope IS 'To the runs of this scope and below';
COMMENT ON COLUMN pg_labels.shares.to_run IS 'Or to this run only';
COMMENT ON COLUMN pg_labels.shares.crossing_id IS 'The crossing this share used, when the artifact carries labels to_scope cannot carry (set by the database)';
COMMENT ON COLUMN pg_labels.shares.actor IS 'The role that shared it (set by the database)';
COMMENT ON COLUMN pg_labels.shares.created_at IS 'When (set by the database)';
COMMENT ON COLUMN pg_labels.shares.carried_scope IS
    'Where the share can be read: the deepest scope that can carry its artifact''s labels; an analyst sees the share when the entered scope reaches it (set by the database)';
COMMENT ON COLUMN pg_labels.shares.run_scope IS
    'Where its artifact''s writers read the share: the scope of the artifact''s run, when carried_scope is wider (NULL: the same; set by the database)';
ALTER SEQUENCE pg_labels.shares_id_seq OWNED BY pg_labels.shares.id;
CREATE INDEX shares_artifact_idx ON pg_labels.shares (artifact_id);
CREATE INDEX shares_to_run_idx ON pg_labels.shares (to_run) WHERE to_run IS NOT NULL;
CREATE INDEX shares_crossing_idx ON pg_labels.shares (crossing_id) WHERE crossing_id IS NOT NULL;

----------------------------------------------------------------------------------------
-- The record of refused writes: every refusal of the triggers (and of the functions that
-- write as the owner), written by a background worker in a transaction of its own, so that
-- it survives the rollback of the refused statement (src/platform/refused.rs)
----------------------------------------------------------------------------------------
CREATE TABLE pg_labels.refused_writes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    refused_at timestamptz NOT NULL,
    last_at timestamptz NOT NULL,
    count bigint NOT NULL DEFAULT 1,
    kind text NOT NULL,
    run_id uuid,
    run_scope @extschema@.scope,
    carried_scope @extschema@.scope,
    tool text,
    rule text,
    sqlstate text NOT NULL,
    labels @extschema@.labelset,
    reason text NOT NULL,
    detail text,
    actor text NOT NULL,
    session_actor text NOT NULL,
    xid xid8,
    backend_pid int NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    attempted jsonb
);
COMMENT ON TABLE pg_labels.refused_writes IS
    'Every refusal of the platform''s triggers and of the functions that write as the owner, recorded in a transaction of its own: it survives the rollback of the refused statement. Written by a background worker only; read through pg_labels.refusals; removed by purge() with the trail''s months; outside the hash chains';
COMMENT ON COLUMN pg_labels.refused_writes.id IS 'The record';
COMMENT ON COLUMN pg_labels.refused_writes.refused_at IS 'When the write was refused (the clock of the backend that refused it)';
COMMENT ON COLUMN pg_labels.refused_writes.last_at IS 'When the last refusal it counts was made (past the budget of records a backend hands over in a second, alike refusals are counted in one record)';
COMMENT ON COLUMN pg_labels.refused_writes.count IS 'How many refusals it stands for: 1, or more for refusals counted together';
COMMENT ON COLUMN pg_labels.refused_writes.kind IS 'What was refused: a step''s kind (tool_called, gate_decided, context_read, approval_decided, ...), or run, share, artifact, crossing, agent_version, approval, or an update, delete or truncate of a table';
COMMENT ON COLUMN pg_labels.refused_writes.run_id IS 'The run, when there is one';
COMMENT ON COLUMN pg_labels.refused_writes.run_scope IS 'The scope of the run the write named, as the database holds it (NULL when no such run exists: what the writer claimed is in attempted)';
COMMENT ON COLUMN pg_labels.refused_writes.carried_scope IS 'Where the record can be read: the scope of the run it names, or for a share the scope its artifact can be read in (NULL: in * only); never a scope the writer named. An analyst sees it when the entered scope reaches it';
COMMENT ON COLUMN pg_labels.refused_writes.tool IS 'The tool called, when there is one';
COMMENT ON COLUMN pg_labels.refused_writes.rule IS 'The rule or check that refused: its name, as in the error''s constraint-name field';
COMMENT ON COLUMN pg_labels.refused_writes.sqlstate IS 'The refusal''s SQLSTATE';
COMMENT ON COLUMN pg_labels.refused_writes.labels IS 'The labels that escaped (data_barrier), the run''s origins (untrusted_to_irreversible, approval_required), or a share''s artifact''s labels';
COMMENT ON COLUMN pg_labels.refused_writes.reason IS 'The refusal''s message';
COMMENT ON COLUMN pg_labels.refused_writes.detail IS 'The refusal''s DETAIL';
COMMENT ON COLUMN pg_labels.refused_writes.actor IS 'The role that wrote (current_user)';
COMMENT ON COLUMN pg_labels.refused_writes.session_actor IS 'The session''s role (session_user)';
COMMENT ON COLUMN pg_labels.refused_writes.xid IS 'The refusing backend''s transaction id, when it had one';
COMMENT ON COLUMN pg_labels.refused_writes.backend_pid IS 'The refusing backend''s process id';
COMMENT ON COLUMN pg_labels.refused_writes.recorded_at IS 'When the worker wrote the record';
COMMENT ON COLUMN pg_labels.refused_writes.attempted IS 'What the refused write claimed, as the writer gave it (a run''s scope, labels and agent; a share''s target; a crossing''s scopes): a claim, not a fact of the trail';
CREATE INDEX refused_writes_refused_at_idx ON pg_labels.refused_writes (refused_at);
CREATE INDEX refused_writes_run_idx ON pg_labels.refused_writes (run_id) WHERE run_id IS NOT NULL;

----------------------------------------------------------------------------------------
-- Triggers
----------------------------------------------------------------------------------------
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
CREATE TRIGGER artifacts_insert BEFORE INSERT ON pg_labels.artifacts
    FOR EACH ROW EXECUTE FUNCTION pg_labels.artifacts_insert();
CREATE TRIGGER artifacts_append_only BEFORE UPDATE OR DELETE ON pg_labels.artifacts
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER artifacts_no_truncate BEFORE TRUNCATE ON pg_labels.artifacts
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER shares_insert BEFORE INSERT ON pg_labels.shares
    FOR EACH ROW EXECUTE FUNCTION pg_labels.shares_insert();
CREATE TRIGGER shares_append_only BEFORE UPDATE OR DELETE ON pg_labels.shares
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER shares_no_truncate BEFORE TRUNCATE ON pg_labels.shares
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER crossings_guard BEFORE INSERT OR UPDATE OR DELETE ON pg_labels.crossings
    FOR EACH ROW EXECUTE FUNCTION pg_labels.crossings_guard();
CREATE TRIGGER crossings_no_truncate BEFORE TRUNCATE ON pg_labels.crossings
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER agent_versions_insert BEFORE INSERT ON pg_labels.agent_versions
    FOR EACH ROW EXECUTE FUNCTION pg_labels.agent_versions_insert();
CREATE TRIGGER agent_versions_append_only BEFORE UPDATE OR DELETE ON pg_labels.agent_versions
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER agent_versions_no_truncate BEFORE TRUNCATE ON pg_labels.agent_versions
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER refused_writes_append_only BEFORE UPDATE OR DELETE ON pg_labels.refused_writes
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER refused_writes_no_truncate BEFORE TRUNCATE ON pg_labels.refused_writes
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER listeners_write BEFORE INSERT OR UPDATE ON pg_labels.listeners
    FOR EACH ROW EXECUTE FUNCTION pg_labels.listeners_write();
CREATE TRIGGER grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pg_labels.grants
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.grants_changed();
-- also in replica mode (a restore, a superuser's session): backends find the grants again
ALTER TABLE pg_labels.grants ENABLE ALWAYS TRIGGER grants_changed;
CREATE TRIGGER tools_change BEFORE UPDATE OR DELETE ON pg_labels.tools
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.tools_change();
-- also in replica mode (a restore, a superuser's session): backends forget the tools they kept
ALTER TABLE pg_labels.tools ENABLE ALWAYS TRIGGER tools_change;
-- The catalog's owners: the tables' owner and superusers (the DBA) write any tool; any other
-- role writes only tools of a namespace claimed for it, as the claim's owner, and no row it
-- does not own (a DBA's row is the DBA's). Everyone who may read the catalog reads all of it.
ALTER TABLE pg_labels.tools ENABLE ROW LEVEL SECURITY;
CREATE POLICY tools_read ON pg_labels.tools FOR SELECT USING (true);
CREATE POLICY tools_claimed_insert ON pg_labels.tools FOR INSERT
    WITH CHECK (pg_labels.tool_claimed(name, owner));
CREATE POLICY tools_claimed_update ON pg_labels.tools FOR UPDATE
    USING (pg_labels.tool_claimed(name, owner)) WITH CHECK (pg_labels.tool_claimed(name, owner));
CREATE POLICY tools_claimed_delete ON pg_labels.tools FOR DELETE
    USING (pg_labels.tool_claimed(name, owner));
ALTER TABLE pg_labels.tool_namespaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY tool_namespaces_read ON pg_labels.tool_namespaces FOR SELECT USING (true);
-- (no other policy: only the DBA gives a namespace to a gateway)
ALTER TABLE pg_labels.tool_definitions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tool_definitions_read ON pg_labels.tool_definitions FOR SELECT USING (true);
-- a gateway records what it was offered for any tool of its namespaces, and accepts (as
-- itself) only its own tools' definitions, or a new tool's; the DBA's tools the DBA accepts
CREATE POLICY tool_definitions_seen ON pg_labels.tool_definitions FOR INSERT
    WITH CHECK (pg_labels.tool_claimed(name, owner)
                AND ((accepted_at IS NULL AND accepted_by IS NULL)
                     OR (accepted_by = CURRENT_USER AND pg_labels.tool_acceptable(name, owner))));
CREATE POLICY tool_definitions_accept ON pg_labels.tool_definitions FOR UPDATE
    USING (pg_labels.tool_acceptable(name, owner))
    WITH CHECK (pg_labels.tool_acceptable(name, owner) AND (accepted_by IS NULL OR accepted_by = CURRENT_USER));

----------------------------------------------------------------------------------------
-- Row-level security. An analyst sees the runs, steps, artifacts, shares and records of
-- refused writes the entered scope reaches the scope they can be read in (carried_scope,
-- kept in the row: a run's and an artifact's with their labels, a step's with what its run
-- carried once it was written, a share's with its artifact's labels, a record's with the run
-- or artifact it names), the agent versions, listeners, crossings and grants within its
-- reach; nothing when no scope is entered. Every policy decides from one scope stored inline
-- in its row (storage PLAIN: never compressed, never out of line) and from what was fixed
-- when the query started (src/access/policy.rs): none reads another row, a TOAST value or a
-- catalog per row, so which hidden rows a query's conditions match shows in no counter. A role
-- that may write a table (INSERT, or EXECUTE on the crossing functions) reads its rows where
-- its grants reach (a step, artifact or share in its run's scope: run_scope, kept when it
-- differs from carried_scope; a run in its own scope). The triggers work as the tables' owner
-- without forced security, as foreign-key checks do. The tool catalog is global.
----------------------------------------------------------------------------------------
ALTER TABLE pg_labels.runs ALTER COLUMN carried_scope SET STORAGE PLAIN, ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.steps ALTER COLUMN carried_scope SET STORAGE PLAIN, ALTER COLUMN run_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.artifacts ALTER COLUMN carried_scope SET STORAGE PLAIN, ALTER COLUMN run_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.shares ALTER COLUMN carried_scope SET STORAGE PLAIN, ALTER COLUMN run_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.refused_writes ALTER COLUMN carried_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.agent_versions ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.listeners ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.crossings ALTER COLUMN from_scope SET STORAGE PLAIN, ALTER COLUMN to_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.grants ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.runs ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.steps ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.artifacts ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.shares ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.agent_versions ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.listeners ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.crossings ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.grants ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.refused_writes ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY runs_visible ON pg_labels.runs
    USING (pg_labels.readable_in('pg_labels.runs'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope), scope));
CREATE POLICY steps_visible ON pg_labels.steps
    USING (pg_labels.readable_in('pg_labels.steps'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                 coalesce(run_scope, carried_scope, '*'::@extschema@.scope)));
CREATE POLICY artifacts_visible ON pg_labels.artifacts
    USING (pg_labels.readable_in('pg_labels.artifacts'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                 coalesce(run_scope, carried_scope, '*'::@extschema@.scope)));
CREATE POLICY shares_visible ON pg_labels.shares
    USING (pg_labels.readable_in('pg_labels.shares'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                 coalesce(run_scope, carried_scope, '*'::@extschema@.scope)));
CREATE POLICY refused_writes_visible ON pg_labels.refused_writes
    USING (pg_labels.readable_in('pg_labels.refused_writes'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope)));
CREATE POLICY agent_versions_visible ON pg_labels.agent_versions
    USING (pg_labels.readable_in('pg_labels.agent_versions'::pg_catalog.regclass, scope));
CREATE POLICY listeners_visible ON pg_labels.listeners
    USING (pg_labels.readable_in('pg_labels.listeners'::pg_catalog.regclass, scope));
-- crossings are written only through authorize_crossing() and revoke_crossing(), which run
-- as the owner; the guard trigger refuses every other write, so no policy lets one through
CREATE POLICY crossings_visible ON pg_labels.crossings
    USING (pg_labels.readable_in('pg_labels.crossings'::pg_catalog.regclass, from_scope)
           OR pg_labels.readable_in('pg_labels.crossings'::pg_catalog.regclass, to_scope));
CREATE POLICY grants_visible ON pg_labels.grants
    USING (pg_labels.readable_in('pg_labels.grants'::pg_catalog.regclass, scope)
           OR pg_labels.member_of(role));
-- every partition has the table's row-level security (a query naming a partition is not
-- filtered by the table's policies) and its own TRUNCATE guard (a TRUNCATE of one partition
-- does not fire the table's)
DO $ring$
DECLARE
    part text;
BEGIN
    FOR part IN SELECT 'steps_' || lpad(s::text, 2, '0') FROM generate_series(0, 23) s LOOP
        EXECUTE format('ALTER TABLE pg_labels.%I ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY', part);
        EXECUTE format($p$CREATE POLICY steps_visible ON pg_labels.%I
            USING (pg_labels.readable_in('pg_labels.steps'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                         coalesce(run_scope, carried_scope, '*'::@extschema@.scope)))$p$, part);
        EXECUTE format('CREATE TRIGGER steps_no_truncate BEFORE TRUNCATE ON pg_labels.%I FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only()', part);
    END LOOP;
END
$ring$;

----------------------------------------------------------------------------------------
-- Views for analysts (with the caller's rights, so row-level security applies)
----------------------------------------------------------------------------------------
CREATE VIEW pg_labels.trail WITH (security_invoker = true) AS
SELECT s.id, s.run_id, r.scope AS run_scope, r.agent, r.agent_version, s.kind, s.tool, s.labels,
       s.args, s.decision, s.rule, s.reason, s.request_id, s.origin_run, s.artifact_id, s.digest,
       s.share_id, s.crossing_ids, s.actor, s.created_at, s.expires_at
FROM pg_labels.steps s
JOIN pg_labels.runs r ON r.id = s.run_id;
COMMENT ON VIEW pg_labels.trail IS 'Every step with its run''s scope and agent, ready to read';
-- the view's columns say what the table's say (the steps' own, and three of the run's: its
-- run_scope is the run's scope, not the steps' column of that name)
DO $comments$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT a.attname, coalesce(
                 CASE a.attname WHEN 'run_scope' THEN 'The run''s scope'
                                WHEN 'agent' THEN 'The run''s agent'
                                WHEN 'agent_version' THEN 'The published version the run runs, if any' END,
                 pg_catalog.col_description('pg_labels.steps'::pg_catalog.regclass,
                     (SELECT attnum FROM pg_catalog.pg_attribute
                       WHERE attrelid = 'pg_labels.steps'::pg_catalog.regclass AND attname = a.attname))) AS text
               FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = 'pg_labels.trail'::pg_catalog.regclass AND a.attnum > 0
    LOOP
        EXECUTE format('COMMENT ON COLUMN pg_labels.trail.%I IS %L', c.attname, c.text);
    END LOOP;
END
$comments$;

CREATE VIEW pg_labels.refusals WITH (security_invoker = true) AS
SELECT t.id AS step_id, t.run_id, t.run_scope, t.agent, t.tool, t.args, t.labels, t.decision,
       t.rule, t.reason, t.actor, t.created_at,
       'gate'::text AS source, t.kind, NULL::text AS sqlstate, 1::bigint AS count, NULL::xid8 AS xid,
       NULL::jsonb AS attempted
FROM pg_labels.trail t
WHERE t.kind = 'gate_decided' AND t.decision IN ('block', 'ask')
UNION ALL
SELECT NULL, w.run_id, w.run_scope, r.agent, w.tool, NULL, w.labels, 'block',
       w.rule, w.reason, w.actor, w.refused_at,
       'write', w.kind, w.sqlstate, w.count, w.xid, w.attempted
FROM pg_labels.refused_writes w
LEFT JOIN pg_labels.runs r ON r.id = w.run_id;
COMMENT ON VIEW pg_labels.refusals IS
    'Every refusal, by rule: gate decisions that blocked or asked (source gate, rows of the trail), and refused writes (source write: refused steps, runs not opened, shares, reads, crossings, approvals, changes of the sealed tables), recorded even though their statements rolled back';
COMMENT ON COLUMN pg_labels.refusals.step_id IS 'The gate_decided step (source gate)';
COMMENT ON COLUMN pg_labels.refusals.run_id IS 'Its run';
COMMENT ON COLUMN pg_labels.refusals.run_scope IS 'The run''s scope';
COMMENT ON COLUMN pg_labels.refusals.agent IS 'The run''s agent (when its run is one the reader sees)';
COMMENT ON COLUMN pg_labels.refusals.tool IS 'The tool the gate was asked about, or the refused call''s';
COMMENT ON COLUMN pg_labels.refusals.args IS 'The call''s arguments (source gate)';
COMMENT ON COLUMN pg_labels.refusals.labels IS 'What the step carried (source gate); the labels that escaped, or the run''s origins (source write)';
COMMENT ON COLUMN pg_labels.refusals.decision IS 'block or ask';
COMMENT ON COLUMN pg_labels.refusals.rule IS 'The rule (or check) that decided';
COMMENT ON COLUMN pg_labels.refusals.reason IS 'Why, in one line';
COMMENT ON COLUMN pg_labels.refusals.actor IS 'The role that asked or wrote';
COMMENT ON COLUMN pg_labels.refusals.created_at IS 'When';
COMMENT ON COLUMN pg_labels.refusals.source IS 'gate: a gate decision of the trail; write: a refused write, from pg_labels.refused_writes';
COMMENT ON COLUMN pg_labels.refusals.kind IS 'gate_decided, or what the refused write was (a step''s kind, run, share, crossing, ...)';
COMMENT ON COLUMN pg_labels.refusals.sqlstate IS 'The refused write''s SQLSTATE';
COMMENT ON COLUMN pg_labels.refusals.count IS 'How many refusals the row stands for (refused writes past a backend''s budget are counted together)';
COMMENT ON COLUMN pg_labels.refusals.xid IS 'The refusing backend''s transaction id, when it had one';
COMMENT ON COLUMN pg_labels.refusals.attempted IS 'What the refused write claimed (source write): a run''s scope and labels, a share''s target, a crossing''s scopes; a claim, not a fact';

CREATE VIEW pg_labels.approval_points WITH (security_invoker = true) AS
SELECT v.agent, v.version, v.scope, p.step, p.tool, t.effect, p.path, v.published_at
FROM pg_labels.agent_versions v
CROSS JOIN LATERAL pg_catalog.jsonb_to_recordset(v.needs_approval) AS p (step text, tool text, path text)
LEFT JOIN pg_labels.tools t ON t.name = p.tool;
COMMENT ON VIEW pg_labels.approval_points IS
    'The reversible writes of published versions that untrusted data can reach: the gate asks a person for each such call';
COMMENT ON COLUMN pg_labels.approval_points.agent IS 'The published agent';
COMMENT ON COLUMN pg_labels.approval_points.version IS 'Its version';
COMMENT ON COLUMN pg_labels.approval_points.scope IS 'The scope its runs have';
COMMENT ON COLUMN pg_labels.approval_points.step IS 'The declared step that needs a person';
COMMENT ON COLUMN pg_labels.approval_points.tool IS 'The tool it calls';
COMMENT ON COLUMN pg_labels.approval_points.effect IS 'The tool''s effect in the catalog now';
COMMENT ON COLUMN pg_labels.approval_points.path IS 'How untrusted data reaches it: the declared steps, from the source';
COMMENT ON COLUMN pg_labels.approval_points.published_at IS 'When the version was published';

CREATE VIEW pg_labels.approval_requests WITH (security_invoker = true) AS
SELECT q.id, q.run_id, r.scope AS run_scope, r.agent, r.agent_version, q.tool, q.args, q.labels,
       q.reason, q.actor AS requested_by, q.created_at AS requested_at, q.expires_at,
       CASE WHEN d.id IS NULL AND q.expires_at <= pg_catalog.clock_timestamp() THEN 'expired'
            WHEN d.id IS NULL THEN 'pending'
            WHEN d.decision = 'granted' THEN 'granted'
            WHEN d.actor = q.actor THEN 'withdrawn'
            ELSE 'denied' END AS status,
       d.actor AS decided_by, d.created_at AS decided_at, d.reason AS decision_reason,
       d.id AS decision_id, u.id AS used_by
FROM pg_labels.steps q
JOIN pg_labels.runs r ON r.id = q.run_id
LEFT JOIN LATERAL (SELECT d.id, d.decision, d.actor, d.created_at, d.reason FROM pg_labels.steps d
                    WHERE d.request_id = q.id AND d.run_id = q.run_id AND d.kind = 'approval_decided'
                    ORDER BY d.id LIMIT 1) d ON true
LEFT JOIN LATERAL (SELECT u.id FROM pg_labels.steps u
                    WHERE u.request_id = q.id AND u.run_id = q.run_id AND u.kind = 'tool_called'
                    ORDER BY u.id LIMIT 1) u ON true
WHERE q.kind = 'approval_requested';
COMMENT ON VIEW pg_labels.approval_requests IS
    'Every approval request the reader may read, with its state: pending, granted, denied, withdrawn (by its requester) or expired (undecided past expires_at)';
COMMENT ON COLUMN pg_labels.approval_requests.id IS 'The request (its approval_requested step; the payload of a NOTIFY on pg_labels_approvals)';
COMMENT ON COLUMN pg_labels.approval_requests.run_id IS 'Its run';
COMMENT ON COLUMN pg_labels.approval_requests.run_scope IS 'The run''s scope';
COMMENT ON COLUMN pg_labels.approval_requests.agent IS 'The run''s agent';
COMMENT ON COLUMN pg_labels.approval_requests.agent_version IS 'The published version the run runs, if any';
COMMENT ON COLUMN pg_labels.approval_requests.tool IS 'The tool the call would call';
COMMENT ON COLUMN pg_labels.approval_requests.args IS 'The call''s real arguments';
COMMENT ON COLUMN pg_labels.approval_requests.labels IS 'What the request step carried';
COMMENT ON COLUMN pg_labels.approval_requests.reason IS 'Why it asks, as the requester wrote it';
COMMENT ON COLUMN pg_labels.approval_requests.requested_by IS 'The role that requested it';
COMMENT ON COLUMN pg_labels.approval_requests.requested_at IS 'When';
COMMENT ON COLUMN pg_labels.approval_requests.expires_at IS 'When it expires undecided (NULL: never)';
COMMENT ON COLUMN pg_labels.approval_requests.status IS 'pending, granted, denied, withdrawn or expired';
COMMENT ON COLUMN pg_labels.approval_requests.decided_by IS 'The person who decided it (the requester, when withdrawn)';
COMMENT ON COLUMN pg_labels.approval_requests.decided_at IS 'When it was decided';
COMMENT ON COLUMN pg_labels.approval_requests.decision_reason IS 'The decider''s reason';
COMMENT ON COLUMN pg_labels.approval_requests.decision_id IS 'The approval_decided step';
COMMENT ON COLUMN pg_labels.approval_requests.used_by IS 'The tool_called step that used the granted approval, once used';


-- Ledger digests (pg_labels.ledger_digest()): the root a DBA keeps outside the database, and
-- which runs it covered at which length and head (the marks verify_digest() and prove() start
-- from; a change to them shows against the root kept outside). Only the owner reads them.
CREATE TABLE pg_labels.digests (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    taken_at timestamptz NOT NULL DEFAULT now(),
    root bytea NOT NULL,
    runs bigint NOT NULL,
    steps bigint NOT NULL,
    marks bytea NOT NULL
);
COMMENT ON TABLE pg_labels.digests IS
    'Ledger digests taken by pg_labels.ledger_digest(): the Merkle root over every run''s chain head, and the runs it covered';
COMMENT ON COLUMN pg_labels.digests.id IS 'The digest (named in the value ledger_digest() returns)';
COMMENT ON COLUMN pg_labels.digests.taken_at IS 'When it was taken';
COMMENT ON COLUMN pg_labels.digests.root IS 'RFC 6962 Merkle root over one leaf per run: (run, chain length, chain head), in run order';
COMMENT ON COLUMN pg_labels.digests.runs IS 'How many runs it covers';
COMMENT ON COLUMN pg_labels.digests.steps IS 'How many steps their chains held';
COMMENT ON COLUMN pg_labels.digests.marks IS 'Per run, in run order: its id (16 bytes), chain length (8 bytes, big-endian) and head (32 bytes)';

SELECT pg_catalog.pg_extension_config_dump('pg_labels.tools', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.tool_namespaces', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.tool_definitions', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.tool_definitions_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.digests', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.digests_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.listeners', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.listeners_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.grants', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.agent_versions', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.runs', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.steps_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.crossings', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.crossings_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.artifacts', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.shares', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.shares_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.refused_writes', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.refused_writes_id_seq', '');
$schema$; END $platform$; -- citus-copy
