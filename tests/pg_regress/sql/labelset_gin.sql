-- The GIN opclass of labelset: @>, &&, ?, = and <@ through the index return exactly what a
-- sequential scan returns.
CREATE TABLE steps_like AS
SELECT i, labelset(array_remove(ARRAY[
         CASE WHEN i % 3 = 0 THEN 'origin:slack' END,
         CASE WHEN i % 5 = 0 THEN 'origin:webhook' END,
         CASE WHEN i % 7 = 0 THEN 'tag:pii' END,
         CASE WHEN i % 11 <> 0 THEN 'area:acme/a' || (i % 4) END,
         CASE WHEN i % 13 = 0 THEN 'company:globex' END], NULL)) AS labels
FROM generate_series(1, 30000) i;
INSERT INTO steps_like VALUES (30001, '{}'), (30002, '{}');
CREATE INDEX steps_like_gin ON steps_like USING gin (labels);
ANALYZE steps_like;

EXPLAIN (COSTS OFF) SELECT count(*) FROM steps_like WHERE labels @> '{origin:slack}';
EXPLAIN (COSTS OFF) SELECT count(*) FROM steps_like WHERE labels ? 'tag:pii';

CREATE TEMP TABLE queries (op text, q text);
INSERT INTO queries VALUES
  ('@>', '{origin:slack}'), ('@>', '{origin:slack,tag:pii}'), ('@>', '{}'), ('@>', '{tag:nope}'),
  ('@>', '{area:acme/a1,origin:webhook}'),
  ('&&', '{origin:slack,origin:webhook}'), ('&&', '{}'), ('&&', '{tag:nope,company:globex}'),
  ('?',  'origin:slack'), ('?', 'tag:pii'), ('?', 'not a label'), ('?', 'tag:nope'),
  ('=',  '{}'), ('=', '{area:acme/a1}'), ('=', '{origin:slack,area:acme/a3}'),
  ('<@', '{}'), ('<@', '{area:acme/a1,origin:slack}'), ('<@', '{area:acme/a2,origin:slack,tag:pii,company:globex}');

CREATE FUNCTION query_text(op text, q text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT count(*) FROM steps_like WHERE labels %s %L::%s', op, q,
                CASE op WHEN '?' THEN 'text' ELSE 'labelset' END) $$;
CREATE FUNCTION run_query(op text, q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE query_text(op, q) INTO n;
  RETURN n;
END $$;
CREATE FUNCTION uses_gin(op text, q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query_text(op, q) LOOP
    IF line LIKE '%steps_like_gin%' THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $$;

-- through the index (checked to be used) ...
SET enable_seqscan = off;
CREATE TEMP TABLE by_index AS SELECT op, q, run_query(op, q) AS n FROM queries;
RESET enable_seqscan;
-- ... and by a sequential scan
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE by_seqscan AS SELECT op, q, run_query(op, q) AS n FROM queries;
RESET enable_indexscan; RESET enable_bitmapscan;

SELECT s.op, s.q, s.n, i.n = s.n AS index_agrees
FROM by_seqscan s JOIN by_index i USING (op, q) ORDER BY s.op, s.q;

-- the index is really used for each operator
SET enable_seqscan = off;
SELECT op, q FROM queries WHERE NOT uses_gin(op, q);
RESET enable_seqscan;

-- updates keep the index right
UPDATE steps_like SET labels = labels || '{tag:late}' WHERE i % 1000 = 0;
SET enable_seqscan = off;
SELECT count(*) FROM steps_like WHERE labels ? 'tag:late';
RESET enable_seqscan;
DROP TABLE steps_like;
DROP FUNCTION run_query(text, text), uses_gin(text, text), query_text(text, text);
