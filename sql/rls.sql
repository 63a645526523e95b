-- pg_labels: row-level security by scope. A role enters a scope its grants reach
-- (pg_labels.enter_scope); visible(labels) says whether that scope can carry a row's labels;
-- protect() puts a policy built on it on any table; the platform tables carry the same
-- policies. The session state is in src/session.rs.

CREATE TABLE pg_labels.grants (
    role name NOT NULL,
    scope @extschema@.scope NOT NULL,
    granted_by text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (role, scope)
);
COMMENT ON TABLE pg_labels.grants IS
    'Which database roles may enter which scopes (and every scope below): a role, or a member of it, may pg_labels.enter_scope() a scope a grant reaches. Written by the DBA';
SELECT pg_catalog.pg_extension_config_dump('pg_labels.grants', '');

CREATE FUNCTION pg_labels.enter_scope(scope @extschema@.scope, for_session boolean DEFAULT false)
RETURNS @extschema@.scope
AS 'MODULE_PATHNAME', 'pgl_enter_scope' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.enter_scope(@extschema@.scope, boolean) IS
    'Enters a scope a grant of the current role (or a role it is a member of) reaches, until the end of the transaction (for_session: until leave_scope(), DISCARD ALL or the end of the session); refused (42501) otherwise';

CREATE FUNCTION pg_labels.leave_scope() RETURNS void
AS 'MODULE_PATHNAME', 'pgl_leave_scope' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.leave_scope() IS 'Leaves the entered scope: nothing is visible any more';

CREATE FUNCTION pg_labels.current_scope() RETURNS @extschema@.scope
AS 'MODULE_PATHNAME', 'pgl_current_scope' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.current_scope() IS
    'The scope the current role entered; NULL when none (then nothing is visible)';

CREATE FUNCTION pg_labels.visible(labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_visible' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.visible(@extschema@.labelset) IS
    'The entered scope can carry these labels (false when no scope is entered): the row-level security predicate';

CREATE FUNCTION pg_labels.protect(tab regclass, col name DEFAULT 'labels') RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    want oid := '@extschema@.labelset'::pg_catalog.regtype;
    got oid;
    part regclass;
BEGIN
    SELECT a.atttypid INTO got FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = tab AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, tab USING ERRCODE = '42703';
    END IF;
    IF got <> want THEN
        RAISE EXCEPTION 'column "%" of relation % is of type %, not labelset', col, tab, got::regtype
            USING ERRCODE = '42804',
                  HINT = 'pg_labels.protect() guards a table by the labelset column that labels its rows.';
    END IF;
    -- the table and every partition or child it has now (a query naming a partition is not
    -- filtered by its parent's policies)
    FOR part IN WITH RECURSIVE tree (rel) AS (
                    SELECT tab::oid
                    UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree t ON i.inhparent = t.rel)
                SELECT rel::regclass FROM tree
    LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY', part);
        IF EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polname = 'pg_labels_visible') THEN
            EXECUTE format('DROP POLICY pg_labels_visible ON %s', part);
        END IF;
        EXECUTE format('CREATE POLICY pg_labels_visible ON %s AS RESTRICTIVE USING (pg_labels.visible(%I)) WITH CHECK (pg_labels.visible(%I))',
                       part, col, col);
        -- restrictive policies only narrow what a permissive one allows: add one if there is none
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polpermissive) THEN
            EXECUTE format('CREATE POLICY pg_labels_permit ON %s USING (true) WITH CHECK (true)', part);
        END IF;
        -- fail closed: DROP EXTENSION ... CASCADE drops pg_labels_visible (it calls visible())
        -- and may drop the labels column; this guard stays and then lets nothing through, until
        -- protect() is run again
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_policy p WHERE p.polrelid = part AND p.polname = 'pg_labels_guard') THEN
            EXECUTE format($g$CREATE POLICY pg_labels_guard ON %s AS RESTRICTIVE
                USING (EXISTS (SELECT FROM pg_catalog.pg_policy p
                                WHERE p.polrelid = %L::pg_catalog.regclass AND p.polname = 'pg_labels_visible'))
                WITH CHECK (EXISTS (SELECT FROM pg_catalog.pg_policy p
                                     WHERE p.polrelid = %L::pg_catalog.regclass AND p.polname = 'pg_labels_visible'))$g$,
                part, part::text, part::text);
        END IF;
    END LOOP;
END $$;
COMMENT ON FUNCTION pg_labels.protect(regclass, name) IS
    'Enables and forces row-level security on a table (and its partitions and children) with a policy on visible(col), for reads and writes; a guard policy keeps the table closed if the extension is dropped';

-- The platform tables: an analyst sees the runs, steps, artifacts and shares the entered scope
-- can carry (a step only with its run, a share only with its artifact); nothing when no scope
-- is entered. A role that may INSERT into a platform table (a platform writer) reads all of it.
-- The triggers work as the tables' owner without forced security, as foreign-key checks do.
ALTER TABLE pg_labels.runs ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.steps ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.artifacts ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.shares ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY runs_visible ON pg_labels.runs
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.runs'::pg_catalog.regclass, 'INSERT'))
           OR pg_labels.visible(labels));
CREATE POLICY steps_visible ON pg_labels.steps
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.steps'::pg_catalog.regclass, 'INSERT'))
           OR (pg_labels.visible(labels) AND EXISTS (SELECT FROM pg_labels.runs r WHERE r.id = run_id)));
CREATE POLICY artifacts_visible ON pg_labels.artifacts
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.artifacts'::pg_catalog.regclass, 'INSERT'))
           OR pg_labels.visible(labels));
CREATE POLICY shares_visible ON pg_labels.shares
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.shares'::pg_catalog.regclass, 'INSERT'))
           OR EXISTS (SELECT FROM pg_labels.artifacts a WHERE a.id = artifact_id));

-- The catalogs an analyst may read show what the entered scope reaches, like the trail: agent
-- versions and listeners by their scope, crossings into or out of it, grants of the analyst's
-- own roles or within it. A role that may write a catalog (INSERT, or EXECUTE on the crossing
-- functions: who records and ends crossings) reads all of it. The tool catalog is global: tools belong to no company.
ALTER TABLE pg_labels.agent_versions ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.listeners ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.crossings ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.grants ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY agent_versions_visible ON pg_labels.agent_versions
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.agent_versions'::pg_catalog.regclass, 'INSERT'))
           OR pg_labels.visible(@extschema@.labelset(scope)));
CREATE POLICY listeners_visible ON pg_labels.listeners
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.listeners'::pg_catalog.regclass, 'INSERT'))
           OR pg_labels.visible(@extschema@.labelset(scope)));
CREATE POLICY crossings_visible ON pg_labels.crossings
    USING ((SELECT pg_catalog.has_function_privilege(
                'pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz)', 'EXECUTE')
                OR pg_catalog.has_function_privilege('pg_labels.revoke_crossing(bigint, text)', 'EXECUTE'))
           OR pg_labels.visible(@extschema@.labelset(from_scope))
           OR pg_labels.visible(@extschema@.labelset(to_scope)));
-- crossings are written only through authorize_crossing() and revoke_crossing(), which run as
-- the owner; the guard trigger refuses every other write, so no policy lets one through
CREATE POLICY grants_visible ON pg_labels.grants
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.grants'::pg_catalog.regclass, 'INSERT'))
           OR EXISTS (SELECT FROM pg_catalog.pg_roles r
                       WHERE r.rolname = role AND pg_catalog.pg_has_role(r.oid, 'MEMBER'))
           OR pg_labels.visible(@extschema@.labelset(scope)));
