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
--   DBA's so that pg_dump keeps it.

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
DROP POLICY runs_visible ON pg_labels.runs;
CREATE POLICY runs_visible ON pg_labels.runs
    USING (pg_labels.readable_in('pg_labels.runs'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope)));
DROP POLICY artifacts_visible ON pg_labels.artifacts;
CREATE POLICY artifacts_visible ON pg_labels.artifacts
    USING (pg_labels.readable_in('pg_labels.artifacts'::pg_catalog.regclass, coalesce(carried_scope, '*'::@extschema@.scope)));
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
            RAISE NOTICE 'pg_labels: % is a partition protected alone: protect its partitioned table to give it the 0.3.1 policy', p.tab;
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
        RAISE NOTICE 'pg_labels: SELECT on % granted to %, who reads a view of pg_labels that reads it',
            g.rel::pg_catalog.regclass, CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(g.grantee)::text END;
    END LOOP;
END
$readers$;
