-- An install as a DBA sets it up after CREATE EXTENSION: the privileges of the roles that use
-- it (platform service, approver, crossing authorizer, analyst). Privileges are schema, not
-- data: a data-only restore goes into an install set up like this.
GRANT USAGE ON SCHEMA pg_labels TO dump_platform, dump_alice, dump_bob, dump_analyst;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
  pg_labels.agent_versions TO dump_platform;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners TO dump_platform;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO dump_alice;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
  pg_labels.revoke_crossing(bigint, text) TO dump_bob;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.trail TO dump_analyst;
-- (0.3.1 and later: the requests' view, as the README grants it)
DO $$
BEGIN
    IF pg_catalog.to_regclass('pg_labels.approval_requests') IS NOT NULL THEN
        GRANT SELECT ON pg_labels.approval_requests TO dump_analyst;
    END IF;
END
$$;
