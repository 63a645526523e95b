-- pg_labels 0.3.0 -> 0.3.1, a security patch release (CHANGELOG.md, 0.3.1).
--
-- - no policy reads anything of a row but one scope stored inline: runs and artifacts keep the
--   scope they can be read in (carried_scope, filled here from their labels), agent versions,
--   listeners, crossings and grants are read by their scope columns, and every such column is
--   of storage PLAIN (never compressed, never out of line); the policies' writer check and
--   grants' membership are fixed when a query starts (src/access/policy.rs). protect() gives a
--   table a generated column pg_labels_scope and a policy on it (pg_labels.visible_in());
--   tables protected before the update are protected again (the column is added: a rewrite of
--   each such table);
-- - a refused write's record says what the writer claimed apart (refused_writes.attempted,
--   also in pg_labels.refusals);
-- - member_of() is PARALLEL RESTRICTED (it reads what the query's start fixed);
-- - readers keep reading: a role that may read a view of the schema gets SELECT on each
--   relation the view reads (0.3.0's refusals reads refused_writes, which the update from
--   0.2.0 did not grant to the view's readers; approval_points reads tools), recorded as the
--   DBA's so that pg_dump keeps it;
-- - every credential bound to its company (issue 46): writers, approvers and crossing
--   authorizers act, and writers read, only where their grants in pg_labels.grants reach;
--   steps, artifacts and shares keep their run's scope (run_scope) where their readable scope
--   is wider; a change of the grants reaches every backend (grants_changed), listeners are
--   checked (listeners_write). Nothing changes until the DBA narrows it: every role that writes,
--   approves or authorizes crossings today is granted * with enters = false (a WARNING
--   names each): it acts as before and enters no scope it could not enter before.

-- A distributed installation (pg_labels.distribute() on Citus) is not updated by this script,
-- as it was not from 0.2.0. Refused before anything changes (docs/citus.md).
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
        RAISE EXCEPTION 'pg_labels 0.3.1 does not update a distributed installation yet'
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'See docs/citus.md (Scaling out with Citus): dump the platform''s rows, install 0.3.1 afresh, distribute and load them.';
    END IF;
END
$citus$;

-- The policy protect() gives a table: not STRICT, NULL (labels with no scope label) is
-- readable in any scope entered
CREATE FUNCTION pg_labels.visible_in(scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_visible_in' LANGUAGE C STABLE PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.visible_in(@extschema@.scope) IS
    'A row that can be read in this scope (a protected table''s pg_labels_scope) is visible: the entered scope reaches it; NULL (labels with no scope label): any scope entered';
ALTER FUNCTION pg_labels.member_of(name) PARALLEL RESTRICTED;

-- where runs and artifacts can be read, kept inline
ALTER TABLE pg_labels.runs ADD COLUMN carried_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.runs.carried_scope IS
    'Where the run can be read: the deepest scope that can carry its labels; an analyst sees the run when the entered scope reaches it (set by the database, kept inline: the policy reads it, never the labels)';
ALTER TABLE pg_labels.artifacts ADD COLUMN carried_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.artifacts.carried_scope IS
    'Where the artifact can be read: the deepest scope that can carry its labels; an analyst sees it when the entered scope reaches it (set by the database, kept inline: the policy reads it, never the labels)';
ALTER TABLE pg_labels.runs ALTER COLUMN carried_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.steps ALTER COLUMN carried_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.artifacts ALTER COLUMN carried_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.shares ALTER COLUMN carried_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.refused_writes ALTER COLUMN carried_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.agent_versions ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.listeners ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.crossings ALTER COLUMN from_scope SET STORAGE PLAIN, ALTER COLUMN to_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.grants ALTER COLUMN scope SET STORAGE PLAIN;
-- (a run's is written by its row's trigger from its labels; an artifact's only from NULL, by
-- a superuser's session, as the append-only trigger allows)
UPDATE pg_labels.runs SET labels = labels;
UPDATE pg_labels.artifacts SET carried_scope = @extschema@.labelset_scope(labels)
 WHERE @extschema@.labelset_scope(labels) IS NOT NULL;
-- (run_scope after the columns below are made)

-- what a refused write claimed
ALTER TABLE pg_labels.refused_writes ADD COLUMN attempted jsonb;
COMMENT ON COLUMN pg_labels.refused_writes.attempted IS 'What the refused write claimed, as the writer gave it (a run''s scope, labels and agent; a share''s target; a crossing''s scopes): a claim, not a fact of the trail';
COMMENT ON COLUMN pg_labels.refused_writes.run_scope IS 'The scope of the run the write named, as the database holds it (NULL when no such run exists: what the writer claimed is in attempted)';
COMMENT ON COLUMN pg_labels.refused_writes.carried_scope IS 'Where the record can be read: the scope of the run it names, or for a share the scope its artifact can be read in (NULL: in * only); never a scope the writer named. An analyst sees it when the entered scope reaches it';
CREATE OR REPLACE VIEW pg_labels.refusals WITH (security_invoker = true) AS
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
COMMENT ON COLUMN pg_labels.refusals.attempted IS 'What the refused write claimed (source write): a run''s scope and labels, a share''s target, a crossing''s scopes; a claim, not a fact';

-- the policies: each decides from one scope stored inline in its row
CREATE FUNCTION pg_labels.readable_in(tab pg_catalog.regclass, scope @extschema@.scope, run_scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_readable_in_run' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.readable_in(pg_catalog.regclass, @extschema@.scope, @extschema@.scope) IS
    'A row of tab that analysts read in scope and its writers in run_scope (a step, artifact or share: its run''s scope) is one the caller sees: the entered scope reaches scope, or the caller writes tab and its grants reach run_scope';
COMMENT ON FUNCTION pg_labels.readable_in(pg_catalog.regclass, @extschema@.scope) IS
    'A row of tab that can be read in this scope (its carried_scope, or its scope column) is one the caller sees: the entered scope reaches it, or the caller writes tab (INSERT on it; for crossings EXECUTE on their functions) and its grants reach it';

-- a grant binds where its role acts; one made with enters = false does not let it enter the
-- scope as an analyst (what this update gives the roles that acted everywhere)
ALTER TABLE pg_labels.grants ADD COLUMN enters boolean;
UPDATE pg_labels.grants SET enters = true;
ALTER TABLE pg_labels.grants ALTER COLUMN enters SET DEFAULT true, ALTER COLUMN enters SET NOT NULL;
COMMENT ON TABLE pg_labels.grants IS
    'Where database roles act (and every scope below): a role, or a member of it, writes, reads what it writes, decides approvals and records crossings only where a grant reaches, and may pg_labels.enter_scope() a scope a grant that enters reaches. Written by the DBA';
COMMENT ON COLUMN pg_labels.grants.scope IS 'Where it acts (and may enter, unless enters is false), with every scope below';
COMMENT ON COLUMN pg_labels.grants.enters IS
    'Whether the role may also enter the scope (enter_scope()) and read there as an analyst; false: it only acts there (writes, reads what it writes, decides, records crossings). ALTER EXTENSION UPDATE to 0.3.1 gave * with false to the roles that acted everywhere';
-- where a step, artifact or share is read by its run's writers, when wider scopes read it
ALTER TABLE pg_labels.steps ADD COLUMN run_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.steps.run_scope IS
    'Where the run''s writers read the step: its run''s scope, when carried_scope is wider (NULL: the same; set by the database)';
ALTER TABLE pg_labels.artifacts ADD COLUMN run_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.artifacts.run_scope IS
    'Where its run''s writers read the artifact: its run''s scope, when carried_scope is wider (NULL: the same; set by the database)';
ALTER TABLE pg_labels.shares ADD COLUMN run_scope @extschema@.scope;
COMMENT ON COLUMN pg_labels.shares.run_scope IS
    'Where its artifact''s writers read the share: the scope of the artifact''s run, when carried_scope is wider (NULL: the same; set by the database)';
ALTER TABLE pg_labels.runs ALTER COLUMN scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.steps ALTER COLUMN run_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.artifacts ALTER COLUMN run_scope SET STORAGE PLAIN;
ALTER TABLE pg_labels.shares ALTER COLUMN run_scope SET STORAGE PLAIN;

DROP POLICY runs_visible ON pg_labels.runs;
CREATE POLICY runs_visible ON pg_labels.runs
    USING (pg_labels.readable_in('pg_labels.runs'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope), scope));
DROP POLICY artifacts_visible ON pg_labels.artifacts;
CREATE POLICY artifacts_visible ON pg_labels.artifacts
    USING (pg_labels.readable_in('pg_labels.artifacts'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                 coalesce(run_scope, carried_scope, '*'::@extschema@.scope)));
DROP POLICY shares_visible ON pg_labels.shares;
CREATE POLICY shares_visible ON pg_labels.shares
    USING (pg_labels.readable_in('pg_labels.shares'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                 coalesce(run_scope, carried_scope, '*'::@extschema@.scope)));
DO $ring$
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
            USING (pg_labels.readable_in('pg_labels.steps'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope),
                                         coalesce(run_scope, carried_scope, '*'::@extschema@.scope)))$p$, part);
    END LOOP;
END
$ring$;
DROP POLICY agent_versions_visible ON pg_labels.agent_versions;
CREATE POLICY agent_versions_visible ON pg_labels.agent_versions
    USING (pg_labels.readable_in('pg_labels.agent_versions'::pg_catalog.regclass, scope));
DROP POLICY listeners_visible ON pg_labels.listeners;
CREATE POLICY listeners_visible ON pg_labels.listeners
    USING (pg_labels.readable_in('pg_labels.listeners'::pg_catalog.regclass, scope));
DROP POLICY crossings_visible ON pg_labels.crossings;
CREATE POLICY crossings_visible ON pg_labels.crossings
    USING (pg_labels.readable_in('pg_labels.crossings'::pg_catalog.regclass, from_scope)
           OR pg_labels.readable_in('pg_labels.crossings'::pg_catalog.regclass, to_scope));
DROP POLICY grants_visible ON pg_labels.grants;
CREATE POLICY grants_visible ON pg_labels.grants
    USING (pg_labels.readable_in('pg_labels.grants'::pg_catalog.regclass, scope)
           OR pg_labels.member_of(role));

-- protect(): the scope each row can be read in, in a generated column the policy reads
CREATE OR REPLACE FUNCTION pg_labels.protect(tab regclass, col name DEFAULT 'labels') RETURNS void
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

-- Tables protected before the update, protected again with today's protect(): the topmost
-- protected table of each tree (protect() guards its partitions and children); the column is
-- the labelset its policy uses
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
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits i
                                  JOIN pg_catalog.pg_policy up ON up.polrelid = i.inhparent AND up.polname = 'pg_labels_visible'
                                 WHERE i.inhrelid = pol.polrelid)
    LOOP
        IF (SELECT c.relispartition FROM pg_catalog.pg_class c WHERE c.oid = p.tab) THEN
            RAISE WARNING 'pg_labels: % is a partition protected alone: protect its partitioned table to give it the 0.3.1 policy', p.tab;
            CONTINUE;
        END IF;
        PERFORM pg_labels.protect(p.tab, p.attname);
    END LOOP;
END
$reprotect$;

-- Readers keep reading: a role that may read a view of the schema (SELECT on it) is given
-- SELECT on each relation the view reads that it may not read, recorded as the DBA's (the
-- extension's initial privileges of the relation are left as they were), so that pg_dump
-- keeps it
DO $readers$
DECLARE
    g record;
    before aclitem[];
    had boolean;
BEGIN
    FOR g IN WITH readers AS (
                 SELECT v.oid AS view, a.grantee
                   FROM pg_catalog.pg_class v, pg_catalog.aclexplode(v.relacl) a
                  WHERE v.relnamespace = 'pg_labels'::pg_catalog.regnamespace AND v.relkind = 'v'
                    AND a.privilege_type = 'SELECT' AND a.grantee <> v.relowner
             ), reads AS (
                 SELECT DISTINCT r.ev_class AS view, d.refobjid AS rel
                   FROM pg_catalog.pg_rewrite r
                   JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                              AND d.objid = r.oid
                                              AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                                              AND d.refobjid <> r.ev_class
             )
             SELECT DISTINCT rd.grantee, s.rel
               FROM readers rd
               JOIN reads s ON s.view = rd.view
               JOIN pg_catalog.pg_class t ON t.oid = s.rel AND t.relkind IN ('r', 'p', 'v')
              WHERE t.relnamespace = 'pg_labels'::pg_catalog.regnamespace
                AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(t.relacl) x
                                 WHERE x.grantee IN (rd.grantee, 0) AND x.privilege_type = 'SELECT')
                AND (rd.grantee = 0 OR NOT pg_catalog.has_table_privilege(rd.grantee, s.rel, 'SELECT'))
    LOOP
        SELECT i.initprivs, true INTO before, had FROM pg_catalog.pg_init_privs i
         WHERE i.objoid = g.rel AND i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objsubid = 0;
        EXECUTE pg_catalog.format('GRANT SELECT ON %s TO %s', g.rel::pg_catalog.regclass, -- %s: a regclass, quoted
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END); -- %s: PUBLIC or a quoted role
        IF had THEN
            UPDATE pg_catalog.pg_init_privs i SET initprivs = before
             WHERE i.objoid = g.rel AND i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objsubid = 0;
        ELSE
            DELETE FROM pg_catalog.pg_init_privs i
             WHERE i.objoid = g.rel AND i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objsubid = 0;
        END IF;
        RAISE WARNING 'pg_labels: SELECT on % granted to %, who reads a view of pg_labels that reads it',
            g.rel::pg_catalog.regclass, CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(g.grantee)::text END;
    END LOOP;
