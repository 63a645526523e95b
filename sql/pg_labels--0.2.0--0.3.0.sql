-- pg_labels 0.2.0 -> 0.3.0, a security release (CHANGELOG.md, 0.3.0).
--
-- - purge(): refuses NULL (no longer STRICT), infinite cutoffs and the present (the function
--   checks; its comment says so);
-- - steps and shares keep the scope they can be read in (carried_scope); their policies decide
--   from it alone, and grants' from member_of(), so no policy reads another row. Rows written
--   before the update are read where their run's (artifact's) labels are now, as before;
--   the functions that looked runs and artifacts up for a policy go;
-- - protect(): a row written can be read exactly in the entered scope (pg_labels.writable());
--   tables protected before the update get the same check.

-- A distributed installation (pg_labels.distribute() on Citus) is not updated by this script:
-- Citus carries neither its settings nor all of its statements to the workers' shards. Refused
-- before anything changes (README, Scaling out with Citus).
DO $citus$
DECLARE
    distributed boolean := false;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE $q$SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                                   WHERE logicalrelid OPERATOR(pg_catalog.=) 'pg_labels.runs'::pg_catalog.regclass)$q$
           INTO distributed;
    END IF;
    IF distributed THEN
        RAISE EXCEPTION 'pg_labels 0.3.0 does not update a distributed installation yet'
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'See docs/citus.md (Scaling out with Citus): dump the platform''s rows, install 0.3.0 afresh, distribute and load them.';
    END IF;
END
$citus$;

ALTER FUNCTION pg_labels.purge(timestamptz) CALLED ON NULL INPUT;
COMMENT ON FUNCTION pg_labels.purge(timestamptz) IS
    'Retention: empties the months of the trail before the cutoff''s and deletes whole runs opened before the cutoff without a later step; returns the number of runs. Never the present: a cutoff later than the start of the previous month (UTC), infinite or NULL is refused';

-- The policies of steps and shares, and what protect() checks of a row written: decided from
-- the row alone
CREATE FUNCTION pg_labels.readable_in(tab pg_catalog.regclass, scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_readable_in' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.readable_in(pg_catalog.regclass, @extschema@.scope) IS
    'A row of tab that can be read in this scope (its carried_scope) is one the caller sees: a writer of tab (INSERT on it), or the entered scope reaches the scope';
CREATE FUNCTION pg_labels.writable(labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_writable' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.writable(@extschema@.labelset) IS
    'A row with these labels may be written to a protected table: it can be read exactly in the entered scope (the deepest scope that can carry the labels is the entered one), so data is never labelled down to a scope more analysts reach';

-- The trail's kinds and decisions checked by a function (its CHECK constraints are read
-- again at every statement; a list of constants costs a single-row insert about 15 µs)
CREATE FUNCTION pg_labels.is_step_kind(kind text) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_is_step_kind' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pg_labels.is_step_kind(text) IS
    'A kind of step: input, planned, gate_decided, approval_requested, approval_decided, tool_called, tool_result or context_read (the trail''s steps_kind_check)';
CREATE FUNCTION pg_labels.is_step_decision(decision text) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_is_step_decision' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pg_labels.is_step_decision(text) IS
    'A decision a step holds: allow, ask or block (a judged call), granted or denied (a person''s on an approval request; the trail''s steps_decision_check)';

ALTER TABLE pg_labels.steps
    DROP CONSTRAINT steps_kind_check, DROP CONSTRAINT steps_decision_check,
    ADD CONSTRAINT steps_kind_check CHECK (pg_labels.is_step_kind(kind)),
    ADD CONSTRAINT steps_decision_check CHECK (pg_labels.is_step_decision(decision));

-- The scope each step and share can be read in
ALTER TABLE pg_labels.steps ADD COLUMN carried_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.steps.carried_scope IS
    'Where the step can be read: the deepest scope that can carry what its run carried once the step was written (its labels with the run''s); an analyst sees the step when the entered scope reaches it (set by the database)';
ALTER TABLE pg_labels.shares ADD COLUMN carried_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.shares.carried_scope IS
    'Where the share can be read: the deepest scope that can carry its artifact''s labels; an analyst sees the share when the entered scope reaches it (set by the database)';
-- rows written before: where their run's labels (the artifact's) can be read now, as the
-- policies of 0.2.0 decided (the append-only triggers let a superuser fill this column, and
-- only it, from NULL)
UPDATE pg_labels.steps s
   SET carried_scope = @extschema@.scope_lca(r.scope, coalesce(@extschema@.labelset_scope(r.labels), r.scope))
  FROM pg_labels.runs r WHERE r.id = s.run_id;
