-- Two agents share context by reference: an artifact with labels, digest and origin run. The
-- share to another area is refused until a person records a crossing; the support run then
-- reads and acts under it; once the crossing is revoked, its next call is refused.
\pset footer off
\pset null ''

\echo '== The DBA: a person who may record and end crossings, and what the platform may write'
CREATE ROLE demo_bob;
GRANT USAGE ON SCHEMA pg_labels TO demo_bob;
GRANT SELECT ON pg_labels.crossings TO demo_bob, demo_platform;
GRANT SELECT, INSERT ON pg_labels.artifacts, pg_labels.shares TO demo_platform;
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
                          pg_labels.revoke_crossing(bigint, text) TO demo_bob;
-- each acts only where its grants reach: bob in acme; the platform writes finance-bot's runs too
INSERT INTO pg_labels.grants (role, scope) VALUES ('demo_bob', 'acme'), ('demo_platform', 'acme/finance');

SET ROLE demo_platform;
\echo '== finance-bot, in acme/finance, writes a summary of the refund policy and publishes it as an artifact'
INSERT INTO pg_labels.runs (agent, scope) VALUES ('finance-bot', 'acme/finance') RETURNING id AS finance_run \gset
INSERT INTO pg_labels.artifacts (origin_run, digest, description)
VALUES (:'finance_run', pg_labels.digest('Refunds over 500 EUR need a second approver.'), 'refund policy summary')
RETURNING id AS artifact, labels, digest \gset
SELECT :'artifact' AS artifact, :'labels' AS "labels (at least the run's)", :'digest' AS "digest (hex SHA-256)";

\echo '== Sharing it with support-bot''s area is refused: acme/platform cannot carry finance data'
\set VERBOSITY verbose
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES (:'artifact', 'acme/platform');
\set VERBOSITY default
RESET ROLE;

\echo '== bob, whom the DBA allowed, records the crossing: who, why, until when'
SET ROLE demo_bob;
SELECT pg_labels.authorize_crossing('acme/finance', 'acme/platform',
    'support answers refund questions with the finance policy', now() + interval '30 days') AS crossing \gset
SELECT id, from_scope, to_scope, authorized_by, reason FROM pg_labels.crossings WHERE id = :crossing;
RESET ROLE;

SET ROLE demo_platform;
\echo '== Now the share goes through and names the crossing it used; the labels stay as they were'
INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES (:'artifact', 'acme/platform')
RETURNING id AS share, to_scope, crossing_id;

\echo '== A support run reads it: origin run, digest and labels come from the artifact'
INSERT INTO pg_labels.runs (agent, scope) VALUES ('support-bot', 'acme/platform') RETURNING id AS support_run \gset
INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES (:'support_run', 'context_read', :'artifact')
RETURNING kind, labels, origin_run = :'finance_run' AS "from finance-bot's run", share_id, crossing_ids;
\echo '== ... and can still act: the call passes the barrier under the crossing, and says so'
SELECT decision, rule, reason FROM pg_labels.gate(:'support_run', 'kb.search', '{"q": "refund over 500"}');
RESET ROLE;

\echo '== bob revokes the crossing: the run''s next call is judged without it'
SET ROLE demo_bob;
SELECT pg_labels.revoke_crossing(:crossing, 'policy now published to everyone') IS NOT NULL AS revoked;
SET ROLE demo_platform;
\set VERBOSITY verbose
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES (:'support_run', 'tool_called', 'kb.search', '{"q": "refund over 500"}');
\set VERBOSITY default
SELECT pg_labels.refusals_recorded() AS "refused, and on the record";

\echo '== Provenance: which crossing let what through'
SELECT st.kind, st.tool, st.decision, st.rule, st.crossing_ids, c.reason AS "crossing reason", c.revoked_at IS NOT NULL AS "now revoked"
FROM pg_labels.steps st LEFT JOIN pg_labels.crossings c ON c.id = ANY (st.crossing_ids)
WHERE st.run_id = :'support_run' ORDER BY st.id;
RESET ROLE;