END
$readers$;

-- Every credential bound to its company. The grants' changes reach every backend, listeners
-- are checked, and the rows written before the update keep their run's scope where a wider
-- scope reads them (only a superuser's session may fill these columns from NULL).
CREATE FUNCTION pg_labels.acts_in(scope @extschema@.scope) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_acts_in' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.acts_in(@extschema@.scope) IS
    'The current role may act in this scope: a grant of it (or of a role it is a member of) reaches it, or it owns the platform''s tables or is a superuser (the writers'' clause of the policies on Citus)';
CREATE FUNCTION pg_labels.granted_scopes() RETURNS TABLE (scope @extschema@.scope)
AS 'MODULE_PATHNAME', 'pgl_granted_scopes' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.granted_scopes() IS
    'The scopes the current role''s grants (its own and those of the roles it is a member of) give it: where it may act';
CREATE FUNCTION pg_labels.grants_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_grants_changed' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.grants_changed() IS
    'After a change to pg_labels.grants: every backend finds again where each role may act (its grants'' scopes, which it keeps)';
CREATE FUNCTION pg_labels.listeners_write() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_listeners_write' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.listeners_write() IS
    'A listener is bound only in a scope the writer''s grants reach';
CREATE TRIGGER listeners_write BEFORE INSERT OR UPDATE ON pg_labels.listeners
    FOR EACH ROW EXECUTE FUNCTION pg_labels.listeners_write();
CREATE TRIGGER grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pg_labels.grants
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.grants_changed();
ALTER TABLE pg_labels.grants ENABLE ALWAYS TRIGGER grants_changed;
UPDATE pg_labels.steps s SET run_scope = r.scope
  FROM pg_labels.runs r
 WHERE r.id = s.run_id AND s.run_scope IS NULL AND s.carried_scope IS DISTINCT FROM r.scope;
UPDATE pg_labels.artifacts a SET run_scope = r.scope
  FROM pg_labels.runs r
 WHERE r.id = a.origin_run AND a.run_scope IS NULL AND a.carried_scope IS DISTINCT FROM r.scope;
UPDATE pg_labels.shares sh SET run_scope = r.scope
  FROM pg_labels.artifacts a JOIN pg_labels.runs r ON r.id = a.origin_run
 WHERE a.id = sh.artifact_id AND sh.run_scope IS NULL AND sh.carried_scope IS DISTINCT FROM r.scope;

-- distribute(): on a Citus cluster, a writer reads where its grants reach (acts_in())
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
    --    made per row, and where their grants reach, acts_in(), by the scope of the row's run;
    --    a step and a share are read in the scope kept in the row).
    FOR r IN SELECT p.polname, c.relname FROM pg_catalog.pg_policy p
               JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
              WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace
    LOOP
        EXECUTE pg_catalog.format('DROP POLICY %I ON pg_labels.%I', r.polname, r.relname);
    END LOOP;
    CREATE POLICY runs_visible ON pg_labels.runs
        USING ((pg_catalog.has_table_privilege('pg_labels.runs'::pg_catalog.text, 'INSERT')
                AND pg_labels.acts_in(scope))
               OR pg_labels.visible(labels));
    FOR r IN SELECT c.relname FROM pg_catalog.pg_class c
              WHERE c.oid = 'pg_labels.steps'::pg_catalog.regclass
                 OR c.oid IN (SELECT inhrelid FROM pg_catalog.pg_inherits
                               WHERE inhparent = 'pg_labels.steps'::pg_catalog.regclass)
    LOOP
        EXECUTE pg_catalog.format($p$CREATE POLICY steps_visible ON pg_labels.%I
            USING ((pg_catalog.has_table_privilege('pg_labels.steps'::pg_catalog.text, 'INSERT')
                    AND pg_labels.acts_in(coalesce(run_scope, carried_scope, '*'::@extschema@.scope)))
                   OR pg_labels.visible(@extschema@.labelset(coalesce(carried_scope, '*'::@extschema@.scope))))$p$, r.relname);
    END LOOP;
    CREATE POLICY artifacts_visible ON pg_labels.artifacts
        USING ((pg_catalog.has_table_privilege('pg_labels.artifacts'::pg_catalog.text, 'INSERT')
                AND pg_labels.acts_in(coalesce(run_scope, carried_scope, '*'::@extschema@.scope)))
               OR pg_labels.visible(labels));
    CREATE POLICY shares_visible ON pg_labels.shares
        USING ((pg_catalog.has_table_privilege('pg_labels.shares'::pg_catalog.text, 'INSERT')
                AND pg_labels.acts_in(coalesce(run_scope, carried_scope, '*'::@extschema@.scope)))
               OR pg_labels.visible(@extschema@.labelset(coalesce(carried_scope, '*'::@extschema@.scope))));
    CREATE POLICY agent_versions_visible ON pg_labels.agent_versions
        USING ((pg_catalog.has_table_privilege('pg_labels.agent_versions'::pg_catalog.text, 'INSERT')
                AND pg_labels.acts_in(scope))
               OR pg_labels.visible(@extschema@.labelset(scope)));
    CREATE POLICY listeners_visible ON pg_labels.listeners
        USING ((pg_catalog.has_table_privilege('pg_labels.listeners'::pg_catalog.text, 'INSERT')
                AND pg_labels.acts_in(scope))
               OR pg_labels.visible(@extschema@.labelset(scope)));
    CREATE POLICY crossings_visible ON pg_labels.crossings
        USING (((pg_catalog.has_function_privilege(
                    'pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz)', 'EXECUTE')
                 OR pg_catalog.has_function_privilege('pg_labels.revoke_crossing(bigint, text)', 'EXECUTE'))
                AND (pg_labels.acts_in(from_scope) OR pg_labels.acts_in(to_scope)))
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
       FROM pg_catalog.unnest(ARRAY['pg_labels.tools', 'pg_labels.tool_namespaces', 'pg_labels.tool_definitions',
                                    'pg_labels.grants', 'pg_labels.listeners',
                                    'pg_labels.agent_versions', 'pg_labels.crossings',
                                    'pg_labels.artifacts', 'pg_labels.shares',
                                    'pg_labels.carry_key']::pg_catalog.regclass[]) t;
    PERFORM pg_catalog.create_distributed_table('pg_labels.runs', 'id', shard_count => shard_count);
    PERFORM pg_catalog.create_distributed_table('pg_labels.steps', 'run_id', colocate_with => 'pg_labels.runs');
END
$distribute$;

-- The tool catalog has owners (issue 47): who set a tool's effect (NULL: the DBA), the digest of
-- its definition as accepted, the namespaces gateways claim and the definitions they were
-- offered. Rows of 0.3.0 are the DBA's (owner NULL): a gateway's catalog role changes none of
-- them until the DBA gives them to it (UPDATE pg_labels.tools SET owner = ... , docs/mcp.md).
ALTER TABLE pg_labels.tools
    ADD COLUMN owner text CONSTRAINT tools_owner_check CHECK (owner <> '' AND owner !~ '[[:cntrl:]]'),
    ADD COLUMN definition_digest text;
COMMENT ON COLUMN pg_labels.tools.owner IS
    'Who set the effect: NULL for the DBA (the tables'' owner), else the gateway that claimed the tool''s namespace (tool_namespaces); only they change the row';
COMMENT ON COLUMN pg_labels.tools.definition_digest IS
    'SHA-256 (hex) of the tool''s definition as accepted (name, title, description, schemas, annotations; tool_definitions): a gateway refuses the tool while its upstream offers another';

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
SELECT pg_catalog.pg_extension_config_dump('pg_labels.tool_namespaces', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.tool_definitions', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.tool_definitions_id_seq', '');
-- a role that wrote the catalog (a 0.3.0 gateway's catalog role) may read the namespaces the
-- DBA gives and record definitions; the tools it wrote are the DBA's now, and it writes none
-- until the DBA gives its gateway a namespace (a WARNING names each role)
DO $catalog$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT pg_catalog.pg_get_userbyid(a.grantee) AS role
               FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
              WHERE c.oid = 'pg_labels.tools'::pg_catalog.regclass
                AND a.privilege_type IN ('INSERT', 'UPDATE') AND a.grantee <> c.relowner AND a.grantee <> 0
              ORDER BY 1
    LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON pg_labels.tool_namespaces TO %I', r.role);
        EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE (accepted_at, accepted_by) ON pg_labels.tool_definitions TO %I', r.role);
        RAISE WARNING 'pg_labels: role % writes the tool catalog: it now writes only tools of a namespace the DBA gives it (pg_labels.tool_namespaces), and the tools in the catalog are the DBA''s (owner NULL) until the DBA gives them to a gateway (docs/mcp.md)', r.role;
    END LOOP;
END
$catalog$;

-- Nothing changes until the DBA narrows it: every role that writes the platform's tables,
-- decides approvals or records crossings today (a privilege granted to it by name) may act
-- everywhere, as before. Narrow it as docs/operations.md shows.
DO $everywhere$
DECLARE
    r record;
BEGIN
    FOR r IN WITH acting AS (
                 SELECT a.grantee
                   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
                  WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace
                    AND c.relname IN ('runs', 'steps', 'artifacts', 'shares', 'agent_versions', 'listeners')
                    AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner
                 UNION
                 SELECT a.grantee
                   FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
                  WHERE p.pronamespace = 'pg_labels'::pg_catalog.regnamespace
                    AND p.proname IN ('decide_approval', 'authorize_crossing', 'revoke_crossing')
                    AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
             )
             SELECT DISTINCT pg_catalog.pg_get_userbyid(grantee) AS role, grantee = 0 AS public
               FROM acting
              ORDER BY 1
    LOOP
        IF r.public THEN
            RAISE WARNING 'pg_labels: PUBLIC may write the platform''s tables, decide approvals or record crossings: a role acts only where pg_labels.grants reaches now; grant the roles that should';
            CONTINUE;
        END IF;
        INSERT INTO pg_labels.grants (role, scope, enters) VALUES (r.role, '*', false) ON CONFLICT DO NOTHING;
        RAISE WARNING 'pg_labels: role % writes, approves or records crossings: granted * (every company) in pg_labels.grants, as it acted before (enters = false: it enters no scope it could not enter before); narrow it (docs/operations.md)', r.role;
    END LOOP;
END
$everywhere$;

-- Approvals that wait (issue 49): a request may expire (steps.expires_at, from
-- request_approval()'s ttl; in the chain when set), its requester may withdraw it
-- (withdraw_approval()), each request and decision is announced on the channel
-- pg_labels_approvals, and pg_labels.approval_requests reads each request's state. Readers keep
-- reading: the roles that may read the trail may read the requests, recorded as the DBA's
-- grant (as the README grants it on a fresh install).
ALTER TABLE pg_labels.steps ADD COLUMN expires_at timestamptz;
COMMENT ON COLUMN pg_labels.steps.expires_at IS
    'approval_requested: when the request expires, undecided (request_approval()''s ttl; NULL: never); past it nobody decides it';
CREATE OR REPLACE VIEW pg_labels.trail WITH (security_invoker = true) AS
SELECT s.id, s.run_id, r.scope AS run_scope, r.agent, r.agent_version, s.kind, s.tool, s.labels,
       s.args, s.decision, s.rule, s.reason, s.request_id, s.origin_run, s.artifact_id, s.digest,
       s.share_id, s.crossing_ids, s.actor, s.created_at, s.expires_at
FROM pg_labels.steps s
JOIN pg_labels.runs r ON r.id = s.run_id;
COMMENT ON COLUMN pg_labels.trail.expires_at IS
    'approval_requested: when the request expires, undecided (request_approval()''s ttl; NULL: never); past it nobody decides it';

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
DO $requests$
DECLARE
    r record;
    before aclitem[];
    had boolean;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee
               FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
              WHERE c.oid = 'pg_labels.trail'::pg_catalog.regclass
                AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner
    LOOP
        SELECT i.initprivs, true INTO before, had FROM pg_catalog.pg_init_privs i
         WHERE i.objoid = 'pg_labels.approval_requests'::pg_catalog.regclass
           AND i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objsubid = 0;
        EXECUTE pg_catalog.format('GRANT SELECT ON pg_labels.approval_requests TO %s', -- %s: PUBLIC or a quoted role
            CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(r.grantee)) END);
        IF had THEN
            UPDATE pg_catalog.pg_init_privs i SET initprivs = before
             WHERE i.objoid = 'pg_labels.approval_requests'::pg_catalog.regclass
               AND i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objsubid = 0;
        ELSE
            DELETE FROM pg_catalog.pg_init_privs i
             WHERE i.objoid = 'pg_labels.approval_requests'::pg_catalog.regclass
               AND i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objsubid = 0;
        END IF;
    END LOOP;
END
$requests$;

DROP FUNCTION pg_labels.request_approval(uuid, text, jsonb, @extschema@.labelset, text);
CREATE FUNCTION pg_labels.request_approval(run uuid, tool text, args jsonb DEFAULT NULL,
                                           labels @extschema@.labelset DEFAULT '{}', reason text DEFAULT NULL,
                                           ttl interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $request$
DECLARE
    made bigint;
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels, reason, expires_at)
    VALUES (run, 'approval_requested', tool, args, labels, reason, pg_catalog.now() + ttl)
    RETURNING steps.id INTO made;
    RETURN made;
END
$request$;
COMMENT ON FUNCTION pg_labels.request_approval(uuid, text, jsonb, @extschema@.labelset, text, interval) IS
    'Records an approval_requested step for one concrete call (run, tool, args), announced on the channel pg_labels_approvals at commit; it expires undecided after ttl (NULL: never); returns its id';

CREATE FUNCTION pg_labels.withdraw_approval(request bigint, reason text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_withdraw_approval' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.withdraw_approval(bigint, text) IS
    'The requester withdraws its own undecided approval request (it stopped waiting): records it denied, with the requester as the decider';

-- The approver's queue (issue 50) lists the requests no decision answers without reading the
-- state of every request ever made: steps_request_idx holds the approval requests too, and what
-- row-level security and the queue read of each entry (the queue reads this index alone). Built
-- on every partition of the ring.
DROP INDEX pg_labels.steps_request_idx;
CREATE INDEX steps_request_idx ON pg_labels.steps (request_id, id)
    INCLUDE (kind, run_id, created_at, expires_at, carried_scope, run_scope)
    WHERE request_id IS NOT NULL OR kind = 'approval_requested';
