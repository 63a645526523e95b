-- The catalog describes itself: every operator, function, type, cast, operator class and
-- family, table, view and column a user sees has a comment, and every function's volatility,
-- parallel safety, strictness and leakproofness are what it does.
\pset format unaligned
\pset fieldsep ' | '

-- the extension's objects: none without a comment (array types and partitions' columns aside:
-- PostgreSQL makes the one, the other are the table's)
CREATE TEMP VIEW members AS
SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
 WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'pg_labels' AND d.deptype = 'e';
SELECT pg_describe_object(m.classid, m.objid, 0) AS "without a comment" FROM members m
 WHERE m.classid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass, 'pg_class'::regclass,
                     'pg_opclass'::regclass, 'pg_opfamily'::regclass, 'pg_cast'::regclass,
                     'pg_namespace'::regclass, 'pg_event_trigger'::regclass)
   AND obj_description(m.objid, (SELECT relname FROM pg_class WHERE oid = m.classid)) IS NULL
   AND NOT (m.classid = 'pg_type'::regclass
            AND EXISTS (SELECT FROM pg_type t WHERE t.oid = m.objid AND (t.typelem <> 0 AND t.typlen = -1 OR t.typrelid <> 0)))
   AND NOT (m.classid = 'pg_class'::regclass
            AND EXISTS (SELECT FROM pg_class c WHERE c.oid = m.objid AND c.relkind IN ('S', 'i')))
UNION ALL
SELECT format('column %s.%s', a.attrelid::regclass, a.attname) FROM members m
  JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid AND c.relkind IN ('r', 'p', 'v')
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE col_description(c.oid, a.attnum) IS NULL AND NOT c.relispartition
ORDER BY 1;

-- every function: volatility (i, s, v), parallel (s, r, u), strict, leakproof, security
-- definer, settings. Reviewed here; the rules below hold whatever is added.
SELECT p.oid::regprocedure AS function, p.provolatile AS vol, p.proparallel AS par,
       p.proisstrict AS strict, p.proleakproof AS leakproof, p.prosecdef AS definer,
       coalesce(array_to_string(p.proconfig, ','), '') AS settings
  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
 ORDER BY p.pronamespace::regnamespace::text, p.proname, p.oid::regprocedure::text;

-- what a function of the types does depends on its arguments only: immutable, parallel safe
-- and strict (the aggregate aside: its state function is)
SELECT p.oid::regprocedure AS "types function not immutable, safe and strict"
  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
 WHERE p.pronamespace <> 'pg_labels'::regnamespace AND p.prokind = 'f'
   AND NOT (p.provolatile = 'i' AND p.proparallel = 's' AND p.proisstrict);
-- the functions behind comparison and containment operators are leakproof (row-level security
-- may then push a user's condition below its policy and use an index); no other is
SELECT p.oid::regprocedure AS "leakproof mismatch", p.proleakproof
  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
 WHERE p.proleakproof <> (EXISTS (SELECT FROM pg_operator o WHERE o.oprcode = p.oid AND o.oprname <> '||')
                          OR EXISTS (SELECT FROM pg_amproc a WHERE a.amproc = p.oid AND p.proname ~ '_(cmp|hash|hash_extended)$'));
-- what reads or changes the session's entered scope is never immutable, and never runs in a
-- parallel worker (which has no entered scope)
SELECT p.oid::regprocedure AS "session function marked wrong"
  FROM pg_proc p
 WHERE p.pronamespace = 'pg_labels'::regnamespace
   AND p.proname IN ('enter_scope', 'leave_scope', 'current_scope', 'visible')
   AND (p.provolatile = 'i' OR p.proparallel = 's');
-- what writes is volatile and parallel unsafe
SELECT p.oid::regprocedure AS "writer marked wrong"
  FROM pg_proc p
 WHERE p.pronamespace = 'pg_labels'::regnamespace
   AND p.proname IN ('gate', 'request_approval', 'decide_approval', 'authorize_crossing', 'revoke_crossing',
                     'purge', 'protect', 'enter_scope', 'leave_scope')
   AND (p.provolatile <> 'v' OR p.proparallel <> 'u');
