-- What analysts see: only what their entered scope can carry. carol may enter acme/platform,
-- dave all of acme; neither sees anything before entering a scope.
\pset footer off
\pset null ''

\echo '== The DBA: grants of scopes to analysts, and what they may read'
CREATE ROLE demo_carol;
CREATE ROLE demo_dave;
GRANT USAGE ON SCHEMA pg_labels TO demo_carol, demo_dave;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                pg_labels.refused_writes, pg_labels.trail, pg_labels.refusals TO demo_carol, demo_dave;
INSERT INTO pg_labels.grants (role, scope) VALUES ('demo_carol', 'acme/platform'), ('demo_dave', 'acme');

SET ROLE demo_carol;
\echo '== carol, before entering a scope, sees nothing'
SELECT count(*) AS "runs carol sees" FROM pg_labels.runs;
\echo '== carol cannot enter a scope she has no grant for, nor raise it with a setting'
SELECT pg_labels.enter_scope('acme');
SET pg_labels.scope = 'acme';
SELECT pg_labels.current_scope() AS "carol's scope";
BEGIN;
SELECT pg_labels.enter_scope('acme/platform') AS "carol entered";
\echo '== ... and then sees the runs acme/platform can carry: not the one finance data entered'
SELECT agent, scope, labels FROM pg_labels.runs ORDER BY opened_at;
COMMIT;
RESET ROLE;

SET ROLE demo_dave;
BEGIN;
SELECT pg_labels.enter_scope('acme') AS "dave entered";
\echo '== dave sees the whole company: the trail, ready to read'
SELECT run_scope, agent, kind, tool, labels, decision, rule FROM pg_labels.trail ORDER BY id;
\echo '== The refusals of the company, by rule: the gate''s, and the refused writes'
SELECT source, rule, decision, sum(count) AS refusals FROM pg_labels.refusals
GROUP BY source, rule, decision ORDER BY source, rule;
\echo '== Where did the support run''s context come from? lineage, then the DOT picture'
SELECT run_id AS support_run FROM pg_labels.trail WHERE kind = 'context_read' ORDER BY id DESC LIMIT 1 \gset
SELECT depth, agent AS "upstream agent", scope, left(digest, 16) AS digest, labels FROM pg_labels.lineage(:'support_run');
SELECT pg_labels.lineage_dot(:'support_run') AS "lineage (Graphviz DOT)";
COMMIT;
RESET ROLE;