UPDATE pg_labels.shares sh SET carried_scope = coalesce(@extschema@.labelset_scope(a.labels), '*')
  FROM pg_labels.artifacts a WHERE a.id = sh.artifact_id;

COMMENT ON FUNCTION pg_labels.start_chains() IS
    'Chains the runs that have no hash chain (kept by a release without chains, or loaded around the triggers) from what they hold now, and fills the scope steps and shares are read in where a release before 0.3.0 left none; a superuser runs it with session_replication_role = replica, as ALTER EXTENSION UPDATE does; returns the number of runs chained';

-- The policies of steps (and every partition of its ring), shares and grants
DO $policies$
DECLARE
    part text;
BEGIN
    FOR part IN SELECT c.relname FROM pg_catalog.pg_class c
                 WHERE c.oid = 'pg_labels.steps'::pg_catalog.regclass
                    OR c.oid IN (SELECT inhrelid FROM pg_catalog.pg_inherits
                                  WHERE inhparent = 'pg_labels.steps'::pg_catalog.regclass)
    LOOP
        EXECUTE pg_catalog.format('DROP POLICY steps_visible ON pg_labels.%I', part);
        EXECUTE pg_catalog.format($p$CREATE POLICY steps_visible ON pg_labels.%I
            USING (pg_labels.readable_in('pg_labels.steps'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope)))$p$, part);
    END LOOP;
END
$policies$;
DROP POLICY shares_visible ON pg_labels.shares;
CREATE POLICY shares_visible ON pg_labels.shares
    USING (pg_labels.readable_in('pg_labels.shares'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope)));
DROP POLICY grants_visible ON pg_labels.grants;
CREATE POLICY grants_visible ON pg_labels.grants
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.grants'::pg_catalog.regclass, 'INSERT'))
           OR pg_labels.member_of(role)
           OR pg_labels.visible(@extschema@.labelset(scope)));

-- No policy looks runs or artifacts up any more (the library keeps their symbols for the
-- install script of 0.2.0)
DROP FUNCTION pg_labels.step_readable(pg_catalog.regclass, @extschema@.labelset, uuid);
DROP FUNCTION pg_labels.run_visible(oid, uuid);
DROP FUNCTION pg_labels.artifact_visible(oid, uuid);

-- protect(): a row written can be read exactly in the entered scope
CREATE OR REPLACE FUNCTION pg_labels.protect(tab regclass, col name DEFAULT 'labels') RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    want oid := '@extschema@.labelset'::pg_catalog.regtype;
    got oid;
    part regclass;
    nsp name;
    rel name;
