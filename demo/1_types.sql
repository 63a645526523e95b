-- The seed's barrier table, computed by the operators of pg_labels.
\pset footer off
\echo
\echo '== The scope rule: a run may only carry data from scopes it reaches'
SELECT data_label::labelset AS "data label", run_scope::scope AS "run scope",
       CASE WHEN run_scope::scope @> data_label::labelset THEN 'allowed' ELSE 'blocked' END AS result
FROM (VALUES ('{area:acme/platform}', 'acme/platform'),
             ('{area:acme/platform}', 'acme'),
             ('{area:acme/platform}', 'acme/finance'),
             ('{area:acme/platform}', 'globex/platform')) seed(data_label, run_scope);

\echo '== Labels accumulate: what a run carries after a Slack message and a tool result'
SELECT labelset_union(l) AS carried,
       labelset_scope(labelset_union(l)) AS "deepest scope that can carry it",
       labelset_is_trusted(labelset_union(l)) AS trusted,
       labelset_escaping(labelset_union(l), 'acme/finance') AS "escapes acme/finance"
FROM (VALUES ('{area:acme/platform}'::labelset),
             ('{origin:slack/T01/C02}'),
             ('{origin:tool,tag:pii}')) steps(l);

\echo '== A bad literal is refused with SQLSTATE 22P02, saying what and where'
\set VERBOSITY verbose
SELECT '{area:acme/platform, area:Acme/finance}'::labelset;
