-- pg_labels 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_labels UPDATE TO '0.2.0').
--
-- Frozen with the release: later releases add their own script, never edit this one.
--
-- 1. The types: descriptions on every operator, function, cast and operator class; the
--    planner support functions of <@ and @> are immutable and parallel safe.
-- 2. The platform's functions: new bodies and markings (CREATE OR REPLACE keeps each one's
--    privileges); enter_scope and leave_scope are parallel unsafe; the trail's proofs
--    (verify, verify_all, ledger_digest, verify_digest, prove, start_chains) are new, and so
--    is pg_labels.distribute() (Citus).
-- 3. The platform's tables are rebuilt as 0.2.0 makes them (the trail a ring of 24 monthly
--    partitions, no foreign keys, new policies, triggers, indexes and descriptions): the 0.1.0
--    tables are moved aside, the new ones made, every row copied as it was (triggers off:
--    these rows were judged when they were written), sequences continued, the privileges
--    granted on each table granted again (as the DBA's, so pg_dump keeps them), and the old
--    tables dropped. This copies the whole trail once. A view or function of your own that
--    reads a platform table makes the update stop (nothing is dropped for you): drop it,
--    update, create it again.
--    Every run's hash chain is computed once, from what it holds at the update (README
--    "Proving the trail": a trail kept by 0.1.0 is proven from the update on).
-- 4. DROP EXTENSION refuses while the trail holds rows (an event trigger).
-- 5. The 0.1.0 tables are dropped.

\echo Use "ALTER EXTENSION pg_labels UPDATE TO '0.2.0'" to load this file. \quit

--------------------------------------------------------------------------------------------
-- 1. Types
--------------------------------------------------------------------------------------------

ALTER FUNCTION scope_contained_support(internal) IMMUTABLE PARALLEL SAFE;
ALTER FUNCTION scope_contains_support(internal) IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION scope_in(cstring) IS 'Input of scope: *, acme, acme/ops (22P02 on anything else)';
COMMENT ON FUNCTION scope_out(scope) IS 'Output of scope';
COMMENT ON FUNCTION scope_recv(internal) IS 'Binary input of scope: version byte 1, then the text form (22P03 otherwise)';
COMMENT ON FUNCTION scope_send(scope) IS 'Binary output of scope: version byte 1, then the text form';
COMMENT ON TYPE scope IS
    'A position in the containment tree: * (the installation), a company, an area, a sub-area';
COMMENT ON FUNCTION labelset_in(cstring) IS 'Input of labelset: {area:acme/ops,origin:slack/T1,tag:pii} (22P02 on anything else)';
COMMENT ON FUNCTION labelset_out(labelset) IS 'Output of labelset: its labels in canonical order';
COMMENT ON FUNCTION labelset_recv(internal) IS 'Binary input of labelset: version byte 1, then the text form (22P03 otherwise)';
COMMENT ON FUNCTION labelset_send(labelset) IS 'Binary output of labelset: version byte 1, then the text form';
COMMENT ON TYPE labelset IS
    'The set of labels a piece of data carries: scope labels, origin labels and tags';
COMMENT ON CAST (text AS scope) IS 'Parse a scope (assignment cast)';
COMMENT ON CAST (scope AS text) IS 'The scope''s text form (assignment cast)';
COMMENT ON CAST (text AS labelset) IS 'Parse a labelset literal (assignment cast)';
COMMENT ON CAST (labelset AS text) IS 'The labelset''s text form (assignment cast)';
COMMENT ON CAST (text[] AS labelset) IS 'The set of the labels in the array (assignment cast)';
COMMENT ON CAST (labelset AS text[]) IS 'The labels as an array, in canonical order (explicit cast)';
COMMENT ON CAST (jsonb AS labelset) IS 'The set of the labels in a JSON array of strings (explicit cast)';
COMMENT ON CAST (labelset AS jsonb) IS 'The labels as a JSON array of strings (explicit cast)';
COMMENT ON FUNCTION scope(text) IS 'Parse a scope (22P02 on a malformed one)';
COMMENT ON FUNCTION text(scope) IS 'The scope''s text form';
COMMENT ON FUNCTION labelset(text) IS 'Parse a labelset literal (22P02 on a malformed one)';
COMMENT ON FUNCTION text(labelset) IS 'The labelset''s text form, labels in canonical order';
COMMENT ON FUNCTION labelset(text[]) IS 'The set of the labels in the array (any order, duplicates allowed, no NULLs)';
COMMENT ON FUNCTION labelset(jsonb) IS 'The set of the labels in a JSON array of strings';
COMMENT ON FUNCTION labelset_to_array(labelset) IS 'The labels, in canonical order';
COMMENT ON FUNCTION labelset_to_jsonb(labelset) IS 'The labels as a JSON array of strings, in canonical order';
COMMENT ON FUNCTION scope_eq(scope, scope) IS 'a = b: the same scope';
COMMENT ON FUNCTION scope_ne(scope, scope) IS 'a <> b';
COMMENT ON FUNCTION scope_lt(scope, scope) IS 'a < b in tree order (a scope sorts right before its descendants)';
COMMENT ON FUNCTION scope_le(scope, scope) IS 'a <= b in tree order';
COMMENT ON FUNCTION scope_gt(scope, scope) IS 'a > b in tree order';
COMMENT ON FUNCTION scope_ge(scope, scope) IS 'a >= b in tree order';
COMMENT ON FUNCTION scope_cmp(scope, scope) IS 'Btree comparison of scopes (tree order)';
COMMENT ON FUNCTION scope_hash(scope) IS 'Hash of a scope (hash indexes and joins)';
COMMENT ON FUNCTION scope_hash_extended(scope, int8) IS 'Seeded 64-bit hash of a scope (hash partitioning)';
COMMENT ON FUNCTION scope_contained_support(internal) IS
    'Planner support of <@: s <@ ''acme'' becomes the btree range of acme''s subtree';
COMMENT ON FUNCTION scope_contains_support(internal) IS
    'Planner support of @>: ''acme'' @> s becomes the btree range of acme''s subtree';
COMMENT ON FUNCTION scope_contains(scope, scope) IS 'a @> b: a is b or an ancestor of b';
COMMENT ON FUNCTION scope_contained(scope, scope) IS 'a <@ b: a is b or a descendant of b';
COMMENT ON FUNCTION scope_carries(scope, labelset) IS
    'The barrier rule: the scope reaches the scope of every scope label of the set';
