-- The triggers run some statements as the tables' owner. A writer's search_path must not
-- choose the operators of those statements: here a role puts its own "=" for uuid (and for
-- text and jsonb) ahead of pg_catalog, in a fresh session, before any step is written.
\pset null '(null)'
CREATE ROLE regress_pg_labels_schemer;
GRANT USAGE ON SCHEMA pg_labels TO regress_pg_labels_schemer;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO regress_pg_labels_schemer;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_schemer', '*') ON CONFLICT DO NOTHING;
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO regress_pg_labels_schemer', current_database()); END $$;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO regress_pg_labels_schemer;
-- (a role acts only where its grants in pg_labels.grants reach: this file's act everywhere)
INSERT INTO pg_labels.grants (role, scope) VALUES ('regress_pg_labels_schemer', '*') ON CONFLICT DO NOTHING;
INSERT INTO pg_labels.tools (name, effect) VALUES ('sp.update', 'reversible_write') ON CONFLICT DO NOTHING;

SET ROLE regress_pg_labels_schemer;
CREATE SCHEMA schemer;
CREATE FUNCTION schemer.eq(uuid, uuid) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'schemer''s = ran as %', current_user; RETURN $1::text = $2::text; END $$;
CREATE OPERATOR schemer.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = schemer.eq);
CREATE FUNCTION schemer.teq(text, text) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'schemer''s text = ran as %', current_user; RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR schemer.= (LEFTARG = text, RIGHTARG = text, FUNCTION = schemer.teq);
SET search_path = schemer, pg_catalog, public;

INSERT INTO pg_labels.runs (id, scope) VALUES ('f0000000-0000-0000-0000-000000000001', 'acme/sp');
-- grows the run's labels (an UPDATE of the run) and looks for an approval (a SELECT of steps)
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('f0000000-0000-0000-0000-000000000001', 'input', '{origin:slack}');
INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES
  ('f0000000-0000-0000-0000-000000000001', 'tool_called', 'sp.update', '{"a": 1}');
-- deciding an approval runs statements as the owner too
RESET ROLE;
SELECT pg_labels.request_approval('f0000000-0000-0000-0000-000000000001', 'sp.update', '{"a": 1}') AS request \gset
SET ROLE regress_pg_labels_schemer;
SET search_path = schemer, pg_catalog, public;
SELECT pg_labels.decide_approval(:request, true) IS NOT NULL AS decided;
-- (no notice above: the schemer's operators never ran, as the owner or at all)
RESET search_path;
SELECT labels FROM pg_labels.runs WHERE id = 'f0000000-0000-0000-0000-000000000001';
DROP SCHEMA schemer CASCADE;
RESET ROLE;
DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM regress_pg_labels_schemer', current_database()); END $$;
DROP OWNED BY regress_pg_labels_schemer;
DROP ROLE regress_pg_labels_schemer;
