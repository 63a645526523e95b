"""An MCP server (the official Python SDK's low-level Server, over stdio) whose one tool,
``note`` (a reversible write by its annotations), appends each call's text and the time it
started to the file named by its argument: what the held calls' tests count (the upstream ran
exactly once) and time (bench/approvals_gateway.py has its own). With a second argument, a
libpq connection string, each line also says how many committed ``tool_called`` steps carry
the call's text, read on a connection of its own as the call starts: what the gateway
committed before it called the upstream."""

from __future__ import annotations

import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

LOG = sys.argv[1]
READER = sys.argv[2] if len(sys.argv) > 2 else None

NOTE = types.Tool(
    name="note",
    description="Appends a note to the log.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[NOTE])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    started = time.time()
    text = str((params.arguments or {}).get("text"))
    line = f"{text}\t{started!r}"
    if READER is not None:
        import psycopg

        with psycopg.connect(READER, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_labels.steps "
                "WHERE kind = 'tool_called' AND args ->> 'text' = %s",
                [text],
            ).fetchone()
        line += f"\t{row[0] if row else 0}"
    with open(LOG, "a") as log:
        log.write(line + "\n")
    return types.CallToolResult(content=[types.TextContent(text=f"noted {text}")])


server: Server[Any] = Server("counting", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