COMMENT ON FUNCTION labelset_within(labelset, scope) IS 'Commutator of scope_carries';
COMMENT ON FUNCTION labelset_eq(labelset, labelset) IS 'a = b: the same labels';
COMMENT ON FUNCTION labelset_ne(labelset, labelset) IS 'a <> b';
COMMENT ON FUNCTION labelset_lt(labelset, labelset) IS 'a < b in canonical order (for sorting and btree indexes)';
COMMENT ON FUNCTION labelset_le(labelset, labelset) IS 'a <= b in canonical order';
COMMENT ON FUNCTION labelset_gt(labelset, labelset) IS 'a > b in canonical order';
COMMENT ON FUNCTION labelset_ge(labelset, labelset) IS 'a >= b in canonical order';
COMMENT ON FUNCTION labelset_cmp(labelset, labelset) IS 'Btree comparison of labelsets (canonical order)';
COMMENT ON FUNCTION labelset_hash(labelset) IS 'Hash of a labelset (hash indexes and joins)';
COMMENT ON FUNCTION labelset_hash_extended(labelset, int8) IS 'Seeded 64-bit hash of a labelset (hash partitioning)';
COMMENT ON FUNCTION labelset_has(labelset, text) IS
    'The set holds this label (a string that is not a label is never held)';
COMMENT ON FUNCTION labelset_union(labelset, labelset) IS 'a || b: the union of two sets';
COMMENT ON FUNCTION labelset_contains(labelset, labelset) IS 'a @> b: a holds every label of b';
COMMENT ON FUNCTION labelset_contained(labelset, labelset) IS 'a <@ b: b holds every label of a';
COMMENT ON FUNCTION labelset_overlaps(labelset, labelset) IS 'a && b: a label in both';
COMMENT ON FUNCTION scope_depth(scope) IS 'Number of segments: 0 for *, 1 for a company, 2 for an area';
COMMENT ON FUNCTION scope_parent(scope) IS 'The enclosing scope; NULL for *';
COMMENT ON FUNCTION scope_lca(scope, scope) IS 'The deepest scope reaching both';
COMMENT ON FUNCTION scope_label(scope) IS
    'The label naming the scope''s data: installation, company:<c> or area:<c>/<a>';
COMMENT ON FUNCTION labelset(scope) IS 'The set holding the scope''s own label';
COMMENT ON FUNCTION labelset_scope(labelset) IS
    'The deepest scope that can carry the set (common ancestor of its scope labels); NULL when it has none';
COMMENT ON FUNCTION labelset_escaping(labelset, scope) IS 'The scope labels the scope cannot carry';
COMMENT ON FUNCTION labelset_origins(labelset) IS 'The origin labels: where untrusted data came from';
COMMENT ON FUNCTION labelset_is_trusted(labelset) IS 'No origin label';
COMMENT ON FUNCTION labelset_count(labelset) IS 'Number of labels';
COMMENT ON FUNCTION labelset_labels(labelset) IS 'One row per label, in canonical order';
COMMENT ON OPERATOR = (scope, scope) IS 'The same scope';
COMMENT ON OPERATOR <> (scope, scope) IS 'Not the same scope';
COMMENT ON OPERATOR < (scope, scope) IS 'Before, in tree order (a scope sorts right before its descendants)';
COMMENT ON OPERATOR <= (scope, scope) IS 'Before or equal, in tree order';
COMMENT ON OPERATOR > (scope, scope) IS 'After, in tree order';
COMMENT ON OPERATOR >= (scope, scope) IS 'After or equal, in tree order';
COMMENT ON OPERATOR @> (scope, scope) IS 'Reaches: is the right scope or an ancestor of it (* reaches everything)';
COMMENT ON OPERATOR <@ (scope, scope) IS 'Is reached by: is the right scope or a descendant of it';
COMMENT ON OPERATOR @> (scope, labelset) IS 'Carries: the barrier rule (the scope reaches every scope label of the set)';
COMMENT ON OPERATOR <@ (labelset, scope) IS 'Is carried by: the scope reaches every scope label of the set';
COMMENT ON OPERATOR = (labelset, labelset) IS 'The same labels';
COMMENT ON OPERATOR <> (labelset, labelset) IS 'Not the same labels';
COMMENT ON OPERATOR < (labelset, labelset) IS 'Before, in canonical order';
COMMENT ON OPERATOR <= (labelset, labelset) IS 'Before or equal, in canonical order';
COMMENT ON OPERATOR > (labelset, labelset) IS 'After, in canonical order';
COMMENT ON OPERATOR >= (labelset, labelset) IS 'After or equal, in canonical order';
COMMENT ON OPERATOR @> (labelset, labelset) IS 'Contains: holds every label of the right set';
COMMENT ON OPERATOR <@ (labelset, labelset) IS 'Is contained by: every label is in the right set';
COMMENT ON OPERATOR && (labelset, labelset) IS 'Overlaps: a label in both';
COMMENT ON OPERATOR ? (labelset, text) IS 'Has: holds this label';
COMMENT ON OPERATOR || (labelset, labelset) IS 'Union (labels only accumulate)';
COMMENT ON OPERATOR CLASS scope_ops USING btree IS 'Tree order: a subtree is one range (used by <@ and @> through planner support)';
COMMENT ON OPERATOR FAMILY scope_ops USING btree IS 'Tree order of scopes';
COMMENT ON OPERATOR CLASS scope_ops USING hash IS 'Equality of scopes';
COMMENT ON OPERATOR FAMILY scope_ops USING hash IS 'Equality of scopes';
COMMENT ON OPERATOR CLASS labelset_ops USING btree IS 'Canonical order of labelsets';
COMMENT ON OPERATOR FAMILY labelset_ops USING btree IS 'Canonical order of labelsets';
COMMENT ON OPERATOR CLASS labelset_ops USING hash IS 'Equality of labelsets';
COMMENT ON OPERATOR FAMILY labelset_ops USING hash IS 'Equality of labelsets';
COMMENT ON FUNCTION labelset_gin_extract_value(labelset, internal, internal) IS 'GIN: the keys of a value (one per label)';
COMMENT ON FUNCTION labelset_gin_extract_query(labelset, internal, int2, internal, internal, internal, internal) IS
    'GIN: the keys of a query for &&, @>, <@, = and ?';
