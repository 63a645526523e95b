#!/usr/bin/env bash
# The MCP gateway's overhead (issues 36, 50): the latency pg-labels-mcp adds to an allowed call,
# against calling the upstream directly. The upstream is server-everything over stdio (pinned in
# tests/mcp/package-lock.json); its `echo` tool, catalogued `read` (its annotations), is called
# MCP_BENCH_CALLS times (1,000) each way with the official MCP Python client over stdio, one
# call at a time, the two ways alternating call by call (after MCP_BENCH_WARMUP, 50, of each),
# so that both see the same machine. Through the gateway each allowed call is two transactions:
# the gate and the call's `tool_called` step together, committed before the upstream runs, and
# the `tool_result` step, committed before the client reads the result.
# Printed: p50, p90, p99 and mean of each way, and the gateway's added latency at p50 and p99
# (the difference of the two ways' percentiles); and the commits per allowed call, counted in
# the WAL (pg_walinspect: the COMMIT records written while the measured calls ran, divided by
# the calls; nothing else writes meanwhile but the server's own work, such as autovacuum, which
# the count would include). Twice: with the server's durable commits (each commit waits for its
# WAL flush), and with the gateway's sessions at synchronous_commit = off (PGOPTIONS), which
# shows what the gateway itself costs.
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with pg_labels installed, and
# PGBIN (psql); makes the database labels_mcp_bench there and drops it at the end (without
# pg_walinspect, a contrib module of PostgreSQL 15 and later, the commits are not counted). The
# environment (venv, npm ci) is tests/mcp/run.sh's (--prepare).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
: "${PGHOST:?}" "${PGPORT:?}" "${PGUSER:?}" "${PGBIN:?}"
eval "$(tests/mcp/run.sh --prepare | grep -E '^MCP_(VENV|SERVERS)=')"

db=labels_mcp_bench
admin() { PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
admin -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'admin -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
# the gateway's role as docs/mcp.md grants it (exactly its scope); the catalog written as PGUSER
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
CREATE EXTENSION pg_labels;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'labels_mcp_bench') THEN
        CREATE ROLE labels_mcp_bench LOGIN;
    END IF;
END $$;
GRANT USAGE ON SCHEMA pg_labels TO labels_mcp_bench;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts,
      pg_labels.shares, pg_labels.agent_versions TO labels_mcp_bench;
GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.approval_points,
      pg_labels.tool_namespaces, pg_labels.approval_requests TO labels_mcp_bench;
INSERT INTO pg_labels.grants (role, scope) VALUES ('labels_mcp_bench', 'acme/platform');
SQL
# the DBA gives the gateway (named by its agent, bench) its upstream's namespace, written by the
# catalog role (PGUSER)
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -v catalog="$PGUSER" <<'SQL'
INSERT INTO pg_labels.tool_namespaces (namespace, owner, role) VALUES ('everything', 'bench', :'catalog');
SQL
# the WAL's records, to count the commits (dropped with the database)
"$PGBIN/psql" -X -q -d "$db" -c "CREATE EXTENSION pg_walinspect" >/dev/null 2>&1 ||
    echo "pg_walinspect is not available: the commits are not counted" >&2

work=$(mktemp -d /tmp/labels_mcp_bench.XXXXXX)
trap 'rm -rf "$work"; admin -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
cat > "$work/gateway.toml" <<EOF
agent = "bench"
scope = "acme/platform"
[upstreams.everything]
command = "$MCP_SERVERS/mcp-server-everything"
trust_annotations = true
EOF

DSN="host=$PGHOST port=$PGPORT user=labels_mcp_bench dbname=$db" \
CATALOG_DSN="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$db" CONFIG=$work/gateway.toml \
SERVERS=$MCP_SERVERS GATEWAY=${MCP_BENCH_GATEWAY:-$MCP_VENV/bin/pg-labels-mcp} \
CALLS=${MCP_BENCH_CALLS:-1000} WARMUP=${MCP_BENCH_WARMUP:-50} \
"$MCP_VENV/bin/python" - <<'PY'
import contextlib
import os
import statistics
import time

import anyio
import psycopg
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

calls, warmup = int(os.environ["CALLS"]), int(os.environ["WARMUP"])
direct = StdioServerParameters(command=os.environ["SERVERS"] + "/mcp-server-everything")
gateway = StdioServerParameters(
    command=os.environ["GATEWAY"],
    args=[
        "--database",
        os.environ["DSN"],
        "--catalog-database",
        os.environ["CATALOG_DSN"],
        "--config",
        os.environ["CONFIG"],
    ],
)
relaxed = gateway.model_copy(update={"env": {"PGOPTIONS": "-c synchronous_commit=off"}})


@contextlib.asynccontextmanager
async def connect(params):
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            yield s


# the WAL's COMMIT records between two positions (None without pg_walinspect)
COMMITS = (
    "SELECT count(*) FROM pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn) "
    "WHERE resource_manager = 'Transaction' AND record_type = 'COMMIT'"
)


def wal_position(admin):
    return admin.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]


def commits(admin, start, end):
    if admin.execute("SELECT FROM pg_extension WHERE extname = 'pg_walinspect'").fetchone() is None:
        return None
    return admin.execute(COMMITS, [start, end]).fetchone()[0]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


async def measure(title, gateway):
    times = {"direct": [], "gateway": []}
    admin = psycopg.connect(os.environ["CATALOG_DSN"], autocommit=True)
    async with connect(direct) as d, connect(gateway) as g:
        ways = {"direct": (d, "echo"), "gateway": (g, "everything.echo")}
        for i in range(warmup + calls):
            if i == warmup:
                wal_start = wal_position(admin)
            for way, (session, tool) in ways.items():
                start = time.perf_counter()
                result = await session.call_tool(tool, {"message": f"m{i}"})
                elapsed = time.perf_counter() - start
                assert not result.is_error, result
                if i >= warmup:
                    times[way].append(elapsed * 1000)
        wal_end = wal_position(admin)
    # pg_walinspect reads no further than what is flushed: a relaxed run's last commits may not
    # be yet, nor a transaction's that wrote nothing but its commit (PostgreSQL commits that one
    # asynchronously); wait for the WAL writer
    for _ in range(200):
        if admin.execute(
            "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", [wal_end]
        ).fetchone()[0]:
            break
        time.sleep(0.05)
    counted = commits(admin, wal_start, wal_end)
    admin.close()
    print(f"{title}: {calls} calls of server-everything's echo each way ({warmup} warm-up), ms:")
    print(f"{'':8} {'p50':>7} {'p90':>7} {'p99':>7} {'mean':>7}")
    for way, xs in times.items():
        print(
            f"{way:8} {pct(xs, 50):7.3f} {pct(xs, 90):7.3f} {pct(xs, 99):7.3f} "
            f"{statistics.fmean(xs):7.3f}"
        )
    for p in (50, 99):
        added = pct(times["gateway"], p) - pct(times["direct"], p)
        print(f"added by the gateway at p{p}: {added:.3f} ms")
    if counted is not None:
        print(
            f"commits per allowed call: {counted / calls:.3f} ({counted} COMMIT records in the "
            f"WAL during the {calls} measured calls)"
        )


async def main():
    await measure("durable commits", gateway)
    print()
    await measure("synchronous_commit = off", relaxed)


anyio.run(main)
PY
steps=$("$PGBIN/psql" -X -qtA -d "$db" -c "SELECT count(*) FROM pg_labels.steps WHERE kind = 'tool_called'")
echo "tool_called steps written through the gateway: $steps"
