-- pg_labels: the schema pg_labels and the functions of the platform (the tables, views,
-- triggers and policies are in sql/schema.sql).

-- The pg_ prefix is reserved, so creating this schema needs allow_system_table_mods, for this
-- one statement (CREATE EXTENSION runs as a superuser and restores settings at its end anyway).
SET allow_system_table_mods = on;
CREATE SCHEMA pg_labels;
RESET allow_system_table_mods;
COMMENT ON SCHEMA pg_labels IS 'pg_labels platform tables: runs, steps, tools, listeners, artifacts, shares, crossings, agent versions, grants';

--------------------------------------------------------------------------------------------
-- Trigger functions (C, src/platform/): each refuses to run for any other table, event,
-- timing or level than the one it is attached to in sql/schema.sql
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

CREATE FUNCTION pg_labels.artifacts_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_artifacts_insert' LANGUAGE C;
CREATE FUNCTION pg_labels.shares_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_shares_insert' LANGUAGE C;
CREATE FUNCTION pg_labels.crossings_guard() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_crossings_guard' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.artifacts_insert() IS
    'A new artifact: locks its origin run and records at least the labels the run carries';
COMMENT ON FUNCTION pg_labels.shares_insert() IS
    'A new share: refused (data_barrier) unless its scope can carry the artifact''s labels or one active crossing covers the rest; records the crossing used';
COMMENT ON FUNCTION pg_labels.crossings_guard() IS
    'Crossings are recorded only by pg_labels.authorize_crossing() and changed only by pg_labels.revoke_crossing()';

CREATE FUNCTION pg_labels.tools_change() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_tools_change' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.tools_change() IS
    'Before a change to the tool catalog: waits for the decisions in flight (EXCLUSIVE on pg_labels.tools; decisions hold ROW SHARE)';

-- May the current role write this tool as this owner: the owner's claim of the tool's
-- namespace is the current role's (or a role it is a member of). The tools' policies call it
-- (PL/pgSQL: made before the table it reads, and on a Citus worker's copy, whose tables come
-- with distribute())
CREATE FUNCTION pg_labels.tool_claimed(tool text, owner text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $claimed$
BEGIN
    RETURN owner IS NOT NULL AND pg_catalog.strpos(tool, '.') > 1
       AND EXISTS (SELECT 1 FROM pg_labels.tool_namespaces n
                    WHERE n.namespace = pg_catalog.split_part(tool, '.', 1) AND n.owner = tool_claimed.owner
                      AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
                                   WHERE r.rolname = n.role AND pg_catalog.pg_has_role(r.oid, 'MEMBER')));
END
$claimed$;
COMMENT ON FUNCTION pg_labels.tool_claimed(text, text) IS
    'Whether the current role may write the tool as the owner: the owner claimed the tool''s namespace for this role (tool_namespaces)';

