-- After the storm on crossings: nothing that used a crossing (a context read, a tool call, a
-- share) committed after the revocation of that crossing had committed (commit order from
-- track_commit_timestamp; a revoked crossing's row version is the revoking transaction's).
\pset footer off
SELECT (SELECT count(*) FROM pg_labels.crossings) AS crossings,
       (SELECT count(*) FROM pg_labels.crossings WHERE revoked_at IS NOT NULL) AS revoked,
       (SELECT count(*) FROM pg_labels.steps WHERE crossing_ids IS NOT NULL) AS steps_under_crossings,
       (SELECT count(*) FROM pg_labels.shares WHERE crossing_id IS NOT NULL) AS shares_under_crossings,
       (SELECT count(*) FROM refused) AS refused;

SELECT (SELECT count(*)
          FROM pg_labels.steps s JOIN pg_labels.crossings c ON c.id = ANY (s.crossing_ids)
         WHERE c.revoked_at IS NOT NULL
           AND pg_xact_commit_timestamp(s.xmin) > pg_xact_commit_timestamp(c.xmin))
     + (SELECT count(*)
          FROM pg_labels.shares s JOIN pg_labels.crossings c ON c.id = s.crossing_id
         WHERE c.revoked_at IS NOT NULL
           AND pg_xact_commit_timestamp(s.xmin) > pg_xact_commit_timestamp(c.xmin)) AS used_after_revocation;

-- and a tool call committed after finance data had entered its run (a read committed before
-- it) names the crossings that let it through
SELECT count(*) AS calls_through_without_crossing
FROM pg_labels.steps s
WHERE s.kind = 'tool_called' AND s.crossing_ids IS NULL
  AND EXISTS (SELECT FROM pg_labels.steps e
               WHERE e.run_id = s.run_id AND e.kind = 'context_read'
                 AND pg_xact_commit_timestamp(e.xmin) < pg_xact_commit_timestamp(s.xmin));
