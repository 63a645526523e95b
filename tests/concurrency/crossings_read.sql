\set r random(1, 40)
\set a random(1, 10)
\set ms random(0, 3)
BEGIN;
SET LOCAL ROLE stress_platform;
SELECT try_read(md5(:r::text)::uuid, md5('a' || :a)::uuid);
SELECT pg_sleep(0.001 * :ms);
COMMIT;