BEGIN
    SELECT a.atttypid INTO got FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = tab AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, tab USING ERRCODE = 'undefined_column';
    END IF;
    IF got <> want THEN
        RAISE EXCEPTION 'column "%" of relation % is of type %, not labelset', col, tab, got::regtype
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'pg_labels.protect() guards a table by the labelset column that labels its rows.';
    END IF;
    -- the table and every partition or child it has now (a query naming a partition is not
    -- filtered by its parent's policies)
    FOR part, nsp, rel IN WITH RECURSIVE tree (rel) AS (
                    SELECT tab::oid
                    UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree t ON i.inhparent = t.rel)
                SELECT c.oid::regclass, n.nspname, c.relname FROM tree
                  JOIN pg_catalog.pg_class c ON c.oid = tree.rel
                  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    LOOP
        EXECUTE format('ALTER TABLE %I.%I ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY', nsp, rel);
        IF EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polname = 'pg_labels_visible') THEN
            EXECUTE format('DROP POLICY pg_labels_visible ON %I.%I', nsp, rel);
        END IF;
        EXECUTE format('CREATE POLICY pg_labels_visible ON %I.%I AS RESTRICTIVE USING (pg_labels.visible(%I)) WITH CHECK (pg_labels.writable(%I))',
                       nsp, rel, col, col);
        -- restrictive policies only narrow what a permissive one allows: add one if there is none
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polpermissive) THEN
            EXECUTE format('CREATE POLICY pg_labels_permit ON %I.%I USING (true) WITH CHECK (true)', nsp, rel);
        END IF;
        -- fail closed: DROP EXTENSION ... CASCADE drops pg_labels_visible (it calls visible())
        -- and may drop the labels column; this guard stays and then lets nothing through, until
        -- protect() is run again
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polname = 'pg_labels_guard') THEN
            EXECUTE format($g$CREATE POLICY pg_labels_guard ON %I.%I AS RESTRICTIVE
                USING (EXISTS (SELECT FROM pg_catalog.pg_policy p
                                WHERE p.polrelid = %L::pg_catalog.regclass AND p.polname = 'pg_labels_visible'))
                WITH CHECK (EXISTS (SELECT FROM pg_catalog.pg_policy p
                                     WHERE p.polrelid = %L::pg_catalog.regclass AND p.polname = 'pg_labels_visible'))$g$,
                nsp, rel, part::text, part::text);
        END IF;
    END LOOP;
END $$;
COMMENT ON FUNCTION pg_labels.protect(regclass, name) IS
    'Enables and forces row-level security on a table (and its partitions and children) with a policy on visible(col) for reads and writable(col) for writes (a row written can be read exactly in the entered scope); a guard policy keeps the table closed if the extension is dropped';
-- and every table protected before (under 0.1.0 or 0.2.0): protect() again, so it has the same
-- policies as a table protected now (the write check, and the guard that keeps it closed after
-- DROP EXTENSION ... CASCADE, which 0.1.0 did not add); the column is the one its policy uses
DO $reprotect$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT DISTINCT pol.polrelid::pg_catalog.regclass AS tab, a.attname
               FROM pg_catalog.pg_policy pol
               JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass
                                          AND d.objid = pol.oid AND d.refobjid = pol.polrelid AND d.refobjsubid > 0
               JOIN pg_catalog.pg_attribute a ON a.attrelid = pol.polrelid AND a.attnum = d.refobjsubid
              WHERE pol.polname = 'pg_labels_visible' AND a.atttypid = '@extschema@.labelset'::pg_catalog.regtype
    LOOP
        PERFORM pg_labels.protect(p.tab, p.attname);
    END LOOP;
END
$reprotect$;

CREATE FUNCTION pg_labels.refusals_recorded(timeout interval DEFAULT '10 seconds') RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_refusals_recorded' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pg_labels.refusals_recorded(interval) IS
    'Waits until every refusal this session made is written to pg_labels.refused_writes (by a background worker, in a transaction of its own); false if that did not happen within the timeout';

-- The record of refused writes (every refusal on the record, even when its statement rolls
-- back), and pg_labels.refusals over it and the gate's refusals
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
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.refused_writes IS
    'Every refusal of the platform''s triggers and of the functions that write as the owner, recorded in a transaction of its own: it survives the rollback of the refused statement. Written by a background worker only; read through pg_labels.refusals; removed by purge() with the trail''s months; outside the hash chains';
