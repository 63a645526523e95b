"""Grant to resumed call through the MCP gateway (issue 49): the time from an approver's
COMMIT of a grant to the held call starting upstream.

    <venv python> bench/approvals_gateway.py DBNAME

with PGHOST, PGPORT and PGUSER (a superuser) of a cluster where pg_labels is installed, and the
venv's pg_labels[mcp] (tests/mcp/run.sh --prepare). It sets up in DBNAME what it needs (the
extension, a gateway role and an approver role as docs/mcp.md grants them), starts the gateway
(pg-labels-mcp, stdio, as the official MCP client starts it) in front of an upstream of its
own (this file with --upstream: one tool whose result is the time it started), and makes
200 calls one after another (after 10 of warm-up) on a run that carries untrusted input, so
each asks: the approver, LISTENing on pg_labels_approvals, grants each new request as it is
announced, and takes the time right after its COMMIT returned; the upstream takes the time
its tool starts. Both clocks are this machine's. Prints (only this on stdout):

    RESULT gateway n=200 median_ms=X p95_ms=Y
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CALLS = int(os.environ.get("APPROVALS_BENCH_CALLS", "200"))
WARMUP = int(os.environ.get("APPROVALS_BENCH_WARMUP", "10"))
GATEWAY_ROLE = "labels_approvals_bench_gw"
APPROVER = "labels_approvals_bench_approver"
NAME = "approvals-bench"


def upstream() -> None:
    """The upstream: an MCP server over stdio whose tool ``touch`` (a reversible write by its
    annotations) answers the time.time() it started."""
    import anyio
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    tool = types.Tool(
        name="touch",
        description="Touches a record.",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        started = time.time()
        return types.CallToolResult(content=[types.TextContent(text=repr(started))])

    server: Server[Any] = Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def conninfo(dbname: str, user: str | None = None) -> str:
    parts = {
        "host": os.environ["PGHOST"],
        "port": os.environ["PGPORT"],
        "user": user or os.environ["PGUSER"],
        "dbname": dbname,
    }
    return " ".join(f"{k}={v}" for k, v in parts.items())


def setup(dbname: str) -> None:
    """The extension, the gateway's role (exactly acme/platform, docs/mcp.md's grants) and an
    approver for acme; the catalog is written as PGUSER, its namespace given to the gateway."""
    import psycopg

    with psycopg.connect(conninfo(dbname), autocommit=True) as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_labels")
        for role in (GATEWAY_ROLE, APPROVER):
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
                conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f"GRANT USAGE ON SCHEMA pg_labels TO {role}")
        conn.execute(
            "GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, "
            f"pg_labels.shares, pg_labels.agent_versions TO {GATEWAY_ROLE}"
        )
        conn.execute(
            "GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.approval_points, "
            f"pg_labels.tool_namespaces, pg_labels.approval_requests TO {GATEWAY_ROLE}"
        )
        conn.execute(
            "GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) "
            f"TO {APPROVER}"
        )
        for role, scope in ((GATEWAY_ROLE, "acme/platform"), (APPROVER, "acme")):
            conn.execute(
                "INSERT INTO pg_labels.grants (role, scope) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [role, scope],
            )
        conn.execute(
            "INSERT INTO pg_labels.tool_namespaces (namespace, owner, role) "
            "VALUES ('bench', %s, current_user) ON CONFLICT (namespace) DO UPDATE "
            "SET owner = excluded.owner, role = excluded.role",
            [NAME],
        )


async def measure(dbname: str, config: Path) -> list[float]:
    import anyio
    import psycopg
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    gateway = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "pg_labels.mcp",
            "--database",
            conninfo(dbname, GATEWAY_ROLE),
            "--catalog-database",
            conninfo(dbname),
            "--config",
            str(config),
        ],
    )
    approver = await psycopg.AsyncConnection.connect(conninfo(dbname, APPROVER), autocommit=True)
    await approver.execute("LISTEN pg_labels_approvals")
    decided: set[int] = set()
    delays: list[float] = []

    async def grant_next() -> float:
        """Grant the next request announced: the time its COMMIT returned."""
        request: int | None = None
        # (the connection runs no statement while its notifications are read)
        async for note in approver.notifies():
            if int(note.payload) not in decided:  # else a decision's own announcement
                request = int(note.payload)
                break
        if request is None:
            raise RuntimeError("the approver's connection closed")
        decided.add(request)
        await approver.execute("SELECT pg_labels.decide_approval(%s, true)", [request])
        return time.time()

    try:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(gateway, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for i in range(WARMUP + CALLS):
                    result: list[Any] = []

                    async def call(i: int = i, result: list[Any] = result) -> None:
                        result.append(await session.call_tool("bench.touch", {"id": i}))

                    with anyio.fail_after(60):
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(call)
                            committed = await grant_next()
                    [answer] = result
                    if answer.is_error:
                        raise RuntimeError(f"call {i}: {answer.content[0].text}")
                    started = float(answer.content[0].text)
                    if i >= WARMUP:
                        delays.append((started - committed) * 1000)
    finally:
        await approver.close()
    return delays


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--upstream":
        upstream()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import anyio

    dbname = sys.argv[1]
    setup(dbname)
    with tempfile.TemporaryDirectory(prefix="approvals_gateway.") as work:
        config = Path(work) / "gateway.toml"
        config.write_text(
            f'name = "{NAME}"\n'
            f'agent = "{NAME}"\n'
            'scope = "acme/platform"\n'
            'labels = ["origin:event/bench"]\n'
            "approval_wait = 60\n"
            "approval_progress = 60\n"
            "[upstreams.bench]\n"
            f'command = "{sys.executable}"\n'
            f'args = ["{Path(__file__).resolve()}", "--upstream", "x"]\n'
            "trust_annotations = true\n"
        )
        delays = anyio.run(measure, dbname, config)
    median = statistics.median(delays)
    p95 = statistics.quantiles(delays, n=20, method="inclusive")[18]
    print(
        f"min {min(delays):.2f} ms, max {max(delays):.2f} ms, mean "
        f"{statistics.fmean(delays):.2f} ms",
        file=sys.stderr,
    )
    print(f"RESULT gateway n={len(delays)} median_ms={median:.2f} p95_ms={p95:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
