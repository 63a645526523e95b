-- Whatever a user types, or whatever bytes a damaged datum holds: a clean error with a real
-- SQLSTATE, never XX000, never a crash. Random inputs from a fixed seed.
SELECT setseed(0.42);
CREATE TEMP TABLE outcomes (what text, sqlstate text);

-- random strings over the characters that matter to the grammars
CREATE FUNCTION pg_temp.random_text() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(substr(E'{}",:/ *aAbz09_-.\t\\\'é' || chr(1) || 'company:area:origin:tag:installation',
                           1 + floor(random() * 52)::int, 1 + floor(random() * 3)::int), '')
  FROM generate_series(1, floor(random() * 24)::int)
$$;

DO $$
DECLARE t text; i int;
BEGIN
  FOR i IN 1..4000 LOOP
    t := pg_temp.random_text();
    BEGIN PERFORM t::scope; INSERT INTO outcomes VALUES ('scope', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('scope', SQLSTATE); END;
    BEGIN PERFORM t::labelset; INSERT INTO outcomes VALUES ('labelset', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('labelset', SQLSTATE); END;
    BEGIN PERFORM ('{' || t || '}')::labelset; INSERT INTO outcomes VALUES ('labelset braced', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('labelset braced', SQLSTATE); END;
    BEGIN PERFORM labelset(ARRAY[t, 'tag:x']); INSERT INTO outcomes VALUES ('text[]', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('text[]', SQLSTATE); END;
    BEGIN PERFORM labelset(to_jsonb(ARRAY[t])); INSERT INTO outcomes VALUES ('jsonb', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('jsonb', SQLSTATE); END;
    BEGIN PERFORM '{tag:a}'::labelset ? t; INSERT INTO outcomes VALUES ('?', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('?', SQLSTATE); END;
  END LOOP;
END $$;

-- random bytes taken as stored datums (a damaged page, a bad binary COPY)
CREATE CAST (bytea AS scope) WITHOUT FUNCTION;
CREATE CAST (bytea AS labelset) WITHOUT FUNCTION;
DO $$
DECLARE b bytea; i int;
BEGIN
  FOR i IN 1..4000 LOOP
    SELECT decode(string_agg(lpad(to_hex(CASE WHEN random() < 0.5 THEN (ARRAY[0, 1, 1, 97, 116, 111])[1 + floor(random() * 6)::int]
                                               ELSE floor(random() * 256)::int END), 2, '0'), ''), 'hex')
      INTO b FROM generate_series(1, floor(random() * 12)::int);
    b := coalesce(b, '');
    BEGIN PERFORM b::scope::text, b::scope @> 'acme'::scope, scope_depth(b::scope), scope_label(b::scope);
      INSERT INTO outcomes VALUES ('scope datum', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('scope datum', SQLSTATE); END;
    BEGIN PERFORM b::labelset::text, 'acme'::scope @> b::labelset, labelset_scope(b::labelset),
                  b::labelset || '{tag:x}', labelset_to_jsonb(b::labelset), b::labelset @> '{tag:a}';
      INSERT INTO outcomes VALUES ('labelset datum', 'ok');
    EXCEPTION WHEN OTHERS THEN INSERT INTO outcomes VALUES ('labelset datum', SQLSTATE); END;
  END LOOP;
END $$;
DROP CAST (bytea AS scope);
DROP CAST (bytea AS labelset);

-- every outcome is a success or one of the documented SQLSTATEs
SELECT what, sqlstate, sqlstate IN ('ok', '22P02', '22004', '22023', 'XX001') AS documented
FROM outcomes GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS internal_errors FROM outcomes WHERE sqlstate = 'XX000';
