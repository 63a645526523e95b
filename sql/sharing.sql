-- pg_labels: context shared between agents by reference -- artifacts (labels, digest, origin
-- run), shares (an artifact offered to a scope or one run) and crossings (explicit, audited
-- authorizations to carry data of one scope into another). The triggers are C functions
-- (src/sharing.rs, src/crossing.rs); like the trail's, they work as the tables' owner.

--------------------------------------------------------------------------------------------
-- Tables
--------------------------------------------------------------------------------------------

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
COMMENT ON COLUMN pg_labels.crossings.authorized_by IS 'The role that authorized the crossing (set by the database)';
COMMENT ON COLUMN pg_labels.crossings.expires_at IS 'NULL: until revoked';
CREATE INDEX crossings_to_scope_idx ON pg_labels.crossings (to_scope);

CREATE TABLE pg_labels.artifacts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    origin_run uuid NOT NULL REFERENCES pg_labels.runs (id),
    digest text NOT NULL,
    labels @extschema@.labelset NOT NULL DEFAULT '{}',
    description text,
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.artifacts IS
    'Context shared by reference: the content stays where it is; its digest, origin run and labels are recorded here. Labels are at least what the origin run carried when the artifact was made';
COMMENT ON COLUMN pg_labels.artifacts.digest IS 'Hex SHA-256 of the content: pg_labels.digest(content)';
CREATE INDEX artifacts_origin_run_idx ON pg_labels.artifacts (origin_run);
CREATE INDEX artifacts_labels_idx ON pg_labels.artifacts USING gin (labels);
CREATE INDEX artifacts_digest_idx ON pg_labels.artifacts (digest);

CREATE TABLE pg_labels.shares (
    id bigint NOT NULL PRIMARY KEY,
    artifact_id uuid NOT NULL REFERENCES pg_labels.artifacts (id),
    to_scope @extschema@.scope NOT NULL,
    to_run uuid REFERENCES pg_labels.runs (id),
    crossing_id bigint REFERENCES pg_labels.crossings (id),
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_labels.shares IS
    'An artifact offered to the runs of a scope (to_scope and its sub-areas), or to one run (to_run; to_scope is then that run''s scope). Refused (data_barrier) unless to_scope can carry the artifact''s labels or an active crossing covers the rest';
COMMENT ON COLUMN pg_labels.shares.crossing_id IS 'The crossing this share used, when the artifact carries labels to_scope cannot carry (set by the database)';
CREATE SEQUENCE pg_labels.shares_id_seq OWNED BY pg_labels.shares.id;
CREATE INDEX shares_artifact_idx ON pg_labels.shares (artifact_id);
CREATE INDEX shares_to_run_idx ON pg_labels.shares (to_run) WHERE to_run IS NOT NULL;
CREATE INDEX shares_crossing_idx ON pg_labels.shares (crossing_id) WHERE crossing_id IS NOT NULL;

SELECT pg_catalog.pg_extension_config_dump('pg_labels.crossings', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.crossings_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.artifacts', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.shares', '');
SELECT pg_catalog.pg_extension_config_dump('pg_labels.shares_id_seq', '');

--------------------------------------------------------------------------------------------
-- Triggers
--------------------------------------------------------------------------------------------

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

--------------------------------------------------------------------------------------------
-- Functions
--------------------------------------------------------------------------------------------

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
