-- pg_labels: the types scope and labelset, grouped by kind: types, I/O, casts, functions,
-- operators, operator classes, aggregates. Every C function is bound to a symbol of the same
-- name prefixed pgl_ (src/scope.rs, src/labelset.rs, src/labelset_gin.rs).

--------------------------------------------------------------------------------------------
-- Types
--------------------------------------------------------------------------------------------

CREATE TYPE scope;
CREATE TYPE labelset;

CREATE FUNCTION scope_in(cstring) RETURNS scope
    AS 'MODULE_PATHNAME', 'pgl_scope_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_out(scope) RETURNS cstring
    AS 'MODULE_PATHNAME', 'pgl_scope_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_recv(internal) RETURNS scope
    AS 'MODULE_PATHNAME', 'pgl_scope_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_send(scope) RETURNS bytea
    AS 'MODULE_PATHNAME', 'pgl_scope_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION scope_in(cstring) IS 'Input of scope: *, acme, acme/ops (22P02 on anything else)';
COMMENT ON FUNCTION scope_out(scope) IS 'Output of scope';
COMMENT ON FUNCTION scope_recv(internal) IS 'Binary input of scope: version byte 1, then the text form (22P03 otherwise)';
COMMENT ON FUNCTION scope_send(scope) IS 'Binary output of scope: version byte 1, then the text form';