COMMENT ON FUNCTION labelset_gin_consistent(internal, int2, labelset, int4, internal, internal, internal, internal) IS
    'GIN: whether a row can match, from the keys it holds';
COMMENT ON FUNCTION labelset_gin_triconsistent(internal, int2, labelset, int4, internal, internal, internal) IS
    'GIN: whether a row can match, with keys that may be present';
COMMENT ON OPERATOR CLASS labelset_ops USING gin IS 'One key per label: &&, @>, <@, = and ? (labels_idx on the platform tables)';
COMMENT ON OPERATOR FAMILY labelset_ops USING gin IS 'One key per label';
COMMENT ON AGGREGATE labelset_union(labelset) IS 'The union of all the sets (NULL when there are no rows)';

--------------------------------------------------------------------------------------------
-- 2. The platform's functions
--------------------------------------------------------------------------------------------

COMMENT ON SCHEMA pg_labels IS 'pg_labels platform tables: runs, steps, tools, listeners, artifacts, shares, crossings, agent versions, grants';
COMMENT ON SCHEMA pg_labels IS 'pg_labels platform tables: runs, steps, tools, listeners, artifacts, shares, crossings, agent versions, grants';

--------------------------------------------------------------------------------------------
-- Trigger functions (C, src/platform/): each refuses to run for any other table, event,
-- timing or level than the one it is attached to in sql/schema.sql
--------------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION pg_labels.runs_open() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_runs_open' LANGUAGE C;
CREATE OR REPLACE FUNCTION pg_labels.runs_seal() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_runs_seal' LANGUAGE C;
CREATE OR REPLACE FUNCTION pg_labels.steps_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_steps_insert' LANGUAGE C;
CREATE OR REPLACE FUNCTION pg_labels.append_only() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_append_only' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.runs_open() IS
    'Opening a run: adds the run''s own scope label, refuses initial labels or a listener scope the run''s scope cannot carry';
COMMENT ON FUNCTION pg_labels.runs_seal() IS 'A run''s scope never changes and its labels only grow';
COMMENT ON FUNCTION pg_labels.steps_insert() IS
    'Every step: labels accumulate into the run (serialized per run); tool calls are judged; gate decisions recorded';
COMMENT ON FUNCTION pg_labels.append_only() IS 'Refuses UPDATE, DELETE and TRUNCATE of the trail';

CREATE OR REPLACE FUNCTION pg_labels.artifacts_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_artifacts_insert' LANGUAGE C;
CREATE OR REPLACE FUNCTION pg_labels.shares_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_shares_insert' LANGUAGE C;
CREATE OR REPLACE FUNCTION pg_labels.crossings_guard() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_crossings_guard' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.artifacts_insert() IS
    'A new artifact: locks its origin run and records at least the labels the run carries';
COMMENT ON FUNCTION pg_labels.shares_insert() IS
    'A new share: refused (data_barrier) unless its scope can carry the artifact''s labels or one active crossing covers the rest; records the crossing used';
COMMENT ON FUNCTION pg_labels.crossings_guard() IS
    'Crossings are recorded only by pg_labels.authorize_crossing() and changed only by pg_labels.revoke_crossing()';

CREATE OR REPLACE FUNCTION pg_labels.tools_change() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_tools_change' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.tools_change() IS
    'Before a change to the tool catalog: waits for the decisions in flight (EXCLUSIVE on pg_labels.tools; decisions hold ROW SHARE)';

CREATE OR REPLACE FUNCTION pg_labels.agent_versions_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'pgl_agent_versions_insert' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.agent_versions_insert() IS
    'The publication check: refuses a version whose declared steps let untrusted data reach an irreversible tool; records the steps that need approval';