-- May the current role accept a definition of this tool as this owner: the namespace is the
-- owner's for this role, and the tool is the owner's own (or not in the catalog yet)
CREATE FUNCTION pg_labels.tool_acceptable(tool text, owner text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $acceptable$
BEGIN
    RETURN pg_labels.tool_claimed(tool, owner)
       AND NOT EXISTS (SELECT 1 FROM pg_labels.tools t
                        WHERE t.name = tool_acceptable.tool AND t.owner IS DISTINCT FROM tool_acceptable.owner);
END
$acceptable$;
COMMENT ON FUNCTION pg_labels.tool_acceptable(text, text) IS
    'Whether the current role may accept a definition of the tool as the owner: the tool is the owner''s (or new) in a namespace given to the owner for this role';

CREATE FUNCTION pg_labels.granted_scopes() RETURNS TABLE (scope @extschema@.scope)
AS 'MODULE_PATHNAME', 'pgl_granted_scopes' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.granted_scopes() IS
    'The scopes the current role''s grants (its own and those of the roles it is a member of) give it: where it may act';
CREATE FUNCTION pg_labels.acts_in(scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_acts_in' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.acts_in(@extschema@.scope) IS
    'The current role may act in this scope: a grant of it (or of a role it is a member of) reaches it, or it owns the platform''s tables or is a superuser (the writers'' clause of the policies on Citus)';
CREATE FUNCTION pg_labels.grants_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_grants_changed' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.grants_changed() IS
    'After a change to pg_labels.grants: every backend finds again where each role may act (its grants'' scopes, which it keeps)';
CREATE FUNCTION pg_labels.listeners_write() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_listeners_write' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.listeners_write() IS
    'A listener is bound only in a scope the writer''s grants reach';

CREATE FUNCTION pg_labels.agent_versions_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_agent_versions_insert' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.agent_versions_insert() IS
    'The publication check: refuses a version whose declared steps let untrusted data reach an irreversible tool; records the steps that need approval';

--------------------------------------------------------------------------------------------
-- Approvals, retention, context, crossings
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.decide_approval(request bigint, granted boolean, reason text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_decide_approval' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) IS
    'Records a person''s decision on an approval request; EXECUTE only for roles the DBA grants it to, never the requester';

CREATE FUNCTION pg_labels.withdraw_approval(request bigint, reason text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_withdraw_approval' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.withdraw_approval(bigint, text) IS
    'The requester withdraws its own undecided approval request (it stopped waiting): records it denied, with the requester as the decider';

CREATE FUNCTION pg_labels.purge(older_than timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_purge' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.purge(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.purge(timestamptz) IS
    'Retention: empties the months of the trail before the cutoff''s and deletes whole runs opened before the cutoff without a later step; returns the number of runs. Never the present: a cutoff later than the start of the previous month (UTC), infinite or NULL is refused';

CREATE FUNCTION pg_labels.refusals_recorded(timeout interval DEFAULT '10 seconds') RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_refusals_recorded' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pg_labels.refusals_recorded(interval) IS
    'Waits until every refusal this session made is written to pg_labels.refused_writes (by a background worker, in a transaction of its own); false if that did not happen within the timeout';

CREATE FUNCTION pg_labels.digest(content bytea) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT pg_catalog.encode(pg_catalog.sha256(content), 'hex');
END;
CREATE FUNCTION pg_labels.digest(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(content, 'UTF8')), 'hex');
END;
COMMENT ON FUNCTION pg_labels.digest(bytea) IS 'An artifact''s digest: the hex SHA-256 of the content';
COMMENT ON FUNCTION pg_labels.digest(text) IS 'An artifact''s digest: the hex SHA-256 of the content''s UTF-8 bytes';

CREATE FUNCTION pg_labels.authorize_crossing(from_scope @extschema@.scope, to_scope @extschema@.scope,
                                             reason text, expires_at timestamptz DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_authorize_crossing' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz) IS
    'Records a crossing: data of from_scope may be carried within to_scope until expires_at (NULL: until revoked); the caller is recorded in authorized_by. EXECUTE only for roles the DBA grants it to';

CREATE FUNCTION pg_labels.revoke_crossing(crossing bigint, reason text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'pgl_revoke_crossing' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.revoke_crossing(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.revoke_crossing(bigint, text) IS
    'Ends a crossing now: later shares, reads and tool calls are judged without it. EXECUTE only for roles the DBA grants it to';

--------------------------------------------------------------------------------------------
-- Scopes (row-level security) and provenance
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.enter_scope(scope @extschema@.scope, for_session boolean DEFAULT false)
RETURNS @extschema@.scope
AS 'MODULE_PATHNAME', 'pgl_enter_scope' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pg_labels.enter_scope(@extschema@.scope, boolean) IS
    'Enters a scope a grant of the current role (or a role it is a member of) reaches, until the end of the transaction (for_session: until leave_scope(), DISCARD ALL or the end of the session); refused (42501) otherwise';

CREATE FUNCTION pg_labels.leave_scope() RETURNS void
AS 'MODULE_PATHNAME', 'pgl_leave_scope' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pg_labels.leave_scope() IS 'Leaves the entered scope: nothing is visible any more';

CREATE FUNCTION pg_labels.current_scope() RETURNS @extschema@.scope
AS 'MODULE_PATHNAME', 'pgl_current_scope' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.current_scope() IS
    'The scope the current role entered; NULL when none (then nothing is visible)';

CREATE FUNCTION pg_labels.visible(labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_visible' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.visible(@extschema@.labelset) IS
    'The entered scope can carry these labels (false when no scope is entered): the row-level security predicate';

-- The policies of runs, artifacts, agent versions and listeners: a writer of the table sees
-- every row (asked per row and kept for the statement: a subquery in a policy is planned with
-- every query and tested in every row's qual). COST 10: a query's own cheap and leakproof
-- conditions (run_id = ...) are tested before them
CREATE FUNCTION pg_labels.readable(tab pg_catalog.regclass, labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_readable' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.readable(pg_catalog.regclass, @extschema@.labelset) IS
    'A row of tab with these labels is one the caller sees: a writer of tab (INSERT on it), or the entered scope can carry the labels';
-- The policies of the platform tables: decided from the scope a row can be read in, kept
-- inline in the row, and from what the query's start fixed (src/access/policy.rs)
CREATE FUNCTION pg_labels.readable_in(tab pg_catalog.regclass, scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_readable_in' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.readable_in(pg_catalog.regclass, @extschema@.scope) IS
    'A row of tab that can be read in this scope (its carried_scope, or its scope column) is one the caller sees: the entered scope reaches it, or the caller writes tab (INSERT on it; for crossings EXECUTE on their functions) and its grants reach it';
CREATE FUNCTION pg_labels.readable_in(tab pg_catalog.regclass, scope @extschema@.scope, run_scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_readable_in_run' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.readable_in(pg_catalog.regclass, @extschema@.scope, @extschema@.scope) IS
    'A row of tab that analysts read in scope and its writers in run_scope (a step, artifact or share: its run''s scope) is one the caller sees: the entered scope reaches scope, or the caller writes tab and its grants reach run_scope';
-- The policy protect() gives a table: not STRICT, NULL (labels with no scope label) is
-- readable in any scope entered
CREATE FUNCTION pg_labels.visible_in(scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_visible_in' LANGUAGE C STABLE PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.visible_in(@extschema@.scope) IS
    'A row that can be read in this scope (a protected table''s pg_labels_scope) is visible: the entered scope reaches it; NULL (labels with no scope label): any scope entered';
CREATE FUNCTION pg_labels.writable(labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_writable' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.writable(@extschema@.labelset) IS
    'A row with these labels may be written to a protected table: it can be read exactly in the entered scope (the deepest scope that can carry the labels is the entered one), so data is never labelled down to a scope more analysts reach';
CREATE FUNCTION pg_labels.next_share_id() RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_next_share_id' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.next_share_id() IS
    'The next id of a share from this node''s range: the default of shares.id on a Citus cluster (every copy of the reference table gets the same)';
CREATE FUNCTION pg_labels.member_of(role name) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_member_of' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.member_of(name) IS
    'The current role is this role or a member of it (false for a role that does not exist)';

CREATE FUNCTION pg_labels.protect(tab regclass, col name DEFAULT 'labels') RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    want oid := '@extschema@.labelset'::pg_catalog.regtype;
    got oid;
    parts regclass[];
    part regclass;
    nsp name;
    rel name;
    generated text;
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
    parts := ARRAY(WITH RECURSIVE tree (rel) AS (
                       SELECT tab::oid
                       UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree t ON i.inhparent = t.rel)
                   SELECT tree.rel::regclass FROM tree);
    -- The scope each row can be read in, kept in the row: a generated column of storage PLAIN
    -- (never compressed, never out of line), which the policy reads instead of the labels (a
    -- labelset can be stored out of line, and reading it only for the rows a query's own
    -- conditions match would tell which hidden rows match). Made again when it is not the
    -- scope of this column.
    -- (one of the table's own, generated the same way but of another type or storage, is made
    -- again too)
    SELECT CASE WHEN a.attgenerated <> 's' THEN ''
                WHEN a.atttypid <> '@extschema@.scope'::pg_catalog.regtype OR a.attstorage <> 'p' THEN 'made again'
                ELSE pg_catalog.pg_get_expr(d.adbin, d.adrelid) END
      INTO generated
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = tab AND a.attname = 'pg_labels_scope' AND a.attnum > 0 AND NOT a.attisdropped;
    IF generated = '' THEN
        RAISE EXCEPTION 'relation % has a column "pg_labels_scope" of its own', tab
            USING ERRCODE = 'duplicate_column',
                  HINT = 'pg_labels.protect() adds a generated column of that name: rename yours first.';
    END IF;
    IF generated IS DISTINCT FROM '@extschema@' || '.labelset_scope(' || pg_catalog.quote_ident(col) || ')' THEN
        IF (SELECT c.relispartition FROM pg_catalog.pg_class c WHERE c.oid = tab) THEN
            RAISE EXCEPTION 'relation % is a partition', tab
                USING ERRCODE = 'wrong_object_type',
                      HINT = 'pg_labels.protect() guards a partitioned table with all its partitions: protect the partitioned table.';
        END IF;
        IF generated IS NOT NULL THEN
            -- (the policies that read it go first; they are made again below)
            FOREACH part IN ARRAY parts LOOP
                IF EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polname = 'pg_labels_visible') THEN
                    EXECUTE format('DROP POLICY pg_labels_visible ON %s', part); -- %s: a regclass, quoted
                END IF;
            END LOOP;
            EXECUTE format('ALTER TABLE %s DROP COLUMN pg_labels_scope', tab); -- %s: a regclass, quoted
        END IF;
        EXECUTE format('ALTER TABLE %s ADD COLUMN pg_labels_scope @extschema@.scope GENERATED ALWAYS AS (@extschema@.labelset_scope(%I)) STORED', -- %s: a regclass, quoted
                       tab, col);
        EXECUTE format('ALTER TABLE %s ALTER COLUMN pg_labels_scope SET STORAGE PLAIN', tab); -- %s: a regclass, quoted
        EXECUTE format('COMMENT ON COLUMN %s.pg_labels_scope IS %L', tab, -- %s: a regclass, quoted
                       'Where the row can be read: the deepest scope that can carry ' || col || ' (pg_labels.protect(); the policy reads it)');
    END IF;
    FOREACH part IN ARRAY parts LOOP
        SELECT n.nspname, c.relname INTO nsp, rel
          FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE c.oid = part;
        EXECUTE format('ALTER TABLE %I.%I ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY', nsp, rel);
        IF EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polname = 'pg_labels_visible') THEN
            EXECUTE format('DROP POLICY pg_labels_visible ON %I.%I', nsp, rel);
        END IF;
        EXECUTE format('CREATE POLICY pg_labels_visible ON %I.%I AS RESTRICTIVE USING (pg_labels.visible_in(pg_labels_scope)) WITH CHECK (pg_labels.writable(%I))',
                       nsp, rel, col);
        -- restrictive policies only narrow what a permissive one allows: add one if there is none
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polpermissive) THEN
            EXECUTE format('CREATE POLICY pg_labels_permit ON %I.%I USING (true) WITH CHECK (true)', nsp, rel);
        END IF;
        -- fail closed: DROP EXTENSION ... CASCADE drops pg_labels_visible (it calls visible_in())
        -- and the generated column; this guard stays and then lets nothing through, until
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
    'Enables and forces row-level security on a table (and its partitions and children): a generated column pg_labels_scope keeps the scope each row can be read in (the deepest scope that can carry col), a policy on visible_in(pg_labels_scope) for reads and writable(col) for writes (a row written can be read exactly in the entered scope); a guard policy keeps the table closed if the extension is dropped';

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

--------------------------------------------------------------------------------------------
-- Proving the trail: hash chains, ledger digests, inclusion proofs (README "Proving the trail")
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.verify(run uuid)
RETURNS TABLE (intact boolean, steps bigint, step bigint, how text, detail text)
AS 'MODULE_PATHNAME', 'pgl_verify' LANGUAGE C STABLE STRICT ROWS 1;
COMMENT ON FUNCTION pg_labels.verify(uuid) IS
    'Checks a run''s hash chain against its stored steps and row: intact, or the first step where it breaks and how (edited, removed, inserted, reordered, unchained)';

CREATE FUNCTION pg_labels.verify_all()
RETURNS TABLE (run uuid, step bigint, how text, detail text)
AS 'MODULE_PATHNAME', 'pgl_verify_all' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION pg_labels.verify_all() FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.verify_all() IS
    'verify() for every run, in bounded memory, with a progress NOTICE: the runs whose chain breaks';

CREATE FUNCTION pg_labels.ledger_digest()
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pgl_ledger_digest' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.ledger_digest() FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.ledger_digest() IS
    'Takes a ledger digest: the Merkle root over every run''s chain head with its id, time and counts, to keep outside the database';

CREATE FUNCTION pg_labels.verify_digest(digest jsonb)
RETURNS TABLE (holds boolean, run uuid, detail text)
AS 'MODULE_PATHNAME', 'pgl_verify_digest' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION pg_labels.verify_digest(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.verify_digest(jsonb) IS
    'Proves that today''s trail extends the one a digest described: every run it covered is there with its steps unchanged, or what is not';

CREATE FUNCTION pg_labels.prove(step bigint, digest jsonb)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pgl_prove' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION pg_labels.prove(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.prove(bigint, jsonb) IS
    'An inclusion proof of a step in the ledger a digest describes, for the offline verifier (pg_labels_verify verify proof.json)';

CREATE FUNCTION pg_labels.start_chains()
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_start_chains' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pg_labels.start_chains() FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.start_chains() IS
    'Chains the runs that have no hash chain (kept by a release without chains, or loaded around the triggers) from what they hold now, and fills the scope steps and shares are read in where a release before 0.3.0 left none; a superuser runs it with session_replication_role = replica, as ALTER EXTENSION UPDATE does; returns the number of runs chained';
