-- pg_labels: scaling out with Citus (README, "Scaling out with Citus").

CREATE FUNCTION pg_labels.distribute(shard_count int DEFAULT 32) RETURNS void
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
REVOKE ALL ON FUNCTION pg_labels.distribute(int) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.distribute(int) IS
    'On a Citus coordinator: the catalogs become reference tables, runs and steps are distributed by run (co-located); see docs/citus.md';

CREATE FUNCTION pg_labels.shard_sequence(shard bigint, trail regclass) RETURNS regclass
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
REVOKE ALL ON FUNCTION pg_labels.shard_sequence(bigint, regclass) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.shard_sequence(bigint, regclass) IS
    'On a Citus node: the sequence of the trail''s shard (steps_id_seq_<shard>, over the shard''s own range), made or moved past the ids the shard holds (the insert trigger calls it once per backend and shard)';
