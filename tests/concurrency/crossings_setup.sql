-- A storm on crossings: platform clients read finance artifacts into support runs, call tools
-- and share, while people revoke the crossing and authorize a new one, holding their
-- transactions open a few milliseconds. crossings_check.sql then reads the commit order.
CREATE EXTENSION pg_labels;
CREATE ROLE stress_platform;
CREATE ROLE stress_bob;
GRANT USAGE ON SCHEMA pg_labels TO stress_platform, stress_bob;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares TO stress_platform;
GRANT SELECT ON pg_labels.tools, pg_labels.crossings TO stress_platform, stress_bob;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
                          pg_labels.revoke_crossing(bigint, text) TO stress_bob;
INSERT INTO pg_labels.grants (role, scope) VALUES ('stress_platform', 'acme'), ('stress_bob', 'acme');
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES ('stress.search', 'read', true);
INSERT INTO pg_labels.runs (id, scope) VALUES ('f0000000-0000-0000-0000-000000000000', 'acme/finance');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(1, 40) i;
INSERT INTO pg_labels.artifacts (id, origin_run, digest)
SELECT md5('a' || i)::uuid, 'f0000000-0000-0000-0000-000000000000', pg_labels.digest('ledger ' || i)
FROM generate_series(1, 10) i;
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'storm: first');
INSERT INTO pg_labels.shares (artifact_id, to_scope) SELECT id, 'acme/platform' FROM pg_labels.artifacts;
-- refused statements leave nothing behind; the harness notes them to show the storm saw both
CREATE TABLE refused (what text, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON refused TO stress_platform;
CREATE FUNCTION try_read(run uuid, artifact uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES (run, 'context_read', artifact);
EXCEPTION WHEN SQLSTATE '23L01' THEN
    INSERT INTO refused (what) VALUES ('read');
END $$;
CREATE FUNCTION try_call(run uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES (run, 'tool_called', 'stress.search');
EXCEPTION WHEN SQLSTATE '23L01' THEN
    INSERT INTO refused (what) VALUES ('call');
END $$;
CREATE FUNCTION try_share(artifact uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES (artifact, 'acme/platform');
EXCEPTION WHEN SQLSTATE '23L01' THEN
    INSERT INTO refused (what) VALUES ('share');
END $$;
-- revoke the newest active crossing, or authorize a new one when none is active
CREATE FUNCTION flip() RETURNS void LANGUAGE plpgsql AS $$
DECLARE c bigint;
BEGIN
    SELECT id INTO c FROM pg_labels.crossings WHERE revoked_at IS NULL ORDER BY id DESC LIMIT 1;
    IF c IS NULL THEN
        PERFORM pg_labels.authorize_crossing('acme/finance', 'acme/platform', 'storm');
    ELSE
        PERFORM pg_labels.revoke_crossing(c, 'storm');
    END IF;
EXCEPTION WHEN SQLSTATE '55000' THEN
    NULL;  -- another person revoked it first
END $$;