COMMENT ON COLUMN pg_labels.refused_writes.id IS 'The record';
COMMENT ON COLUMN pg_labels.refused_writes.refused_at IS 'When the write was refused (the clock of the backend that refused it)';
COMMENT ON COLUMN pg_labels.refused_writes.last_at IS 'When the last refusal it counts was made (past the budget of records a backend hands over in a second, alike refusals are counted in one record)';
COMMENT ON COLUMN pg_labels.refused_writes.count IS 'How many refusals it stands for: 1, or more for refusals counted together';
COMMENT ON COLUMN pg_labels.refused_writes.kind IS 'What was refused: a step''s kind (tool_called, gate_decided, context_read, approval_decided, ...), or run, share, artifact, crossing, agent_version, approval, or an update, delete or truncate of a table';
COMMENT ON COLUMN pg_labels.refused_writes.run_id IS 'The run, when there is one';
COMMENT ON COLUMN pg_labels.refused_writes.run_scope IS 'The run''s scope (for a run not opened, the one it was to have)';
COMMENT ON COLUMN pg_labels.refused_writes.carried_scope IS 'Where the record can be read: the run''s scope, or the share''s or crossing''s target (NULL: in * only); an analyst sees it when the entered scope reaches it';
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
CREATE INDEX refused_writes_refused_at_idx ON pg_labels.refused_writes (refused_at);
CREATE INDEX refused_writes_run_idx ON pg_labels.refused_writes (run_id) WHERE run_id IS NOT NULL;
CREATE TRIGGER refused_writes_append_only BEFORE UPDATE OR DELETE ON pg_labels.refused_writes
    FOR EACH ROW EXECUTE FUNCTION pg_labels.append_only();
CREATE TRIGGER refused_writes_no_truncate BEFORE TRUNCATE ON pg_labels.refused_writes
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only();
ALTER TABLE pg_labels.refused_writes ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY refused_writes_visible ON pg_labels.refused_writes
    USING (pg_labels.readable_in('pg_labels.refused_writes'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope)));
