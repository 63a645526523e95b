-- scope: literals, operators, functions, casts, binary I/O, btree and hash opclasses.
\pset null '(null)'

-- opclasses are well formed
SELECT opc.opcname, am.amname, amvalidate(opc.oid)
FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
WHERE opc.opcintype = 'scope'::regtype ORDER BY 2;

-- canonical literals
SELECT s::scope, scope_depth(s::scope), scope_label(s::scope)
FROM (VALUES ('*'), ('acme'), ('acme/platform'), ('acme/platform/infra'),
             ('a0/b_c/d-e'), ('9lives')) v(s);

-- malformed literals: 22P02 with what is wrong and where
\set VERBOSITY verbose
SELECT ''::scope;
\set VERBOSITY default
SELECT '/acme'::scope;
SELECT 'acme/'::scope;
SELECT 'acme//platform'::scope;
SELECT 'Acme'::scope;
SELECT 'acme/Platform'::scope;
SELECT 'acme platform'::scope;
SELECT ' acme'::scope;
SELECT 'acme '::scope;
SELECT 'acme/*'::scope;
SELECT '**'::scope;
SELECT '_acme'::scope;
SELECT 'acme/-x'::scope;
SELECT 'acme.com'::scope;
SELECT 'açme'::scope;
SELECT repeat('a', 64)::scope;
SELECT repeat('a', 63)::scope = repeat('a', 63)::scope AS sixty_three_is_fine;
SELECT array_to_string(array_fill('a'::text, ARRAY[17]), '/')::scope;
SELECT scope_depth(array_to_string(array_fill('a'::text, ARRAY[16]), '/')::scope);
SELECT '{area:acme/x}'::scope;
SELECT scope(E'acme\tx');

-- the seed's table: the run scope reaches the data's scope
SELECT data, run_scope, run_scope @> data AS reaches, data <@ run_scope AS within
FROM (VALUES ('acme/platform'::scope, 'acme/platform'::scope),
             ('acme/platform', 'acme'),
             ('acme/platform', 'acme/finance'),
             ('acme/platform', 'globex/platform')) v(data, run_scope);

-- containment: * reaches all, no sibling, parent or prefix-string confusion
SELECT '*'::scope @> 'acme/x' AS root_reaches,
       'acme'::scope @> 'acme' AS reflexive,
       'acme/x'::scope @> 'acme' AS child_reaches_parent,
       'acme'::scope @> 'acme2' AS prefix_string,
       'acme'::scope @> 'acme-x/y' AS prefix_string_dash,
       'acme/x'::scope <@ '*' AS within_root;

-- functions
SELECT scope_parent('acme/platform/infra'), scope_parent('acme'), scope_parent('*');
SELECT scope_lca('acme/platform', 'acme/finance'), scope_lca('acme/x', 'acme/xy'),
       scope_lca('acme', 'globex'), scope_lca('acme/x/y', 'acme/x'), scope_lca('*', 'acme');

-- the order: a scope sorts right before its descendants, so subtrees are contiguous
SELECT s FROM unnest('{acme0,acme-x,acme/platform,acme,*,acme/a-b,acme/platform/z,globex,acme/platform-2}'::scope[]) s
ORDER BY s;
SELECT 'acme'::scope < 'acme/a', 'acme/z'::scope < 'acme-x', 'acme'::scope = 'acme',
       'acme'::scope <> 'acme/x', 'b'::scope > 'acme/zzz', 'acme'::scope >= 'acme';

-- casts
SELECT 'acme/x'::text::scope, ('acme/x'::scope)::text, 'acme'::varchar::scope;
CREATE TEMP TABLE sc (s scope);
INSERT INTO sc VALUES ('acme'), ('acme/x');
INSERT INTO sc SELECT 'globex/y'::text;
SELECT s, s::text || '!' AS as_text FROM sc ORDER BY s;

