"""The tool catalog from MCP tool descriptions: their effects (MCP's hints, with MCP's
defaults) and the statement that writes them (``Platform.sync_tools``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from ._common import _bool, _name

#: The effects a tool may have (``pg_labels.tools.effect``).
EFFECTS: Final = ("read", "reversible_write", "destructive", "financial")


@dataclass(frozen=True)
class Tool:
    """An entry of the tool catalog, as :meth:`Platform.sync_tools` wrote it."""

    name: str
    effect: str
    trusted_output: bool


_TOOLS_UPSERT: Final = sql.SQL(
    "INSERT INTO pg_labels.tools (name, effect, trusted_output, description) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE "
    "SET effect = EXCLUDED.effect, trusted_output = EXCLUDED.trusted_output, "
    "description = EXCLUDED.description "
    "WHERE (tools.effect, tools.trusted_output, tools.description) IS DISTINCT FROM "
    "(EXCLUDED.effect, EXCLUDED.trusted_output, EXCLUDED.description)"
)


def _annotation(annotations: object, key: str, attribute: str) -> object:
    """The value of an MCP tool annotation (``None`` when it is not set): ``key`` as the
    protocol spells it (``readOnlyHint``), or ``attribute`` as the Python SDK's models name
    it (``read_only_hint``, in mcp 2)."""
    if annotations is None:
        return None
    if isinstance(annotations, Mapping):
        value = annotations.get(key)
        return annotations.get(attribute) if value is None else value
    value = getattr(annotations, key, None)
    return getattr(annotations, attribute, None) if value is None else value


def effect_of(annotations: object) -> str:
    """The effect MCP tool annotations say (a dict, as on the wire, or an object such as
    the MCP SDK's ``ToolAnnotations``; ``None`` for none): ``readOnlyHint: true`` is
    ``read``; otherwise a tool is ``destructive`` unless ``destructiveHint`` is explicitly
    false (MCP's default for it is true), then ``reversible_write``. The mapping of
    :func:`tools_from_mcp` and :meth:`Platform.sync_tools`."""
    if _annotation(annotations, "readOnlyHint", "read_only_hint") is True:
        return "read"
    if _annotation(annotations, "destructiveHint", "destructive_hint") is False:
        return "reversible_write"
    return "destructive"


def _describe_tool(tool: object) -> tuple[str, object, str | None]:
    """``(name, annotations, description)`` of an MCP tool description (a dict or an object
    with ``name``, ``annotations`` and ``description``)."""
    if isinstance(tool, Mapping):
        name, annotations, description = (
            tool.get("name"),
            tool.get("annotations"),
            tool.get("description"),
        )
    else:
        name = getattr(tool, "name", None)
        annotations = getattr(tool, "annotations", None)
        description = getattr(tool, "description", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"an MCP tool needs a str name, got {name!r}")
    if description is not None and not isinstance(description, str):
        description = None
    return name, annotations, description


def tools_from_mcp(
    tools: Iterable[object],
    *,
    effects: Mapping[str, str] | None = None,
    trusted: Iterable[str] | Mapping[str, bool] | None = None,
) -> list[Tool]:
    """The catalog entries for MCP tool descriptions, without a database; the mapping of
    :meth:`Platform.sync_tools`."""
    return [t for t, _ in _catalog(tools, effects=effects, trusted=trusted)]


def _catalog(
    tools: Iterable[object],
    *,
    effects: Mapping[str, str] | None = None,
    trusted: Iterable[str] | Mapping[str, bool] | None = None,
) -> list[tuple[Tool, str | None]]:
    """The catalog entries and the descriptions of MCP tool descriptions."""
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise TypeError("tools must be a list of MCP tool descriptions")
    effects = dict(effects or {})
    if isinstance(trusted, Mapping):
        trusted_names = {n for n, t in trusted.items() if _bool(t, f"trusted[{n!r}]")}
        named = set(trusted)
    elif trusted is None:
        trusted_names, named = set(), set()
    elif isinstance(trusted, str):
        raise TypeError("trusted must be a list of tool names or a mapping, not a str")
    else:
        trusted_names = {_name(n, "a trusted tool's name") for n in trusted}
        named = set(trusted_names)
    out: list[tuple[Tool, str | None]] = []
    seen: set[str] = set()
    for tool in tools:
        name, annotations, description = _describe_tool(tool)
        if name in seen:
            raise ValueError(f"tool {name} is listed twice")
        seen.add(name)
        effect = effects.get(name)
        if effect is None:
            effect = effect_of(annotations)
        elif effect not in EFFECTS:
            raise ValueError(
                f"effect of tool {name} must be one of {', '.join(EFFECTS)}: {effect!r}"
            )
        out.append((Tool(name, effect, name in trusted_names), description))
    unknown = (set(effects) | named) - seen
    if unknown:
        raise ValueError(
            f"effects or trusted name tools not in the list: {', '.join(sorted(unknown))}"
        )
    return out
