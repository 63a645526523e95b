"""pg_labels.tools_from_mcp: MCP's tool descriptions as catalog entries, without a database
(the mapping of Platform.sync_tools, which test_platform.py tests against the database)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import pg_labels


@pytest.mark.parametrize(
    ("annotations", "effect"),
    [
        (None, "destructive"),
        ({}, "destructive"),
        ({"readOnlyHint": True}, "read"),
        ({"readOnlyHint": True, "destructiveHint": True}, "read"),
        ({"readOnlyHint": False}, "destructive"),
        ({"destructiveHint": True}, "destructive"),
        ({"destructiveHint": None}, "destructive"),
        ({"destructiveHint": "false"}, "destructive"),  # only an explicit false
        ({"destructiveHint": False}, "reversible_write"),
        ({"readOnlyHint": False, "destructiveHint": False}, "reversible_write"),
        (SimpleNamespace(readOnlyHint=None, destructiveHint=False), "reversible_write"),
        (SimpleNamespace(readOnlyHint=None, destructiveHint=None), "destructive"),
    ],
)
def test_mcp_hints(annotations: object, effect: str) -> None:
    """MCP's defaults: readOnlyHint false, destructiveHint true."""
    (tool,) = pg_labels.tools_from_mcp([{"name": "t", "annotations": annotations}])
    assert tool.effect == effect
    # the explicit mapping still wins
    (named,) = pg_labels.tools_from_mcp(
        [{"name": "t", "annotations": annotations}], effects={"t": "financial"}
    )
    assert named.effect == "financial"


def test_mcp_sdk_tools() -> None:
    """The MCP SDK's own Tool models (mcp 2 names the hints read_only_hint, ...)."""
    from mcp.types import Tool, ToolAnnotations

    schema = {"type": "object"}
    tools = [
        Tool(name="m.read", inputSchema=schema, annotations=ToolAnnotations(readOnlyHint=True)),
        Tool(name="m.edit", inputSchema=schema, annotations=ToolAnnotations(destructiveHint=False)),
        Tool(name="m.bare", inputSchema=schema),
        Tool(name="m.idem", inputSchema=schema, annotations=ToolAnnotations(idempotentHint=True)),
    ]
    assert [t.effect for t in pg_labels.tools_from_mcp(tools)] == [
        "read",
        "reversible_write",
        "destructive",
        "destructive",
    ]
    assert [t.effect for t in pg_labels.tools_from_mcp([t.model_dump() for t in tools])] == [
        "read",
        "reversible_write",
        "destructive",
        "destructive",
    ]