-- binary I/O: COPY BINARY round trip (files in the cluster's scratch directory)
\getenv scratch PG_LABELS_SCRATCH
\set scope_file :scratch '/scope.bin'
COPY sc TO :'scope_file' WITH (FORMAT binary);
CREATE TEMP TABLE sc2 (s scope);
COPY sc2 FROM :'scope_file' WITH (FORMAT binary);
SELECT count(*) AS same FROM sc JOIN sc2 USING (s);
SELECT scope_send('acme/x');
-- damaged binary messages: a bytea column's binary form is its raw bytes
\set bad_file :scratch '/scope_bad.bin'
COPY (SELECT '\x0261636d65'::bytea) TO :'bad_file' WITH (FORMAT binary);
COPY sc2 FROM :'bad_file' WITH (FORMAT binary);
COPY (SELECT '\x0141636d65'::bytea) TO :'bad_file' WITH (FORMAT binary);
COPY sc2 FROM :'bad_file' WITH (FORMAT binary);
COPY (SELECT ''::bytea) TO :'bad_file' WITH (FORMAT binary);
COPY sc2 FROM :'bad_file' WITH (FORMAT binary);

-- hashing: equal values hash alike; hash joins and hash aggregates work
SELECT scope_hash('acme/x') = scope_hash('acme/x'::text::scope) AS hash_stable,
       scope_hash_extended('acme/x', 0) = scope_hash_extended('acme/x', 0) AS ext_stable,
       scope_hash_extended('acme/x', 0) <> scope_hash_extended('acme/x', 1) AS seeded;
SET enable_sort = off;
SELECT s, count(*) FROM (SELECT ('c' || (i % 3))::scope s FROM generate_series(1, 30) i) v GROUP BY s ORDER BY 1;
RESET enable_sort;

-- subtree queries use a btree index and return what a sequential scan returns
CREATE TABLE scopes AS
SELECT (c || CASE WHEN i % 7 = 0 THEN '' ELSE '/' || a || CASE WHEN i % 3 = 0 THEN '/s' || (i % 11) ELSE '' END END)::scope AS s, i
FROM generate_series(1, 20000) i,
     LATERAL (SELECT (ARRAY['acme','acme-x','acme0','globex','a'])[1 + i % 5] AS c,
                     (ARRAY['platform','finance','platform-2','p'])[1 + (i / 5) % 4] AS a) x;
CREATE INDEX scopes_s ON scopes (s);
CREATE INDEX scopes_s_hash ON scopes USING hash (s);
ANALYZE scopes;

EXPLAIN (COSTS OFF) SELECT count(*) FROM scopes WHERE s <@ 'acme/platform';
EXPLAIN (COSTS OFF) SELECT count(*) FROM scopes WHERE 'acme' @> s;
EXPLAIN (COSTS OFF) SELECT count(*) FROM scopes WHERE s = 'acme/p';

CREATE TEMP TABLE q (q scope);
INSERT INTO q VALUES ('*'), ('acme'), ('acme/platform'), ('acme/p'), ('acme-x'), ('a'), ('acme0/finance/s3'), ('zzz');

CREATE TEMP TABLE by_index AS
SELECT q, (SELECT count(*) FROM scopes WHERE s <@ q.q) AS within,
          (SELECT count(*) FROM scopes WHERE q.q @> s) AS reached,
          (SELECT count(*) FROM scopes WHERE s = q.q) AS equal
FROM q;
SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
CREATE TEMP TABLE by_seqscan AS
SELECT q, (SELECT count(*) FROM scopes WHERE s <@ q.q) AS within,
          (SELECT count(*) FROM scopes WHERE q.q @> s) AS reached,
          (SELECT count(*) FROM scopes WHERE s = q.q) AS equal
FROM q;
RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan;
SELECT * FROM by_seqscan ORDER BY q;
SELECT count(*) AS disagreements FROM by_index i FULL JOIN by_seqscan s USING (q)
WHERE i.within IS DISTINCT FROM s.within OR i.reached IS DISTINCT FROM s.reached
   OR i.equal IS DISTINCT FROM s.equal;

-- the same with literals, where the planner support applies, for each query
SELECT q.q, (SELECT array_agg(i ORDER BY i) FROM scopes WHERE s <@ q.q) IS NOT DISTINCT FROM
            (SELECT array_agg(i ORDER BY i) FROM scopes WHERE scope_contained(s, q.q) AND i > 0) AS same_rows
FROM q ORDER BY q;
DO $$
DECLARE
  lit text; idx bigint; seq bigint;
BEGIN
  FOR lit IN SELECT q::text FROM q LOOP
    EXECUTE format('SELECT count(*) FROM scopes WHERE s <@ %L', lit) INTO idx;
    SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;
    EXECUTE format('SELECT count(*) FROM scopes WHERE s <@ %L', lit) INTO seq;
    RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan;
    IF idx <> seq THEN RAISE EXCEPTION 'index and seqscan disagree for %: % vs %', lit, idx, seq; END IF;
  END LOOP;
  RAISE NOTICE 'literal subtree queries agree';
END $$;

-- btree range scans over the order
SELECT count(*) FROM scopes WHERE s >= 'acme' AND s < 'acme-x';
SELECT s FROM scopes ORDER BY s LIMIT 1;
SELECT s FROM scopes ORDER BY s DESC LIMIT 1;

-- generic plans (a parameter, not a literal) are correct too
PREPARE sub(scope) AS SELECT count(*) FROM scopes WHERE s <@ $1;
SET plan_cache_mode = force_generic_plan;
EXECUTE sub('acme');
EXECUTE sub('*');
RESET plan_cache_mode;
DEALLOCATE sub;
DROP TABLE scopes;

-- damaged datums (here: bytes relabelled as scope) are refused with XX001, never a crash
CREATE CAST (bytea AS scope) WITHOUT FUNCTION;
\set VERBOSITY verbose
SELECT '\x0961636d65'::bytea::scope;
\set VERBOSITY default
SELECT ''::bytea::scope;
SELECT '\x0961636d65'::bytea::scope @> 'acme';
SELECT '\x0161636d65'::bytea::scope AS version_1_is_fine;
DROP CAST (bytea AS scope);
