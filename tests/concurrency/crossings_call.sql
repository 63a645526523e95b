\set r random(1, 40)
\set ms random(0, 3)
BEGIN;
SET LOCAL ROLE stress_platform;
SELECT try_call(md5(:r::text)::uuid);
SELECT pg_sleep(0.001 * :ms);
COMMIT;
