-- Many real connections writing to the same few runs at once (scripts/test.sh runs pgbench
-- with the scripts beside this file); check.sql then reads the commit order.
CREATE EXTENSION pg_labels;
INSERT INTO pg_labels.tools (name, effect) VALUES ('stress.wipe', 'destructive'), ('stress.read', 'read');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/ops' FROM generate_series(1, 40) i;
-- refused calls leave no step; the harness notes them here to show the test saw refusals
CREATE TABLE refused (run uuid, at timestamptz DEFAULT clock_timestamp());
-- a tool call that may be refused, without aborting the pgbench client
CREATE FUNCTION try_wipe(run uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES (run, 'tool_called', 'stress.wipe');
EXCEPTION WHEN SQLSTATE '23L02' THEN
    INSERT INTO refused VALUES (run);
END $$;
