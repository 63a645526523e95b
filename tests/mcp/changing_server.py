"""An MCP server (the official Python SDK's low-level Server, over stdio) whose tools change:
``enable_archive`` adds the tool ``archive`` (destructive by its annotations) and sends
``notifications/tools/list_changed``, as a server that learns new tools at run time does.
The gateway's test of the catalog's resync puts it behind the gateway."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

enabled = False

ENABLE = types.Tool(
    name="enable_archive",
    description="Adds the archive tool.",
    input_schema={"type": "object", "properties": {}},
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
)
ARCHIVE = types.Tool(
    name="archive",
    description="Archives a record (removes it from the live set).",
    input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ENABLE, ARCHIVE] if enabled else [ENABLE])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    global enabled
    if params.name == "enable_archive":
        enabled = True
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(text="archive enabled")])
    if params.name == "archive" and enabled:
        record = (params.arguments or {}).get("id")
        return types.CallToolResult(content=[types.TextContent(text=f"archived {record}")])
    return types.CallToolResult(
        content=[types.TextContent(text=f"no tool {params.name}")], is_error=True
    )


server: Server[Any] = Server("changing", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
