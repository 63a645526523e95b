\set a random(1, 10)
\set ms random(0, 3)
BEGIN;
SET LOCAL ROLE stress_platform;
SELECT try_share(md5('a' || :a)::uuid);
SELECT pg_sleep(0.001 * :ms);
COMMIT;
