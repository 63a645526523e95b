-- labelset: literals, the label grammar, set operators, the barrier operator, functions,
-- casts, binary I/O, btree and hash opclasses, the labelset_union aggregate.
\pset null '(null)'

SELECT opc.opcname, am.amname, amvalidate(opc.oid)
FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
WHERE opc.opcintype = 'labelset'::regtype ORDER BY 2;

-- canonical text: sorted, no duplicates, no spaces; input takes any order and whitespace
SELECT '{}'::labelset, ' { } '::labelset, '{installation}'::labelset;
SELECT '{ tag:pii , origin:slack,area:acme/platform,  tag:pii,company:acme }'::labelset;
SELECT E'{\n  origin:webhook,\n  origin:slack/T01/C02\n}'::labelset;
SELECT '{"origin:event", tag:x}'::labelset;
SELECT '{origin:tool,origin:webhook/api.github.com,area:acme/platform/infra}'::labelset;
-- canonical order is namespace, then segment by segment (a scope before its sub-scopes)
SELECT '{area:acme-x/a,area:acme/platform/infra,area:acme/platform}'::labelset;

-- malformed literals: 22P02 naming the problem and its position
\set VERBOSITY verbose
SELECT 'origin:slack'::labelset;
\set VERBOSITY default
SELECT ''::labelset;
SELECT '{'::labelset;
SELECT '{tag:a'::labelset;
SELECT '}'::labelset;
SELECT '{tag:a}}'::labelset;
SELECT '{{tag:a}}'::labelset;
SELECT '{tag:a} x'::labelset;
SELECT '{,}'::labelset;
SELECT '{tag:a,,tag:b}'::labelset;
SELECT '{tag:a,}'::labelset;
SELECT '{,tag:a}'::labelset;
SELECT '{""}'::labelset;
SELECT '{"tag:a}'::labelset;
SELECT '{tag:a tag:b}'::labelset;
SELECT '{secret:x}'::labelset;
SELECT '{acme}'::labelset;
SELECT '{Company:acme}'::labelset;
SELECT '{company:}'::labelset;
SELECT '{company:acme/platform}'::labelset;
SELECT '{company:Acme}'::labelset;
SELECT '{area:acme}'::labelset;
SELECT '{area:acme//x}'::labelset;
SELECT '{area:/acme/x}'::labelset;
SELECT '{area:acme/x/}'::labelset;
SELECT '{area:acme/platform infra}'::labelset;
SELECT '{origin:}'::labelset;
SELECT '{origin:email}'::labelset;
SELECT '{origin:Slack}'::labelset;
SELECT '{origin:slack/}'::labelset;
SELECT '{origin:slack/T 01}'::labelset;
SELECT '{origin: slack}'::labelset;
SELECT '{tag:}'::labelset;
SELECT '{tag:PII}'::labelset;
SELECT '{tag:a/b}'::labelset;
SELECT '{installation:x}'::labelset;
SELECT '{installations}'::labelset;
SELECT format('{area:acme/%s}', repeat('x', 64))::labelset;
SELECT format('{area:%s}', array_to_string(array_fill('a'::text, ARRAY[17]), '/'))::labelset;
SELECT 'acme'::labelset;
SELECT labelset(E'{tag:a,\ttag:b}');

-- the barrier operator: the seed's table
SELECT data, run_scope, run_scope @> data AS allowed, data <@ run_scope AS within
FROM (VALUES ('{area:acme/platform}'::labelset, 'acme/platform'::scope),
             ('{area:acme/platform}', 'acme'),
             ('{area:acme/platform}', 'acme/finance'),
             ('{area:acme/platform}', 'globex/platform')) v(data, run_scope);
-- every scope label must be reached; origin and tag labels never block
SELECT 'acme'::scope @> '{area:acme/x,company:acme,origin:slack,tag:pii}'::labelset AS all_in_acme,
       'acme/x'::scope @> '{area:acme/x,company:acme}'::labelset AS company_data_in_area,
       'globex'::scope @> '{origin:slack,tag:pii}'::labelset AS no_scope_labels,
       'acme'::scope @> '{}'::labelset AS empty_set,
       'acme'::scope @> '{installation}'::labelset AS installation_data,
       '*'::scope @> '{installation,area:acme/x,company:globex}'::labelset AS root;