--------------------------------------------------------------------------------------------
-- Approvals, retention, context, crossings
--------------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION pg_labels.decide_approval(request bigint, granted boolean, reason text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_decide_approval' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) IS
    'Records a person''s decision on an approval request; EXECUTE only for roles the DBA grants it to, never the requester';

CREATE OR REPLACE FUNCTION pg_labels.purge(older_than timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_purge' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION pg_labels.purge(timestamptz) IS
    'Retention: deletes whole runs (and their steps) opened before the cutoff and without a later step; returns the number of runs';

CREATE OR REPLACE FUNCTION pg_labels.digest(content bytea) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT pg_catalog.encode(pg_catalog.sha256(content), 'hex');
END;
CREATE OR REPLACE FUNCTION pg_labels.digest(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(content, 'UTF8')), 'hex');
END;
COMMENT ON FUNCTION pg_labels.digest(bytea) IS 'An artifact''s digest: the hex SHA-256 of the content';
COMMENT ON FUNCTION pg_labels.digest(text) IS 'An artifact''s digest: the hex SHA-256 of the content''s UTF-8 bytes';

CREATE OR REPLACE FUNCTION pg_labels.authorize_crossing(from_scope @extschema@.scope, to_scope @extschema@.scope,
                                             reason text, expires_at timestamptz DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_authorize_crossing' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz) IS
    'Records a crossing: data of from_scope may be carried within to_scope until expires_at (NULL: until revoked); the caller is recorded in authorized_by. EXECUTE only for roles the DBA grants it to';

CREATE OR REPLACE FUNCTION pg_labels.revoke_crossing(crossing bigint, reason text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'pgl_revoke_crossing' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.revoke_crossing(bigint, text) IS
    'Ends a crossing now: later shares, reads and tool calls are judged without it. EXECUTE only for roles the DBA grants it to';

--------------------------------------------------------------------------------------------
-- Scopes (row-level security) and provenance
--------------------------------------------------------------------------------------------
-- The steps' and (on a Citus cluster) the shares' policies
CREATE FUNCTION pg_labels.run_visible(rel oid, run uuid) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_run_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.run_visible(oid, uuid) IS
    'The run (read next to the relation rel: on Citus, the co-located shard) is one the caller sees: a writer of runs, or its labels are visible';
CREATE FUNCTION pg_labels.artifact_visible(rel oid, artifact uuid) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_artifact_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.artifact_visible(oid, uuid) IS
    'The artifact (read next to the relation rel) is one the caller sees: a writer of artifacts, or its labels are visible';
-- The policies of runs, steps, artifacts, agent versions and listeners: a writer of the table
-- sees every row (asked per row and kept for the statement: a subquery in a policy is planned
-- with every query and tested in every row's qual). COST 10: a query's own cheap and leakproof
-- conditions (run_id = ...) are tested before them
CREATE FUNCTION pg_labels.readable(tab pg_catalog.regclass, labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_readable' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.readable(pg_catalog.regclass, @extschema@.labelset) IS
    'A row of tab with these labels is one the caller sees: a writer of tab (INSERT on it), or the entered scope can carry the labels';
CREATE FUNCTION pg_labels.step_readable(tab pg_catalog.regclass, labels @extschema@.labelset, run uuid) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_step_readable' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED COST 10;
COMMENT ON FUNCTION pg_labels.step_readable(pg_catalog.regclass, @extschema@.labelset, uuid) IS
    'A step of tab with these labels in this run is one the caller sees: a writer of tab, or the entered scope can carry the labels and run_visible(tab, run)';

CREATE OR REPLACE FUNCTION pg_labels.enter_scope(scope @extschema@.scope, for_session boolean DEFAULT false)
RETURNS @extschema@.scope
AS 'MODULE_PATHNAME', 'pgl_enter_scope' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pg_labels.enter_scope(@extschema@.scope, boolean) IS
    'Enters a scope a grant of the current role (or a role it is a member of) reaches, until the end of the transaction (for_session: until leave_scope(), DISCARD ALL or the end of the session); refused (42501) otherwise';

CREATE OR REPLACE FUNCTION pg_labels.leave_scope() RETURNS void
AS 'MODULE_PATHNAME', 'pgl_leave_scope' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pg_labels.leave_scope() IS 'Leaves the entered scope: nothing is visible any more';

CREATE OR REPLACE FUNCTION pg_labels.current_scope() RETURNS @extschema@.scope
AS 'MODULE_PATHNAME', 'pgl_current_scope' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.current_scope() IS
    'The scope the current role entered; NULL when none (then nothing is visible)';

CREATE OR REPLACE FUNCTION pg_labels.visible(labels @extschema@.labelset) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_visible' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION pg_labels.visible(@extschema@.labelset) IS
    'The entered scope can carry these labels (false when no scope is entered): the row-level security predicate';

CREATE OR REPLACE FUNCTION pg_labels.protect(tab regclass, col name DEFAULT 'labels') RETURNS void
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

CREATE OR REPLACE FUNCTION pg_labels.lineage(run uuid)
RETURNS TABLE (depth int, run_id uuid, scope @extschema@.scope, agent text, artifact_id uuid,
               digest text, labels @extschema@.labelset, read_by uuid, read_step bigint,
               read_at timestamptz)
AS 'MODULE_PATHNAME', 'pgl_lineage' LANGUAGE C STABLE STRICT ROWS 100;
COMMENT ON FUNCTION pg_labels.lineage(uuid) IS
    'Every upstream run reached through context reads, breadth first: the run read (run_id, its scope and agent), the artifact, digest and labels read, which run read it (read_by) and the depth; each run expanded once, so cycles end';

CREATE OR REPLACE FUNCTION pg_labels.lineage_dot(run uuid) RETURNS text
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
    'Chains the runs that have no hash chain (kept by a release without chains, or loaded around the triggers) from what they hold now; a superuser runs it with session_replication_role = replica, as ALTER EXTENSION UPDATE does; returns the number of runs chained';

--------------------------------------------------------------------------------------------
-- 3. The platform's tables: the 0.1.0 tables moved aside (with their sequences and indexes)
--------------------------------------------------------------------------------------------

-- (the pg_ prefix is reserved: as for schema pg_labels, for this one statement; an extension
-- script's settings end with it anyway)
SET allow_system_table_mods = on;
CREATE SCHEMA pg_labels_0_1_0;
RESET allow_system_table_mods;
ALTER TABLE pg_labels.tools SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.listeners SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.grants SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.agent_versions SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.runs SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.steps SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.crossings SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.artifacts SET SCHEMA pg_labels_0_1_0;
ALTER TABLE pg_labels.shares SET SCHEMA pg_labels_0_1_0;

-- the 0.2.0 tables, views, triggers and policies (sql/schema.sql of 0.2.0)
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

CREATE OR REPLACE FUNCTION pg_labels.trail_slot(at timestamptz) RETURNS smallint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ((pg_catalog.date_part('year', at AT TIME ZONE 'UTC')::int * 12
         + pg_catalog.date_part('month', at AT TIME ZONE 'UTC')::int - 1) % 24)::smallint;
COMMENT ON FUNCTION pg_labels.trail_slot(timestamptz) IS
    'The partition of the trail''s ring a step made at this time is in: its month (UTC) modulo 24';

-- The ids of steps and of shares: the triggers take them (on every node of a Citus cluster, so
-- they are made outside the block below; each table owns its sequence where it exists).
CREATE SEQUENCE pg_labels.steps_id_seq;
COMMENT ON SEQUENCE pg_labels.steps_id_seq IS 'The ids of steps, taken by the insert trigger under the run''s lock';
CREATE SEQUENCE pg_labels.shares_id_seq;
COMMENT ON SEQUENCE pg_labels.shares_id_seq IS 'The ids of shares, taken by the insert trigger';

----------------------------------------------------------------------------------------
-- The tool catalog, event bindings, grants
----------------------------------------------------------------------------------------
CREATE TABLE pg_labels.tools (
    name text PRIMARY KEY,
    effect text NOT NULL
        CONSTRAINT tools_effect_check CHECK (effect IN ('read', 'reversible_write', 'destructive', 'financial')),
    trusted_output boolean NOT NULL DEFAULT false,
    description text,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.tools IS
    'The tool catalog: a tool_called step naming a tool absent from it is refused (unknown_tool). Global: tools belong to no company';
COMMENT ON COLUMN pg_labels.tools.name IS 'The tool''s name, as steps name it';
COMMENT ON COLUMN pg_labels.tools.effect IS 'read, reversible_write, destructive or financial';
COMMENT ON COLUMN pg_labels.tools.trusted_output IS
    'false: the tool''s results come from outside, and a tool_result step of it carries origin:tool';
COMMENT ON COLUMN pg_labels.tools.description IS 'Free text for people';
COMMENT ON COLUMN pg_labels.tools.created_at IS 'When the tool was added';

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
    PRIMARY KEY (role, scope)
);
COMMENT ON TABLE pg_labels.grants IS
    'Which database roles may enter which scopes (and every scope below): a role, or a member of it, may pg_labels.enter_scope() a scope a grant reaches. Written by the DBA';
COMMENT ON COLUMN pg_labels.grants.role IS 'The role (its members too)';
COMMENT ON COLUMN pg_labels.grants.scope IS 'The scope it may enter, with every scope below';
COMMENT ON COLUMN pg_labels.grants.granted_by IS 'Who granted it';
COMMENT ON COLUMN pg_labels.grants.created_at IS 'When';

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
    chain_cut_length bigint
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
    created_at timestamptz NOT NULL DEFAULT now(),
    slot smallint NOT NULL DEFAULT pg_labels.trail_slot(now()),
    prev_hash bytea,
    hash bytea,
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
ALTER SEQUENCE pg_labels.steps_id_seq OWNED BY pg_labels.steps.id;
CREATE INDEX steps_created_at_idx ON pg_labels.steps (created_at);
CREATE INDEX steps_run_idx ON pg_labels.steps (run_id, id);
CREATE INDEX steps_labels_idx ON pg_labels.steps USING gin (labels);
CREATE INDEX steps_artifact_idx ON pg_labels.steps (artifact_id) WHERE artifact_id IS NOT NULL;
CREATE INDEX steps_request_idx ON pg_labels.steps (request_id) WHERE request_id IS NOT NULL;
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
        EXECUTE format('CREATE TABLE pg_labels.%I PARTITION OF pg_labels.steps FOR VALUES IN (%s)',
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
    created_at timestamptz NOT NULL DEFAULT now()
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
    created_at timestamptz NOT NULL DEFAULT now()
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
ALTER SEQUENCE pg_labels.shares_id_seq OWNED BY pg_labels.shares.id;
CREATE INDEX shares_artifact_idx ON pg_labels.shares (artifact_id);
CREATE INDEX shares_to_run_idx ON pg_labels.shares (to_run) WHERE to_run IS NOT NULL;
CREATE INDEX shares_crossing_idx ON pg_labels.shares (crossing_id) WHERE crossing_id IS NOT NULL;

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
CREATE TRIGGER tools_change BEFORE UPDATE OR DELETE ON pg_labels.tools
    FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.tools_change();
-- also in replica mode (a restore, a superuser's session): backends forget the tools they kept
ALTER TABLE pg_labels.tools ENABLE ALWAYS TRIGGER tools_change;

----------------------------------------------------------------------------------------
-- Row-level security. An analyst sees the runs, steps, artifacts and shares the entered
-- scope can carry (a step only with its run, a share only with its artifact), the agent
-- versions, listeners, crossings and grants within its reach; nothing when no scope is
-- entered. A role that may write a table (INSERT, or EXECUTE on the crossing functions)
-- reads all of it. The triggers work as the tables' owner without forced security, as
-- foreign-key checks do. The tool catalog is global.
----------------------------------------------------------------------------------------
ALTER TABLE pg_labels.runs ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.steps ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.artifacts ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.shares ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.agent_versions ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.listeners ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.crossings ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE pg_labels.grants ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY runs_visible ON pg_labels.runs
    USING (pg_labels.readable('pg_labels.runs'::pg_catalog.regclass, labels));
CREATE POLICY steps_visible ON pg_labels.steps
    USING (pg_labels.step_readable('pg_labels.steps'::pg_catalog.regclass, labels, run_id));
CREATE POLICY artifacts_visible ON pg_labels.artifacts
    USING (pg_labels.readable('pg_labels.artifacts'::pg_catalog.regclass, labels));
CREATE POLICY shares_visible ON pg_labels.shares
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.shares'::pg_catalog.regclass, 'INSERT'))
           OR EXISTS (SELECT FROM pg_labels.artifacts a WHERE a.id = artifact_id));
CREATE POLICY agent_versions_visible ON pg_labels.agent_versions
    USING (pg_labels.readable('pg_labels.agent_versions'::pg_catalog.regclass, @extschema@.labelset(scope)));
CREATE POLICY listeners_visible ON pg_labels.listeners
    USING (pg_labels.readable('pg_labels.listeners'::pg_catalog.regclass, @extschema@.labelset(scope)));
-- crossings are written only through authorize_crossing() and revoke_crossing(), which run
-- as the owner; the guard trigger refuses every other write, so no policy lets one through
CREATE POLICY crossings_visible ON pg_labels.crossings
    USING ((SELECT pg_catalog.has_function_privilege(
                'pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz)', 'EXECUTE')
                OR pg_catalog.has_function_privilege('pg_labels.revoke_crossing(bigint, text)', 'EXECUTE'))
           OR pg_labels.visible(@extschema@.labelset(from_scope))
           OR pg_labels.visible(@extschema@.labelset(to_scope)));
CREATE POLICY grants_visible ON pg_labels.grants
    USING ((SELECT pg_catalog.has_table_privilege('pg_labels.grants'::pg_catalog.regclass, 'INSERT'))
           OR EXISTS (SELECT FROM pg_catalog.pg_roles r
                       WHERE r.rolname = role AND pg_catalog.pg_has_role(r.oid, 'MEMBER'))
           OR pg_labels.visible(@extschema@.labelset(scope)));
-- every partition has the table's row-level security (a query naming a partition is not
-- filtered by the table's policies) and its own TRUNCATE guard (a TRUNCATE of one partition
-- does not fire the table's)
DO $ring$
DECLARE
    part text;
BEGIN
    FOR part IN SELECT 'pg_labels.steps_' || lpad(s::text, 2, '0') FROM generate_series(0, 23) s LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY', part);
        EXECUTE format($p$CREATE POLICY steps_visible ON %s
            USING (pg_labels.step_readable('pg_labels.steps'::pg_catalog.regclass, labels, run_id))$p$, part);
        EXECUTE format('CREATE TRIGGER steps_no_truncate BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION pg_labels.append_only()', part);
    END LOOP;
END
$ring$;

----------------------------------------------------------------------------------------
-- Views for analysts (with the caller's rights, so row-level security applies)
----------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW pg_labels.trail WITH (security_invoker = true) AS
SELECT s.id, s.run_id, r.scope AS run_scope, r.agent, r.agent_version, s.kind, s.tool, s.labels,
       s.args, s.decision, s.rule, s.reason, s.request_id, s.origin_run, s.artifact_id, s.digest,
       s.share_id, s.crossing_ids, s.actor, s.created_at
FROM pg_labels.steps s
JOIN pg_labels.runs r ON r.id = s.run_id;
COMMENT ON VIEW pg_labels.trail IS 'Every step with its run''s scope and agent, ready to read';
-- the view's columns say what the table's say (the steps' own, and three of the run's)
DO $comments$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT a.attname, coalesce(
                 pg_catalog.col_description('pg_labels.steps'::pg_catalog.regclass,
                     (SELECT attnum FROM pg_catalog.pg_attribute
                       WHERE attrelid = 'pg_labels.steps'::pg_catalog.regclass AND attname = a.attname)),
                 CASE a.attname WHEN 'run_scope' THEN 'The run''s scope'
                                WHEN 'agent' THEN 'The run''s agent'
                                WHEN 'agent_version' THEN 'The published version the run runs, if any' END) AS text
               FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = 'pg_labels.trail'::pg_catalog.regclass AND a.attnum > 0
    LOOP
        EXECUTE format('COMMENT ON COLUMN pg_labels.trail.%I IS %L', c.attname, c.text);
    END LOOP;
END
$comments$;

CREATE OR REPLACE VIEW pg_labels.refusals WITH (security_invoker = true) AS
SELECT t.id AS step_id, t.run_id, t.run_scope, t.agent, t.tool, t.args, t.labels, t.decision,
       t.rule, t.reason, t.actor, t.created_at
FROM pg_labels.trail t
WHERE t.kind = 'gate_decided' AND t.decision IN ('block', 'ask');
COMMENT ON VIEW pg_labels.refusals IS
    'Gate decisions that blocked a call or asked for a person, by rule (refused tool_called steps roll back and leave no row)';
COMMENT ON COLUMN pg_labels.refusals.step_id IS 'The gate_decided step';
COMMENT ON COLUMN pg_labels.refusals.run_id IS 'Its run';
COMMENT ON COLUMN pg_labels.refusals.run_scope IS 'The run''s scope';
COMMENT ON COLUMN pg_labels.refusals.agent IS 'The run''s agent';
COMMENT ON COLUMN pg_labels.refusals.tool IS 'The tool the gate was asked about';
COMMENT ON COLUMN pg_labels.refusals.args IS 'The call''s arguments';
COMMENT ON COLUMN pg_labels.refusals.labels IS 'What the step carried';
COMMENT ON COLUMN pg_labels.refusals.decision IS 'block or ask';
COMMENT ON COLUMN pg_labels.refusals.rule IS 'The rule that decided';
COMMENT ON COLUMN pg_labels.refusals.reason IS 'Why, in one line';
COMMENT ON COLUMN pg_labels.refusals.actor IS 'The role that asked';
COMMENT ON COLUMN pg_labels.refusals.created_at IS 'When';

CREATE OR REPLACE VIEW pg_labels.approval_points WITH (security_invoker = true) AS
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

-- the rows, as they were: a restore of what 0.1.0 decided, so the triggers stay off (the
-- update runs as a superuser)
SET session_replication_role = replica;
DO $copy$
DECLARE
    t text;
    cols text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tools', 'listeners', 'grants', 'agent_versions', 'runs', 'crossings', 'artifacts', 'shares', 'steps'] LOOP
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = pg_catalog.format('pg_labels_0_1_0.%I', t)::pg_catalog.regclass
           AND a.attnum > 0 AND NOT a.attisdropped;
        IF t = 'steps' THEN
            EXECUTE pg_catalog.format('INSERT INTO pg_labels.steps (%s, slot) OVERRIDING SYSTEM VALUE
                                         SELECT %s, pg_labels.trail_slot(created_at) FROM pg_labels_0_1_0.steps',
                                      cols, cols);
        ELSE
            EXECUTE pg_catalog.format('INSERT INTO pg_labels.%I (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM pg_labels_0_1_0.%I',
                                      t, cols, cols, t);
        END IF;
    END LOOP;
END
$copy$;
-- every run's hash chain, computed once from what it holds now (README "Proving the trail":
-- a trail kept by 0.1.0 is proven from the update on)
SELECT pg_labels.start_chains();
RESET session_replication_role;

-- the sequences continue where they were
SELECT pg_catalog.setval('pg_labels.listeners_id_seq', last_value, is_called) FROM pg_labels_0_1_0.listeners_id_seq;
SELECT pg_catalog.setval('pg_labels.crossings_id_seq', last_value, is_called) FROM pg_labels_0_1_0.crossings_id_seq;
SELECT pg_catalog.setval('pg_labels.steps_id_seq', last_value, is_called) FROM pg_labels_0_1_0.steps_id_seq;
SELECT pg_catalog.setval('pg_labels.shares_id_seq', last_value, is_called) FROM pg_labels_0_1_0.shares_id_seq;

-- the privileges the DBA granted on the 0.1.0 tables (and their columns), granted again; then
-- recorded as the DBA's rather than the extension's (pg_init_privs), so that pg_dump keeps them
DO $grants$
DECLARE
    t text;
    g record;
BEGIN
    FOREACH t IN ARRAY ARRAY['tools', 'listeners', 'grants', 'agent_versions', 'runs', 'steps', 'crossings', 'artifacts', 'shares'] LOOP
        FOR g IN SELECT a.privilege_type, a.grantee, a.is_grantable, NULL::name AS col
                   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
                  WHERE c.oid = pg_catalog.format('pg_labels_0_1_0.%I', t)::pg_catalog.regclass
                    AND a.grantee <> c.relowner
                 UNION ALL
                 SELECT a.privilege_type, a.grantee, a.is_grantable, att.attname
                   FROM pg_catalog.pg_attribute att, pg_catalog.aclexplode(att.attacl) a
                  WHERE att.attrelid = pg_catalog.format('pg_labels_0_1_0.%I', t)::pg_catalog.regclass
                    AND att.attnum > 0 AND NOT att.attisdropped
        LOOP
            EXECUTE pg_catalog.format('GRANT %s%s ON pg_labels.%I TO %s%s', g.privilege_type,
                CASE WHEN g.col IS NULL THEN '' ELSE pg_catalog.format(' (%I)', g.col) END, t,
                CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END LOOP;
    DELETE FROM pg_catalog.pg_init_privs i
     USING pg_catalog.pg_class c
     WHERE i.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.objoid = c.oid
       AND c.relnamespace = 'pg_labels'::pg_catalog.regnamespace AND c.relkind IN ('r', 'p');
END
$grants$;


--------------------------------------------------------------------------------------------
-- Scaling out with Citus (sql/citus.sql of 0.2.0)
--------------------------------------------------------------------------------------------
CREATE FUNCTION pg_labels.next_share_id() RETURNS bigint
AS 'MODULE_PATHNAME', 'pgl_next_share_id' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION pg_labels.next_share_id() IS
    'The next id of a share from this node''s range: the default of shares.id on a Citus cluster (every copy of the reference table gets the same)';
CREATE FUNCTION pg_labels.member_of(role name) RETURNS boolean
AS 'MODULE_PATHNAME', 'pgl_member_of' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION pg_labels.member_of(name) IS
    'The current role is this role or a member of it (false for a role that does not exist)';

-- pg_labels: scaling out with Citus (README, "Scaling out with Citus").

CREATE FUNCTION pg_labels.distribute(shard_count int DEFAULT 32) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $distribute$
DECLARE
    r record;
    writer text := 'pg_catalog.has_table_privilege(%L::pg_catalog.text, ''INSERT'')';
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'pg_labels.distribute() needs Citus'
            USING ERRCODE = '55000',
                  HINT = 'Run it on a Citus coordinator (shared_preload_libraries = ''citus'', CREATE EXTENSION citus).';
    END IF;
    IF NOT pg_catalog.citus_is_coordinator() THEN
        RAISE EXCEPTION 'pg_labels.distribute() runs on the Citus coordinator' USING ERRCODE = '55000';
    END IF;
    IF pg_catalog.current_setting('citus.enable_unsafe_triggers') <> 'on' THEN
        RAISE EXCEPTION 'pg_labels.distribute() needs citus.enable_unsafe_triggers = on'
            USING ERRCODE = '55000',
                  DETAIL = 'The platform''s tables are guarded by triggers, which Citus runs on their shards only with this setting.',
                  HINT = 'ALTER SYSTEM SET citus.enable_unsafe_triggers = on on every node, and reload.';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = 'pg_labels.runs'::pg_catalog.regclass) THEN
        RAISE NOTICE 'pg_labels is distributed already';
        RETURN;
    END IF;

    -- 1. The tables leave the extension: Citus manages them from now on (it cannot manage an
    --    extension's tables). The functions, types and views stay the extension's.
    FOR r IN SELECT c.oid::pg_catalog.regclass AS t FROM pg_catalog.pg_class c
              WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace AND c.relkind IN ('r', 'p')
                AND EXISTS (SELECT FROM pg_catalog.pg_depend d
                             WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                               AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e')
    LOOP
        EXECUTE pg_catalog.format('ALTER EXTENSION pg_labels DROP TABLE %s', r.t);
    END LOOP;

    -- 2. A unique key of a distributed table holds its distribution column.
    ALTER TABLE pg_labels.steps DROP CONSTRAINT steps_pkey;
    ALTER TABLE pg_labels.steps ADD PRIMARY KEY (run_id, id, slot);
    CREATE INDEX steps_id_idx ON pg_labels.steps (id);
    -- a reference table's row is written on every node: its id is taken once, where the
    -- statement enters the cluster (Citus evaluates a default there)
    ALTER TABLE pg_labels.shares ALTER COLUMN id SET DEFAULT pg_labels.next_share_id();

    -- 3. Citus runs no subquery in a policy: the same rules without one (the writers' check is
    --    made per row; a step's run and a share's artifact are read by a function, next to
    --    the shard the policy is checked on).
    FOR r IN SELECT p.polname, p.polrelid::pg_catalog.regclass AS t FROM pg_catalog.pg_policy p
               JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
              WHERE c.relnamespace = 'pg_labels'::pg_catalog.regnamespace
    LOOP
        EXECUTE pg_catalog.format('DROP POLICY %I ON %s', r.polname, r.t);
    END LOOP;
    EXECUTE pg_catalog.format('CREATE POLICY runs_visible ON pg_labels.runs USING (%s OR pg_labels.visible(labels))',
                              pg_catalog.format(writer, 'pg_labels.runs'));
    FOR r IN SELECT c.oid::pg_catalog.regclass AS t FROM pg_catalog.pg_class c
              WHERE c.oid = 'pg_labels.steps'::pg_catalog.regclass
                 OR c.oid IN (SELECT inhrelid FROM pg_catalog.pg_inherits
                               WHERE inhparent = 'pg_labels.steps'::pg_catalog.regclass)
    LOOP
        EXECUTE pg_catalog.format('CREATE POLICY steps_visible ON %s USING (%s OR (pg_labels.visible(labels) AND pg_labels.run_visible(tableoid, run_id)))',
                                  r.t, pg_catalog.format(writer, 'pg_labels.steps'));
    END LOOP;
    EXECUTE pg_catalog.format('CREATE POLICY artifacts_visible ON pg_labels.artifacts USING (%s OR pg_labels.visible(labels))',
                              pg_catalog.format(writer, 'pg_labels.artifacts'));
    EXECUTE pg_catalog.format('CREATE POLICY shares_visible ON pg_labels.shares USING (%s OR pg_labels.artifact_visible(tableoid, artifact_id))',
                              pg_catalog.format(writer, 'pg_labels.shares'));
    EXECUTE pg_catalog.format('CREATE POLICY agent_versions_visible ON pg_labels.agent_versions USING (%s OR pg_labels.visible(@extschema@.labelset(scope)))',
                              pg_catalog.format(writer, 'pg_labels.agent_versions'));
    EXECUTE pg_catalog.format('CREATE POLICY listeners_visible ON pg_labels.listeners USING (%s OR pg_labels.visible(@extschema@.labelset(scope)))',
                              pg_catalog.format(writer, 'pg_labels.listeners'));
    CREATE POLICY crossings_visible ON pg_labels.crossings
        USING (pg_catalog.has_function_privilege(
                   'pg_labels.authorize_crossing(@extschema@.scope, @extschema@.scope, text, timestamptz)', 'EXECUTE')
               OR pg_catalog.has_function_privilege('pg_labels.revoke_crossing(bigint, text)', 'EXECUTE')
               OR pg_labels.visible(@extschema@.labelset(from_scope))
               OR pg_labels.visible(@extschema@.labelset(to_scope)));
    EXECUTE pg_catalog.format('CREATE POLICY grants_visible ON pg_labels.grants USING (%s OR pg_labels.member_of(role) OR pg_labels.visible(@extschema@.labelset(scope)))',
                              pg_catalog.format(writer, 'pg_labels.grants'));

    -- 4. The catalogs on every node; runs and the trail spread by run, each run's steps with it.
    PERFORM pg_catalog.create_reference_table(t)
       FROM pg_catalog.unnest(ARRAY['pg_labels.tools', 'pg_labels.grants', 'pg_labels.listeners',
                                    'pg_labels.agent_versions', 'pg_labels.crossings',
                                    'pg_labels.artifacts', 'pg_labels.shares']::pg_catalog.regclass[]) t;
    PERFORM pg_catalog.create_distributed_table('pg_labels.runs', 'id', shard_count => shard_count);
    PERFORM pg_catalog.create_distributed_table('pg_labels.steps', 'run_id', colocate_with => 'pg_labels.runs');
END
$distribute$;
REVOKE ALL ON FUNCTION pg_labels.distribute(int) FROM PUBLIC;
COMMENT ON FUNCTION pg_labels.distribute(int) IS
    'On a Citus coordinator: the catalogs become reference tables, runs and steps are distributed by run (co-located); see the README, Scaling out with Citus';

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
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS %s MINVALUE %s MAXVALUE %s START %s',
                                  seq, low + 1, high, low + 1);
    ELSE
        PERFORM pg_catalog.pg_advisory_lock(pg_catalog.hashtext('pg_labels.shard_sequence'), shard::int);
        session_lock := true;
    END IF;
    BEGIN
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


--------------------------------------------------------------------------------------------
-- 4. The gate, approval requests, and DROP EXTENSION (sql/finish.sql of 0.2.0)
--------------------------------------------------------------------------------------------
--------------------------------------------------------------------------------------------
-- The gate and approval requests
--------------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION pg_labels.gate(run uuid, tool text, args jsonb DEFAULT NULL,
                               labels @extschema@.labelset DEFAULT '{}')
RETURNS TABLE (decision text, rule text, reason text, step_id bigint)
LANGUAGE plpgsql VOLATILE
-- PL/pgSQL (not a body checked when it is made): on a Citus worker this function exists before
-- the shell of pg_labels.steps does
AS $gate$
BEGIN
    RETURN QUERY
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels)
    VALUES (run, 'gate_decided', tool, args, labels)
    RETURNING steps.decision, steps.rule, steps.reason, steps.id;
END
$gate$;
COMMENT ON FUNCTION pg_labels.gate(uuid, text, jsonb, @extschema@.labelset) IS
    'Judges a proposed tool call by the rules the trigger applies to tool_called, without raising: allow, ask or block; records a gate_decided step';

CREATE OR REPLACE FUNCTION pg_labels.request_approval(run uuid, tool text, args jsonb DEFAULT NULL,
                                           labels @extschema@.labelset DEFAULT '{}', reason text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $request$
DECLARE
    made bigint;
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels, reason)
    VALUES (run, 'approval_requested', tool, args, labels, reason)
    RETURNING steps.id INTO made;
    RETURN made;
END
$request$;
COMMENT ON FUNCTION pg_labels.request_approval(uuid, text, jsonb, @extschema@.labelset, text) IS
    'Records an approval_requested step for one concrete call (run, tool, args); returns its id';


--------------------------------------------------------------------------------------------
-- DROP EXTENSION: refused while the trail holds rows (with CASCADE too), so that dropping the
-- extension never destroys the trail silently
--------------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION pg_labels.on_drop_extension() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'pgl_on_drop_extension' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.on_drop_extension() IS
    'Before DROP EXTENSION pg_labels: refuses while the trail holds rows';
CREATE EVENT TRIGGER pg_labels_drop_extension ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION pg_labels.on_drop_extension();
COMMENT ON EVENT TRIGGER pg_labels_drop_extension IS
    'Refuses DROP EXTENSION pg_labels while the trail holds rows';

--------------------------------------------------------------------------------------------
-- 5. The 0.1.0 tables go
--------------------------------------------------------------------------------------------

-- the 0.1.0 tables, with what only they used (their sequences, indexes, policies, triggers,
-- foreign keys); no CASCADE: an object of the DBA's that reads them stops the update. They
-- leave the extension first, which also takes them off its list of tables pg_dump dumps.
ALTER EXTENSION pg_labels DROP SEQUENCE pg_labels_0_1_0.listeners_id_seq;
ALTER EXTENSION pg_labels DROP SEQUENCE pg_labels_0_1_0.crossings_id_seq;
ALTER EXTENSION pg_labels DROP SEQUENCE pg_labels_0_1_0.steps_id_seq;
ALTER EXTENSION pg_labels DROP SEQUENCE pg_labels_0_1_0.shares_id_seq;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.tools;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.listeners;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.grants;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.agent_versions;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.runs;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.steps;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.crossings;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.artifacts;
ALTER EXTENSION pg_labels DROP TABLE pg_labels_0_1_0.shares;
DROP TABLE pg_labels_0_1_0.shares, pg_labels_0_1_0.artifacts, pg_labels_0_1_0.steps, pg_labels_0_1_0.runs,
           pg_labels_0_1_0.crossings, pg_labels_0_1_0.agent_versions, pg_labels_0_1_0.grants,
           pg_labels_0_1_0.listeners, pg_labels_0_1_0.tools;
DROP SCHEMA pg_labels_0_1_0;
