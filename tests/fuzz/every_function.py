#!/usr/bin/env python3
"""Every function of the extension, called as three roles under odd session settings.

The extension reads some settings (application_name, Citus' settings, pg_labels.* ones) and
runs statements whose text must not depend on others (DateStyle, TimeZone, IntervalStyle,
search_path, standard_conforming_strings). Here every function of the extension (found in the
catalog, so a new one is called too) is called, each in a transaction rolled back, with NULLs,
edge values and ordinary ones for its arguments, by an ordinary role with USAGE on the schema
only, by the platform's writer and by a superuser, under each of a few sets of settings in which
every placeholder the extension reads holds an odd value. Nothing may come back that a client
should never see:

- SQLSTATE XX000 (an internal error) or a crash;
- a Rust source location, a backtrace, a panic or pgrx's name, in any field of any message.

Usage: every_function.py DATABASE (PGHOST, PGPORT of the cluster; psql from PGBIN or PATH). The
database holds the extension and the workload of tests/workload (roles dump_*, regress_fuzz).
"""
import itertools
import os
import re
import subprocess
import sys

db = sys.argv[1]
psql = os.path.join(os.environ["PGBIN"], "psql") if os.environ.get("PGBIN") else "psql"


def query(sql):
    out = subprocess.run([psql, "-X", "-At", "-d", db, "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


# The values tried per argument type; the first is the ordinary one used while another
# argument varies.
RUN = "'e0000000-0000-0000-0000-000000000001'"
VALUES = {
    "uuid": [RUN, "NULL", "'00000000-0000-0000-0000-000000000000'"],
    "text": ["'d.read'", "NULL", "''", "'x'' ; SELECT 1; --'", "repeat('é', 5000)"],
    "bigint": ["1", "NULL", "0", "-1", "9223372036854775807"],
    "integer": ["1", "NULL", "0", "-2147483648"],
    "smallint": ["1", "NULL", "-1"],
    "boolean": ["true", "NULL", "false"],
    "scope": ["'acme/ops'", "NULL", "'*'", "'globex'"],
    "labelset": ["'{origin:slack,area:acme/finance}'", "NULL", "'{}'", "'{installation,tag:x}'"],
    "jsonb": ["'{\"x\": 1}'", "NULL", "'[]'", "'\"s\"'", "'{\"steps\": [{\"id\": \"a\", \"tool\": \"d.read\", \"inputs\": [\"source:slack\"]}]}'"],
    "timestamp with time zone": ["now() - interval '1 year'", "NULL", "'infinity'", "'-infinity'", "now()"],
    "regclass": ["'pg_labels.steps'", "NULL", "'pg_catalog.pg_class'", "4294967295::oid"],
    "oid": ["'pg_labels.steps'::regclass::oid", "NULL", "0", "4294967295"],
    "name": ["'dump_platform'", "NULL", "''"],
    "bytea": ["'\\xdeadbeef'", "NULL", "''"],
    "text[]": ["'{area:acme/ops}'", "NULL", "'{}'", "'{\"\"}'"],
    "cstring": ["'acme'", "NULL", "''"],
}

# Sets of settings: every placeholder the extension reads, and the ones its statements'
# text must not depend on, at odd values.
SETTINGS = [
    [],
    ["SET application_name = 'citus_internal gpid=1'", "SET citus.propagate_set_commands = 'local'",
     "SET citus.enable_unsafe_triggers = 'on'", "SET pg_labels.carried_scope = '*'",
     "SET pg_labels.scope = '*'", "SET DateStyle = 'SQL, MDY'", "SET TimeZone = '<''::D)-->3'",
     "SET IntervalStyle = 'sql_standard'", "SET search_path = pg_temp, public, pg_catalog"],
    ["SET application_name = 'citus_internal gpid=x'", "SET citus.propagate_set_commands = ''",
     "SET pg_labels.carried_scope = 'ACME//'", "SET row_security = off",
     "SET standard_conforming_strings = off", "SET DateStyle = 'Postgres, DMY'",
     "SET TimeZone = 'Pacific/Chatham'", "SET extra_float_digits = 3", "SET bytea_output = escape",
     "SET client_min_messages = debug5"],
]

ROLES = ["regress_fuzz", "dump_platform", "postgres"]

functions = query("""
    SELECT p.oid::regprocedure, p.prokind, p.proretset,
           coalesce(array_to_string(array(SELECT format_type(t, NULL)
                                            FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, i)
                                           ORDER BY i), ','), '')
      FROM pg_proc p
      JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
      JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_labels'
     WHERE NOT ('internal'::regtype = ANY (p.proargtypes::oid[]))
     ORDER BY 1""")


def calls(fn, kind, types):
    name = fn[: fn.index("(")]
    typed = [VALUES.get(t, ["NULL"]) for t in types]
    tuples = [[v[0] for v in typed]]
    for i, values in enumerate(typed):
        for v in values[1:]:
            t = [v0[0] for v0 in typed]
            t[i] = v
            tuples.append(t)
    for t in tuples:
        args = ", ".join(f"{v}::{ty}" if v != "NULL" else f"NULL::{ty}" for v, ty in zip(t, types))
        if kind == "a":
            yield f"SELECT {name}(a) FROM (VALUES ({args})) v (a);"
        else:
            yield f"SELECT * FROM {name}({args});"


script = ["\\set VERBOSITY verbose", "\\set ON_ERROR_STOP 0", "SET statement_timeout = '5s';"]
n = 0
for role, settings in itertools.product(ROLES, SETTINGS):
    script.append(f"\\c - {role}")
    script.append("SET statement_timeout = '5s';")
    script.extend(s + ";" for s in settings)
    for fn, kind, _retset, types in functions:
        for call in calls(fn, kind, [t for t in types.split(",") if t]):
            script.append("BEGIN;")
            script.append(call)
            script.append("ROLLBACK;")
            n += 1
run = subprocess.run([psql, "-X", "-d", db], input="\n".join(script) + "\n",
                     capture_output=True, text=True, errors="replace")
output = run.stdout + run.stderr
if os.environ.get("EVERY_FUNCTION_OUT"):
    with open(os.environ["EVERY_FUNCTION_OUT"], "w", encoding="utf-8") as f:
        f.write(output)

FORBIDDEN = [
    (re.compile(r"ERROR:  XX000"), "an internal error (XX000)"),
    (re.compile(r"\.rs:\d"), "a Rust source location"),
    (re.compile(r"panicked|backtrace|stack backtrace|pgrx", re.I), "a panic, a backtrace or pgrx"),
    (re.compile(r"^\s+\d+: \S+::", re.M), "a backtrace frame"),
    (re.compile(r"server closed the connection|terminated by signal|connection to server .* lost"), "a crash"),
]
bad = []
for pattern, what in FORBIDDEN:
    for m in pattern.finditer(output):
        start = output.rfind("\n", 0, max(0, m.start() - 400))
        bad.append(f"{what}:\n{output[start:m.end() + 200]}")
errors = output.count("ERROR:  ")
print(f"every function: {len(functions)} functions, {n} calls as {len(ROLES)} roles under "
      f"{len(SETTINGS)} sets of settings; {errors} errors, none internal" if not bad else "")
if bad:
    print("\n\n".join(bad[:10]))
    print(f"every function: {len(bad)} findings")
    sys.exit(1)