-- an untyped literal next to an operator takes the other side's type: the hint says so
SELECT 'acme'::scope @> '{area:acme/x}';
SELECT '{area:acme/x}'::labelset <@ 'acme';
SELECT '{area:acme/x}'::labelset <@ 'acme'::scope;

-- set operators
SELECT '{tag:a,tag:b}'::labelset @> '{tag:a}' AS superset,
       '{tag:a}'::labelset @> '{tag:a,tag:b}' AS not_superset,
       '{tag:a}'::labelset <@ '{tag:a,tag:b}' AS subset,
       '{}'::labelset <@ '{tag:a}' AS empty_subset,
       '{tag:a,tag:c}'::labelset && '{tag:b,tag:c}' AS overlap,
       '{tag:a}'::labelset && '{tag:b}' AS disjoint,
       '{}'::labelset && '{}' AS empty_overlap,
       '{tag:b,tag:a}'::labelset = '{tag:a, tag:b, tag:a}' AS equal,
       '{tag:a}'::labelset <> '{tag:b}' AS not_equal;
SELECT '{tag:a,origin:slack}'::labelset ? 'origin:slack' AS has,
       '{tag:a}'::labelset ? 'origin:slack' AS has_not,
       '{tag:a}'::labelset ? 'Not a label' AS not_a_label,
       '{area:acme/x}'::labelset ? 'area:acme/x/' AS malformed;
SELECT '{tag:a,origin:slack}'::labelset || '{tag:b,origin:slack}' AS union_,
       '{}'::labelset || '{tag:a}' AS with_empty,
       '{tag:a}'::labelset || '{}' AS empty_right;

-- functions
SELECT labelset_scope('{area:acme/platform,area:acme/finance,origin:slack}'),
       labelset_scope('{area:acme/platform/infra,area:acme/platform}'),
       labelset_scope('{area:acme/x,company:globex}'),
       labelset_scope('{installation,area:acme/x}'),
       labelset_scope('{origin:slack,tag:pii}'),
       labelset_scope('{}');
SELECT labelset_escaping('{area:acme/platform,area:acme/finance,company:acme,origin:slack}', 'acme/platform'),
       labelset_escaping('{area:acme/platform}', 'acme'),
       labelset_escaping('{installation}', 'acme');
SELECT labelset_origins('{area:acme/x,origin:slack/T01,origin:webhook,tag:pii}'),
       labelset_is_trusted('{area:acme/x,tag:pii}'), labelset_is_trusted('{origin:event}'),
       labelset_count('{area:acme/x,tag:pii,tag:pii}'), labelset_count('{}');
SELECT * FROM labelset_labels('{tag:pii,origin:slack,area:acme/platform}');
SELECT labelset('acme/platform'::scope), labelset('acme'::scope), labelset('*'::scope);

-- casts: text, text[], jsonb
SELECT '{tag:a}'::text::labelset, '{tag:b,tag:a}'::labelset::text;
SELECT ARRAY['tag:b', 'origin:slack', 'tag:b']::labelset, '{tag:b,origin:slack}'::labelset::text[],
       '{}'::labelset::text[], '{}'::text[]::labelset;
SELECT ARRAY['tag:a', NULL]::labelset;
SELECT ARRAY['tag:a', 'bogus']::labelset;
SELECT '["tag:b", "origin:webhook", "tag:b"]'::jsonb::labelset, '{tag:b,origin:webhook}'::labelset::jsonb,
       '[]'::jsonb::labelset, '{}'::labelset::jsonb;
SELECT '{"tag": "a"}'::jsonb::labelset;
SELECT '["tag:a", 1]'::jsonb::labelset;
SELECT '["tag:a", null]'::jsonb::labelset;
SELECT '"tag:a"'::jsonb::labelset;
SELECT '["company:"]'::jsonb::labelset;
CREATE TEMP TABLE lt (l labelset);
INSERT INTO lt VALUES ('{tag:a}'), (ARRAY['origin:slack']), ('{area:acme/x,tag:pii}'::text);
SELECT l FROM lt ORDER BY l;