CREATE TYPE scope (
    INPUT = scope_in,
    OUTPUT = scope_out,
    RECEIVE = scope_recv,
    SEND = scope_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE scope IS
    'A position in the containment tree: * (the installation), a company, an area, a sub-area';

CREATE FUNCTION labelset_in(cstring) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_out(labelset) RETURNS cstring
    AS 'MODULE_PATHNAME', 'pgl_labelset_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_recv(internal) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_send(labelset) RETURNS bytea
    AS 'MODULE_PATHNAME', 'pgl_labelset_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION labelset_in(cstring) IS 'Input of labelset: {area:acme/ops,origin:slack/T1,tag:pii} (22P02 on anything else)';
COMMENT ON FUNCTION labelset_out(labelset) IS 'Output of labelset: its labels in canonical order';
COMMENT ON FUNCTION labelset_recv(internal) IS 'Binary input of labelset: version byte 1, then the text form (22P03 otherwise)';
COMMENT ON FUNCTION labelset_send(labelset) IS 'Binary output of labelset: version byte 1, then the text form';

CREATE TYPE labelset (
    INPUT = labelset_in,
    OUTPUT = labelset_out,
    RECEIVE = labelset_recv,
    SEND = labelset_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE labelset IS
    'The set of labels a piece of data carries: scope labels, origin labels and tags';

--------------------------------------------------------------------------------------------
-- Casts
--------------------------------------------------------------------------------------------

CREATE FUNCTION scope(text) RETURNS scope
    AS 'MODULE_PATHNAME', 'pgl_scope_from_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text(scope) RETURNS text
    AS 'MODULE_PATHNAME', 'pgl_scope_to_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (text AS scope) WITH FUNCTION scope(text) AS ASSIGNMENT;
CREATE CAST (scope AS text) WITH FUNCTION text(scope) AS ASSIGNMENT;

CREATE FUNCTION labelset(text) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_from_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text(labelset) RETURNS text
    AS 'MODULE_PATHNAME', 'pgl_labelset_to_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset(text[]) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_from_text_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_to_array(labelset) RETURNS text[]
    AS 'MODULE_PATHNAME', 'pgl_labelset_to_text_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset(jsonb) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_from_jsonb' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_to_jsonb(labelset) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'pgl_labelset_to_jsonb' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (text AS labelset) WITH FUNCTION labelset(text) AS ASSIGNMENT;
CREATE CAST (labelset AS text) WITH FUNCTION text(labelset) AS ASSIGNMENT;
CREATE CAST (text[] AS labelset) WITH FUNCTION labelset(text[]) AS ASSIGNMENT;
CREATE CAST (labelset AS text[]) WITH FUNCTION labelset_to_array(labelset);
CREATE CAST (jsonb AS labelset) WITH FUNCTION labelset(jsonb);
CREATE CAST (labelset AS jsonb) WITH FUNCTION labelset_to_jsonb(labelset);
COMMENT ON CAST (text AS scope) IS 'Parse a scope (assignment cast)';
COMMENT ON CAST (scope AS text) IS 'The scope''s text form (assignment cast)';
COMMENT ON CAST (text AS labelset) IS 'Parse a labelset literal (assignment cast)';
COMMENT ON CAST (labelset AS text) IS 'The labelset''s text form (assignment cast)';
COMMENT ON CAST (text[] AS labelset) IS 'The set of the labels in the array (assignment cast)';
COMMENT ON CAST (labelset AS text[]) IS 'The labels as an array, in canonical order (explicit cast)';
COMMENT ON CAST (jsonb AS labelset) IS 'The set of the labels in a JSON array of strings (explicit cast)';
COMMENT ON CAST (labelset AS jsonb) IS 'The labels as a JSON array of strings (explicit cast)';
COMMENT ON FUNCTION scope(text) IS 'Parse a scope (22P02 on a malformed one)';
COMMENT ON FUNCTION text(scope) IS 'The scope''s text form';
COMMENT ON FUNCTION labelset(text) IS 'Parse a labelset literal (22P02 on a malformed one)';
COMMENT ON FUNCTION text(labelset) IS 'The labelset''s text form, labels in canonical order';

COMMENT ON FUNCTION labelset(text[]) IS 'The set of the labels in the array (any order, duplicates allowed, no NULLs)';
COMMENT ON FUNCTION labelset(jsonb) IS 'The set of the labels in a JSON array of strings';
COMMENT ON FUNCTION labelset_to_array(labelset) IS 'The labels, in canonical order';
COMMENT ON FUNCTION labelset_to_jsonb(labelset) IS 'The labels as a JSON array of strings, in canonical order';

--------------------------------------------------------------------------------------------
-- Functions: comparison and containment (the operators' implementations)
--------------------------------------------------------------------------------------------

CREATE FUNCTION scope_eq(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_eq' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_ne(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_ne' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_lt(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_le(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_gt(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_ge(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_cmp(scope, scope) RETURNS int4
    AS 'MODULE_PATHNAME', 'pgl_scope_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_hash(scope) RETURNS int4
    AS 'MODULE_PATHNAME', 'pgl_scope_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION scope_hash_extended(scope, int8) RETURNS int8
    AS 'MODULE_PATHNAME', 'pgl_scope_hash_extended' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION scope_eq(scope, scope) IS 'a = b: the same scope';
COMMENT ON FUNCTION scope_ne(scope, scope) IS 'a <> b';
COMMENT ON FUNCTION scope_lt(scope, scope) IS 'a < b in tree order (a scope sorts right before its descendants)';
COMMENT ON FUNCTION scope_le(scope, scope) IS 'a <= b in tree order';
COMMENT ON FUNCTION scope_gt(scope, scope) IS 'a > b in tree order';
COMMENT ON FUNCTION scope_ge(scope, scope) IS 'a >= b in tree order';
COMMENT ON FUNCTION scope_cmp(scope, scope) IS 'Btree comparison of scopes (tree order)';
COMMENT ON FUNCTION scope_hash(scope) IS 'Hash of a scope (hash indexes and joins)';
COMMENT ON FUNCTION scope_hash_extended(scope, int8) IS 'Seeded 64-bit hash of a scope (hash partitioning)';

-- Planner support: reads only the planner's request and builds index conditions from it.
CREATE FUNCTION scope_contained_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'pgl_scope_contained_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_contains_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'pgl_scope_contains_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION scope_contained_support(internal) IS
    'Planner support of <@: s <@ ''acme'' becomes the btree range of acme''s subtree';
COMMENT ON FUNCTION scope_contains_support(internal) IS
    'Planner support of @>: ''acme'' @> s becomes the btree range of acme''s subtree';

CREATE FUNCTION scope_contains(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_contains' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT scope_contains_support;
CREATE FUNCTION scope_contained(scope, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_contained' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT scope_contained_support;
COMMENT ON FUNCTION scope_contains(scope, scope) IS 'a @> b: a is b or an ancestor of b';
COMMENT ON FUNCTION scope_contained(scope, scope) IS 'a <@ b: a is b or a descendant of b';

CREATE FUNCTION scope_carries(scope, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_scope_carries' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_within(labelset, scope) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_within' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION scope_carries(scope, labelset) IS
    'The barrier rule: the scope reaches the scope of every scope label of the set';
COMMENT ON FUNCTION labelset_within(labelset, scope) IS 'Commutator of scope_carries';

CREATE FUNCTION labelset_eq(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_eq' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_ne(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_ne' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_lt(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_le(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_gt(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_ge(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_cmp(labelset, labelset) RETURNS int4
    AS 'MODULE_PATHNAME', 'pgl_labelset_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_hash(labelset) RETURNS int4
    AS 'MODULE_PATHNAME', 'pgl_labelset_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_hash_extended(labelset, int8) RETURNS int8
    AS 'MODULE_PATHNAME', 'pgl_labelset_hash_extended' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION labelset_eq(labelset, labelset) IS 'a = b: the same labels';
COMMENT ON FUNCTION labelset_ne(labelset, labelset) IS 'a <> b';
COMMENT ON FUNCTION labelset_lt(labelset, labelset) IS 'a < b in canonical order (for sorting and btree indexes)';
COMMENT ON FUNCTION labelset_le(labelset, labelset) IS 'a <= b in canonical order';
COMMENT ON FUNCTION labelset_gt(labelset, labelset) IS 'a > b in canonical order';
COMMENT ON FUNCTION labelset_ge(labelset, labelset) IS 'a >= b in canonical order';
COMMENT ON FUNCTION labelset_cmp(labelset, labelset) IS 'Btree comparison of labelsets (canonical order)';
COMMENT ON FUNCTION labelset_hash(labelset) IS 'Hash of a labelset (hash indexes and joins)';
COMMENT ON FUNCTION labelset_hash_extended(labelset, int8) IS 'Seeded 64-bit hash of a labelset (hash partitioning)';

CREATE FUNCTION labelset_contains(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_contains' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_contained(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_contained' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_overlaps(labelset, labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_overlaps' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_has(labelset, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_has' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION labelset_union(labelset, labelset) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_union' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION labelset_has(labelset, text) IS
    'The set holds this label (a string that is not a label is never held)';
COMMENT ON FUNCTION labelset_union(labelset, labelset) IS 'a || b: the union of two sets';
COMMENT ON FUNCTION labelset_contains(labelset, labelset) IS 'a @> b: a holds every label of b';
COMMENT ON FUNCTION labelset_contained(labelset, labelset) IS 'a <@ b: b holds every label of a';
COMMENT ON FUNCTION labelset_overlaps(labelset, labelset) IS 'a && b: a label in both';

--------------------------------------------------------------------------------------------
-- Functions
--------------------------------------------------------------------------------------------

CREATE FUNCTION scope_depth(scope) RETURNS int4
    AS 'MODULE_PATHNAME', 'pgl_scope_depth' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_parent(scope) RETURNS scope
    AS 'MODULE_PATHNAME', 'pgl_scope_parent' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_lca(scope, scope) RETURNS scope
    AS 'MODULE_PATHNAME', 'pgl_scope_lca' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION scope_label(scope) RETURNS text
    AS 'MODULE_PATHNAME', 'pgl_scope_label' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION scope_depth(scope) IS 'Number of segments: 0 for *, 1 for a company, 2 for an area';
COMMENT ON FUNCTION scope_parent(scope) IS 'The enclosing scope; NULL for *';
COMMENT ON FUNCTION scope_lca(scope, scope) IS 'The deepest scope reaching both';
COMMENT ON FUNCTION scope_label(scope) IS
    'The label naming the scope''s data: installation, company:<c> or area:<c>/<a>';

CREATE FUNCTION labelset(scope) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_scope_labels' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_scope(labelset) RETURNS scope
    AS 'MODULE_PATHNAME', 'pgl_labelset_scope' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_escaping(labelset, scope) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_escaping' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_origins(labelset) RETURNS labelset
    AS 'MODULE_PATHNAME', 'pgl_labelset_origins' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_is_trusted(labelset) RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_is_trusted' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_count(labelset) RETURNS int4
    AS 'MODULE_PATHNAME', 'pgl_labelset_count' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_labels(labelset) RETURNS SETOF text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT pg_catalog.unnest(@extschema@.labelset_to_array($1)) $$;
COMMENT ON FUNCTION labelset(scope) IS 'The set holding the scope''s own label';
COMMENT ON FUNCTION labelset_scope(labelset) IS
    'The deepest scope that can carry the set (common ancestor of its scope labels); NULL when it has none';
COMMENT ON FUNCTION labelset_escaping(labelset, scope) IS 'The scope labels the scope cannot carry';
COMMENT ON FUNCTION labelset_origins(labelset) IS 'The origin labels: where untrusted data came from';
COMMENT ON FUNCTION labelset_is_trusted(labelset) IS 'No origin label';
COMMENT ON FUNCTION labelset_count(labelset) IS 'Number of labels';
COMMENT ON FUNCTION labelset_labels(labelset) IS 'One row per label, in canonical order';

--------------------------------------------------------------------------------------------
-- Operators
--------------------------------------------------------------------------------------------

CREATE OPERATOR = (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR @> (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_contains,
    COMMUTATOR = <@, RESTRICT = matchingsel, JOIN = matchingjoinsel
);
CREATE OPERATOR <@ (
    LEFTARG = scope, RIGHTARG = scope, FUNCTION = scope_contained,
    COMMUTATOR = @>, RESTRICT = matchingsel, JOIN = matchingjoinsel
);

CREATE OPERATOR @> (
    LEFTARG = scope, RIGHTARG = labelset, FUNCTION = scope_carries,
    COMMUTATOR = <@, RESTRICT = matchingsel, JOIN = matchingjoinsel
);
CREATE OPERATOR <@ (
    LEFTARG = labelset, RIGHTARG = scope, FUNCTION = labelset_within,
    COMMUTATOR = @>, RESTRICT = matchingsel, JOIN = matchingjoinsel
);

CREATE OPERATOR = (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR @> (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_contains,
    COMMUTATOR = <@, RESTRICT = matchingsel, JOIN = matchingjoinsel
);
CREATE OPERATOR <@ (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_contained,
    COMMUTATOR = @>, RESTRICT = matchingsel, JOIN = matchingjoinsel
);
CREATE OPERATOR && (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_overlaps,
    COMMUTATOR = &&, RESTRICT = matchingsel, JOIN = matchingjoinsel
);
CREATE OPERATOR ? (
    LEFTARG = labelset, RIGHTARG = text, FUNCTION = labelset_has,
    RESTRICT = matchingsel, JOIN = matchingjoinsel
);
CREATE OPERATOR || (
    LEFTARG = labelset, RIGHTARG = labelset, FUNCTION = labelset_union, COMMUTATOR = ||
);

COMMENT ON OPERATOR = (scope, scope) IS 'The same scope';
COMMENT ON OPERATOR <> (scope, scope) IS 'Not the same scope';
COMMENT ON OPERATOR < (scope, scope) IS 'Before, in tree order (a scope sorts right before its descendants)';
COMMENT ON OPERATOR <= (scope, scope) IS 'Before or equal, in tree order';
COMMENT ON OPERATOR > (scope, scope) IS 'After, in tree order';
COMMENT ON OPERATOR >= (scope, scope) IS 'After or equal, in tree order';
COMMENT ON OPERATOR @> (scope, scope) IS 'Reaches: is the right scope or an ancestor of it (* reaches everything)';
COMMENT ON OPERATOR <@ (scope, scope) IS 'Is reached by: is the right scope or a descendant of it';
COMMENT ON OPERATOR @> (scope, labelset) IS 'Carries: the barrier rule (the scope reaches every scope label of the set)';
COMMENT ON OPERATOR <@ (labelset, scope) IS 'Is carried by: the scope reaches every scope label of the set';
COMMENT ON OPERATOR = (labelset, labelset) IS 'The same labels';
COMMENT ON OPERATOR <> (labelset, labelset) IS 'Not the same labels';
COMMENT ON OPERATOR < (labelset, labelset) IS 'Before, in canonical order';
COMMENT ON OPERATOR <= (labelset, labelset) IS 'Before or equal, in canonical order';
COMMENT ON OPERATOR > (labelset, labelset) IS 'After, in canonical order';
COMMENT ON OPERATOR >= (labelset, labelset) IS 'After or equal, in canonical order';
COMMENT ON OPERATOR @> (labelset, labelset) IS 'Contains: holds every label of the right set';
COMMENT ON OPERATOR <@ (labelset, labelset) IS 'Is contained by: every label is in the right set';
COMMENT ON OPERATOR && (labelset, labelset) IS 'Overlaps: a label in both';
COMMENT ON OPERATOR ? (labelset, text) IS 'Has: holds this label';
COMMENT ON OPERATOR || (labelset, labelset) IS 'Union (labels only accumulate)';

--------------------------------------------------------------------------------------------
-- Operator classes
--------------------------------------------------------------------------------------------

-- A path sorts right before its descendants, so a subtree is one btree range; the planner
-- support of <@ and @> turns `s <@ 'acme'` into that range.
CREATE OPERATOR CLASS scope_ops DEFAULT FOR TYPE scope USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 scope_cmp(scope, scope),
    FUNCTION 4 btequalimage(oid);

CREATE OPERATOR CLASS scope_ops DEFAULT FOR TYPE scope USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 scope_hash(scope),
    FUNCTION 2 scope_hash_extended(scope, int8);
COMMENT ON OPERATOR CLASS scope_ops USING btree IS 'Tree order: a subtree is one range (used by <@ and @> through planner support)';
COMMENT ON OPERATOR FAMILY scope_ops USING btree IS 'Tree order of scopes';
COMMENT ON OPERATOR CLASS scope_ops USING hash IS 'Equality of scopes';
COMMENT ON OPERATOR FAMILY scope_ops USING hash IS 'Equality of scopes';

CREATE OPERATOR CLASS labelset_ops DEFAULT FOR TYPE labelset USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 labelset_cmp(labelset, labelset),
    FUNCTION 4 btequalimage(oid);

CREATE OPERATOR CLASS labelset_ops DEFAULT FOR TYPE labelset USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 labelset_hash(labelset),
    FUNCTION 2 labelset_hash_extended(labelset, int8);
COMMENT ON OPERATOR CLASS labelset_ops USING btree IS 'Canonical order of labelsets';
COMMENT ON OPERATOR FAMILY labelset_ops USING btree IS 'Canonical order of labelsets';
COMMENT ON OPERATOR CLASS labelset_ops USING hash IS 'Equality of labelsets';
COMMENT ON OPERATOR FAMILY labelset_ops USING hash IS 'Equality of labelsets';

CREATE FUNCTION labelset_gin_extract_value(labelset, internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'pgl_labelset_gin_extract_value' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_gin_extract_query(labelset, internal, int2, internal, internal, internal, internal)
    RETURNS internal
    AS 'MODULE_PATHNAME', 'pgl_labelset_gin_extract_query' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_gin_consistent(internal, int2, labelset, int4, internal, internal, internal, internal)
    RETURNS bool
    AS 'MODULE_PATHNAME', 'pgl_labelset_gin_consistent' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION labelset_gin_triconsistent(internal, int2, labelset, int4, internal, internal, internal)
    RETURNS "char"
    AS 'MODULE_PATHNAME', 'pgl_labelset_gin_triconsistent' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION labelset_gin_extract_value(labelset, internal, internal) IS 'GIN: the keys of a value (one per label)';
COMMENT ON FUNCTION labelset_gin_extract_query(labelset, internal, int2, internal, internal, internal, internal) IS
    'GIN: the keys of a query for &&, @>, <@, = and ?';
COMMENT ON FUNCTION labelset_gin_consistent(internal, int2, labelset, int4, internal, internal, internal, internal) IS
    'GIN: whether a row can match, from the keys it holds';
COMMENT ON FUNCTION labelset_gin_triconsistent(internal, int2, labelset, int4, internal, internal, internal) IS
    'GIN: whether a row can match, with keys that may be present';

-- One key per label, stored as bytea in the order of labels inside a labelset.
CREATE OPERATOR CLASS labelset_ops DEFAULT FOR TYPE labelset USING gin AS
    OPERATOR 1 &&,
    OPERATOR 2 @>,
    OPERATOR 3 <@,
    OPERATOR 4 =,
    OPERATOR 9 ? (labelset, text),
    FUNCTION 1 byteacmp(bytea, bytea),
    FUNCTION 2 labelset_gin_extract_value(labelset, internal, internal),
    FUNCTION 3 labelset_gin_extract_query(labelset, internal, int2, internal, internal, internal, internal),
    FUNCTION 4 labelset_gin_consistent(internal, int2, labelset, int4, internal, internal, internal, internal),
    FUNCTION 6 labelset_gin_triconsistent(internal, int2, labelset, int4, internal, internal, internal),
    STORAGE bytea;
COMMENT ON OPERATOR CLASS labelset_ops USING gin IS 'One key per label: &&, @>, <@, = and ? (labels_idx on the platform tables)';
COMMENT ON OPERATOR FAMILY labelset_ops USING gin IS 'One key per label';

--------------------------------------------------------------------------------------------
-- Aggregates
--------------------------------------------------------------------------------------------

CREATE AGGREGATE labelset_union(labelset) (
    SFUNC = labelset_union,
    STYPE = labelset,
    COMBINEFUNC = labelset_union,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE labelset_union(labelset) IS 'The union of all the sets (NULL when there are no rows)';
