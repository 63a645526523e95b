-- After the storm: no destructive call committed after Slack data of its run had committed
-- (commit order from track_commit_timestamp), every run carries exactly the union of its
-- steps' labels, and every refused call is on the record (pg_labels.refused_writes, written by
-- background workers: waited for, up to a minute).
\pset footer off
-- (on Citus, tests/citus/run.sh sets citus: a refusal decided on a worker is in that worker's
-- server log only, as the README says)
\if :{?citus}
\else
DO $$
BEGIN
    FOR i IN 1..1200 LOOP
        EXIT WHEN (SELECT coalesce(sum(count), 0) FROM pg_labels.refused_writes WHERE tool = 'stress.wipe')
                  >= (SELECT count(*) FROM refused);
        PERFORM pg_sleep(0.05);
    END LOOP;
END $$;
SELECT (SELECT coalesce(sum(count), 0) FROM pg_labels.refused_writes WHERE tool = 'stress.wipe')
       - (SELECT count(*) FROM refused) AS refusals_unrecorded;
\endif
SELECT (SELECT count(*) FROM pg_labels.steps WHERE kind = 'tool_called' AND tool = 'stress.wipe') AS wipes_allowed,
       (SELECT count(*) FROM refused) AS wipes_refused,
       (SELECT count(*) FROM pg_labels.steps WHERE kind = 'input') AS slack_inputs,
       (SELECT count(*) FROM pg_labels.steps WHERE kind = 'tool_called' AND tool = 'stress.read') AS reads,
       (SELECT count(*) FROM pg_labels.runs WHERE labels ? 'origin:slack') AS untrusted_runs,
       (SELECT count(*) FROM pg_labels.steps WHERE pg_xact_commit_timestamp(xmin) IS NULL) AS without_commit_time;

SELECT count(*) AS violations
FROM pg_labels.steps t
JOIN pg_labels.steps s ON s.run_id = t.run_id AND s.kind = 'input' AND s.labels ? 'origin:slack'
WHERE t.kind = 'tool_called' AND t.tool = 'stress.wipe'
  AND pg_xact_commit_timestamp(s.xmin) < pg_xact_commit_timestamp(t.xmin);

SELECT count(*) AS runs_whose_labels_are_not_the_union_of_their_steps
FROM pg_labels.runs r
WHERE r.labels <> labelset(r.scope) || coalesce((SELECT labelset_union(s.labels) FROM pg_labels.steps s WHERE s.run_id = r.id), '{}');

-- the storm did interleave: runs that allowed wipes before their Slack data and refused after
SELECT count(*) AS runs_with_wipes_then_refusals
FROM pg_labels.runs r
WHERE EXISTS (SELECT FROM pg_labels.steps t WHERE t.run_id = r.id AND t.tool = 'stress.wipe')
  AND EXISTS (SELECT FROM refused f WHERE f.run = r.id);