-- the order: element by element, a set before its extensions
SELECT l FROM unnest('{"{tag:b}","{}","{area:acme/x}","{tag:a,tag:b}","{tag:a}","{area:acme/x,tag:a}","{company:acme}"}'::labelset[]) l
ORDER BY l;
SELECT '{tag:a}'::labelset < '{tag:a,tag:b}', '{tag:a,tag:b}'::labelset < '{tag:b}',
       '{}'::labelset < '{tag:a}', '{tag:b}'::labelset >= '{tag:a,tag:z}';

-- binary I/O
\getenv scratch PG_LABELS_SCRATCH
\set ls_file :scratch '/labelset.bin'
COPY lt TO :'ls_file' WITH (FORMAT binary);
CREATE TEMP TABLE lt2 (l labelset);
COPY lt2 FROM :'ls_file' WITH (FORMAT binary);
SELECT count(*) AS same FROM lt JOIN lt2 USING (l);
SELECT labelset_send('{tag:a,origin:slack}');
\set bad_file :scratch '/labelset_bad.bin'
COPY (SELECT '\x037b7d'::bytea) TO :'bad_file' WITH (FORMAT binary);
COPY lt2 FROM :'bad_file' WITH (FORMAT binary);
COPY (SELECT '\x017b7461673a417d'::bytea) TO :'bad_file' WITH (FORMAT binary);
COPY lt2 FROM :'bad_file' WITH (FORMAT binary);

-- hashing, grouping, DISTINCT
SELECT labelset_hash('{tag:a,tag:b}') = labelset_hash('{tag:b,tag:a}') AS hash_canonical,
       labelset_hash_extended('{tag:a}', 7) = labelset_hash_extended('{tag:a}'::text::labelset, 7) AS ext_stable;
SET enable_sort = off;
SELECT l, count(*) FROM (VALUES ('{tag:a,tag:b}'::labelset), ('{tag:b,tag:a}'), ('{tag:a}')) v(l) GROUP BY l ORDER BY l;
RESET enable_sort;
SELECT DISTINCT l FROM (VALUES ('{tag:a,tag:b}'::labelset), ('{tag:b, tag:a}'), ('{}')) v(l) ORDER BY l;

-- labelset_union: the union of all rows, NULL with no rows, serial and parallel alike
SELECT labelset_union(l) FROM (VALUES ('{tag:a}'::labelset), (NULL), ('{origin:slack}'), ('{tag:a}')) v(l);
SELECT labelset_union(l) IS NULL AS no_rows FROM lt WHERE false;
CREATE TABLE agg AS
SELECT i, labelset(ARRAY['tag:t' || (i % 37), 'area:acme/a' || (i % 5)]) AS l FROM generate_series(1, 50000) i;
ANALYZE agg;
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT labelset_union(l) FROM agg;
SELECT labelset_union(l) AS parallel_union FROM agg \gset
RESET parallel_setup_cost; RESET parallel_tuple_cost; RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
SELECT labelset_union(l) AS serial_union FROM agg \gset
RESET max_parallel_workers_per_gather;
SELECT :'parallel_union'::labelset = :'serial_union'::labelset AS same,
       labelset_count(:'serial_union') AS labels;
SELECT i % 3 AS g, labelset_count(labelset_union(l)) FROM agg GROUP BY 1 ORDER BY 1;
DROP TABLE agg;

-- damaged datums (here: bytes relabelled as labelset) are refused with XX001, never a crash
CREATE CAST (bytea AS labelset) WITHOUT FUNCTION;
\set VERBOSITY verbose
SELECT '\x02'::bytea::labelset;
\set VERBOSITY default
SELECT ''::bytea::labelset;
SELECT '\x017461'::bytea::labelset;
SELECT '\x01746100'::bytea::labelset AS version_1_is_fine;
SELECT '\x01746100'::bytea::labelset @> '\x017400'::bytea::labelset;
DROP CAST (bytea AS labelset);
