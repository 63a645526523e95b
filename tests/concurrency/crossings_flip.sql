\set ms random(0, 5)
BEGIN;
SET LOCAL ROLE stress_bob;
SELECT flip();
SELECT pg_sleep(0.001 * :ms);
COMMIT;