SELECT pg_catalog.pg_extension_config_dump('pg_labels.refused_writes', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.refused_writes_id_seq', '');
-- (its columns as before, the new ones after: the grants on it stay)
CREATE OR REPLACE VIEW pg_labels.refusals WITH (security_invoker = true) AS
SELECT t.id AS step_id, t.run_id, t.run_scope, t.agent, t.tool, t.args, t.labels, t.decision,
       t.rule, t.reason, t.actor, t.created_at,
       'gate'::text AS source, t.kind, NULL::text AS sqlstate, 1::bigint AS count, NULL::xid8 AS xid
FROM pg_labels.trail t
WHERE t.kind = 'gate_decided' AND t.decision IN ('block', 'ask')
UNION ALL
SELECT NULL, w.run_id, w.run_scope, r.agent, w.tool, NULL, w.labels, 'block',
       w.rule, w.reason, w.actor, w.refused_at,
       'write', w.kind, w.sqlstate, w.count, w.xid
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
-- distribute(): the Citus policies of steps and shares read the row's carried_scope
CREATE OR REPLACE FUNCTION pg_labels.distribute(shard_count int DEFAULT 32) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $distribute$
DECLARE
    r record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'pg_labels.distribute() needs Citus'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on a Citus coordinator (shared_preload_libraries = ''citus'', CREATE EXTENSION citus).';
    END IF;
    IF NOT pg_catalog.citus_is_coordinator() THEN
        RAISE EXCEPTION 'pg_labels.distribute() runs on the Citus coordinator' USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF pg_catalog.current_setting('citus.enable_unsafe_triggers') <> 'on' THEN
        RAISE EXCEPTION 'pg_labels.distribute() needs citus.enable_unsafe_triggers = on'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The platform''s tables are guarded by triggers, which Citus runs on their shards only with this setting.',
                  HINT = 'ALTER SYSTEM SET citus.enable_unsafe_triggers = on on every node, and reload.';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = 'pg_labels.runs'::pg_catalog.regclass) THEN
        RAISE NOTICE 'pg_labels is distributed already';
        RETURN;
    END IF;

    -- 1. The tables leave the extension: Citus manages them from now on (it cannot manage an
    --    extension's tables). The functions, types and views stay the extension's.
    FOR r IN SELECT c.relname FROM pg_catalog.pg_class c
              WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace AND c.relkind IN ('r', 'p')
                AND EXISTS (SELECT FROM pg_catalog.pg_depend d
                             WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                               AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e')
    LOOP
        EXECUTE pg_catalog.format('ALTER EXTENSION pg_labels DROP TABLE pg_labels.%I', r.relname);
    END LOOP;

    -- 2. A unique key of a distributed table holds its distribution column.
    ALTER TABLE pg_labels.steps DROP CONSTRAINT steps_pkey;
    ALTER TABLE pg_labels.steps ADD PRIMARY KEY (run_id, id, slot);
    CREATE INDEX steps_id_idx ON pg_labels.steps (id);
    -- a reference table's row is written on every node: its id is taken once, where the
    -- statement enters the cluster (Citus evaluates a default there)
    ALTER TABLE pg_labels.shares ALTER COLUMN id SET DEFAULT pg_labels.next_share_id();

    -- 3. Citus runs no subquery in a policy: the same rules without one (the writers' check is
    --    made per row; a step and a share are read in the scope kept in the row).
    FOR r IN SELECT p.polname, c.relname FROM pg_catalog.pg_policy p
               JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
              WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace
    LOOP
        EXECUTE pg_catalog.format('DROP POLICY %I ON pg_labels.%I', r.polname, r.relname);
    END LOOP;
    CREATE POLICY runs_visible ON pg_labels.runs
        USING (pg_catalog.has_table_privilege('pg_labels.runs'::pg_catalog.text, 'INSERT')
               OR pg_labels.visible(labels));
    FOR r IN SELECT c.relname FROM pg_catalog.pg_class c
              WHERE c.oid = 'pg_labels.steps'::pg_catalog.regclass
                 OR c.oid IN (SELECT inhrelid FROM pg_catalog.pg_inherits
                               WHERE inhparent = 'pg_labels.steps'::pg_catalog.regclass)
    LOOP
        EXECUTE pg_catalog.format($p$CREATE POLICY steps_visible ON pg_labels.%I
            USING (pg_catalog.has_table_privilege('pg_labels.steps'::pg_catalog.text, 'INSERT')
                   OR pg_labels.visible(@extschema@.labelset(coalesce(carried_scope, '*'::@extschema@.scope))))$p$, r.relname);
    END LOOP;
    CREATE POLICY artifacts_visible ON pg_labels.artifacts
        USING (pg_catalog.has_table_privilege('pg_labels.artifacts'::pg_catalog.text, 'INSERT')
               OR pg_labels.visible(labels));
    CREATE POLICY shares_visible ON pg_labels.shares
        USING (pg_catalog.has_table_privilege('pg_labels.shares'::pg_catalog.text, 'INSERT')
               OR pg_labels.visible(@extschema@.labelset(coalesce(carried_scope, '*'::@extschema@.scope))));
    CREATE POLICY agent_versions_visible ON pg_labels.agent_versions
        USING (pg_catalog.has_table_privilege('pg_labels.agent_versions'::pg_catalog.text, 'INSERT')
               OR pg_labels.visible(@extschema@.labelset(scope)));
    CREATE POLICY listeners_visible ON pg_labels.listeners
        USING (pg_catalog.has_table_privilege('pg_labels.listeners'::pg_catalog.text, 'INSERT')
               OR pg_labels.visible(@extschema@.labelset(scope)));
    CREATE POLICY crossings_visible ON pg_labels.crossings
        USING (pg_catalog.has_function_privilege(
                   'pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz)', 'EXECUTE')
               OR pg_catalog.has_function_privilege('pg_labels.revoke_crossing(bigint, text)', 'EXECUTE')
               OR pg_labels.visible(@extschema@.labelset(from_scope))
               OR pg_labels.visible(@extschema@.labelset(to_scope)));
    CREATE POLICY grants_visible ON pg_labels.grants
        USING (pg_catalog.has_table_privilege('pg_labels.grants'::pg_catalog.text, 'INSERT')
               OR pg_labels.member_of(role) OR pg_labels.visible(@extschema@.labelset(scope)));

    -- 4. The key an entered scope is sealed with for the workers, for the role that entered it
    --    (README, Scaling out with Citus): random, read by the tables' owner only.
    CREATE TABLE pg_labels.carry_key (key bytea NOT NULL);
    COMMENT ON TABLE pg_labels.carry_key IS
        'The key of the HMAC that binds a scope carried to the workers to the role that entered it (made by pg_labels.distribute(); only the tables'' owner reads it)';
    INSERT INTO pg_labels.carry_key (key)
    SELECT pg_catalog.decode(pg_catalog.replace(pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text,
                                                '-', ''), 'hex');
    REVOKE ALL ON pg_labels.carry_key FROM PUBLIC;

    -- 5. The catalogs on every node; runs and the trail spread by run, each run's steps with it.
    PERFORM pg_catalog.create_reference_table(t)
       FROM pg_catalog.unnest(ARRAY['pg_labels.tools', 'pg_labels.grants', 'pg_labels.listeners',
                                    'pg_labels.agent_versions', 'pg_labels.crossings',
                                    'pg_labels.artifacts', 'pg_labels.shares',
                                    'pg_labels.carry_key']::pg_catalog.regclass[]) t;
    PERFORM pg_catalog.create_distributed_table('pg_labels.runs', 'id', shard_count => shard_count);
    PERFORM pg_catalog.create_distributed_table('pg_labels.steps', 'run_id', colocate_with => 'pg_labels.runs');
END
$distribute$;
COMMENT ON FUNCTION pg_labels.distribute(int) IS
    'On a Citus coordinator: the catalogs become reference tables, runs and steps are distributed by run (co-located); see docs/citus.md';

-- shard_sequence(): says what each format() placeholder of its statements takes
CREATE OR REPLACE FUNCTION pg_labels.shard_sequence(shard bigint, trail regclass) RETURNS regclass
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET citus.enable_ddl_propagation = off
AS $shard_sequence$
DECLARE
    seq text := pg_catalog.format('pg_labels.%I', 'steps_id_seq_' || shard);
    low bigint := shard << 32;
    high bigint := ((shard + 1) << 32) - 1;
    top bigint;
    session_lock boolean := false;
BEGIN
    -- One backend at a time per shard: the sequence is made, or moved past what arrived, once.
    -- Made: under a lock held until this transaction ends (another backend's CREATE ... IF NOT
    -- EXISTS would fail on the sequence not yet committed). There already: under a lock given
    -- up at once (a sequence's values are not transactional), not held to the end of a
    -- transaction whose step then waits for its run's row while another step holding that row
    -- waits for this lock (a deadlock the Citus suite's storm met)
    IF pg_catalog.to_regclass(seq) IS NULL THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('pg_labels.shard_sequence'), shard::int);
        -- %s: seq, made with %I above, and three bigints
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS %s MINVALUE %s MAXVALUE %s START %s',
                                  seq, low + 1, high, low + 1);
    ELSE
        PERFORM pg_catalog.pg_advisory_lock(pg_catalog.hashtext('pg_labels.shard_sequence'), shard::int);
        session_lock := true;
    END IF;
    BEGIN
        -- %s: trail, a regclass (its text is the quoted, qualified name), and two bigints
        EXECUTE pg_catalog.format('SELECT max(id) FROM %s WHERE id BETWEEN %s AND %s', trail, low, high) INTO top;
        -- Only forward, and only when behind the ids the shard holds (after a move): backends
        -- that made or moved it before take ids from it meanwhile without this lock, and a
        -- setval to what they had already passed would hand their ids out again
        IF top IS NOT NULL AND top > COALESCE(pg_catalog.pg_sequence_last_value(seq::pg_catalog.regclass), low) THEN
            PERFORM pg_catalog.setval(seq, top);
        END IF;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        IF session_lock THEN
            PERFORM pg_catalog.pg_advisory_unlock(pg_catalog.hashtext('pg_labels.shard_sequence'), shard::int);
        END IF;
        RAISE;
    END;
    IF session_lock THEN
        PERFORM pg_catalog.pg_advisory_unlock(pg_catalog.hashtext('pg_labels.shard_sequence'), shard::int);
    END IF;
    RETURN seq::pg_catalog.regclass;
END
$shard_sequence$;
