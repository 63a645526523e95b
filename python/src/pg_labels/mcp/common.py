"""What the gateway's modules share: its errors, the texts clients read, a tool's pinned
definition."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import psycopg

from pg_labels import Guard

from .config import Config

log = logging.getLogger("pg_labels.mcp")


# where a sessionless call carries the run token the gateway issued
RUN_META_KEY = "pg-labels/run"


class GatewayError(Exception):
    """The gateway could not start: an upstream, or the catalog."""


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _unwrap(err: BaseException) -> BaseException:
    """The first error inside exception groups (a task group's)."""
    inner = getattr(err, "exceptions", None)
    while isinstance(inner, (list, tuple)) and inner and isinstance(inner[0], BaseException):
        err = inner[0]
        inner = getattr(err, "exceptions", None)
    return err


def _leaf(err: BaseException) -> str:
    """The first error inside exception groups, as :meth:`Guard.why` says it."""
    err = _unwrap(err)
    if isinstance(err, TimeoutError):
        return "it did not answer in time"
    return Guard.why(err)


def _internal(err: BaseException) -> str:
    """What an MCP client is told of a database error: its SQLSTATE, nothing of the server
    (its address, socket, FATAL messages are logged, not sent)."""
    err = _unwrap(err)
    if isinstance(err, TimeoutError):
        return "it did not answer in time"
    state = getattr(err, "sqlstate", None)
    if isinstance(state, str):
        return f"SQLSTATE {state}"
    if isinstance(err, psycopg.OperationalError):
        return "the connection failed"
    return type(err).__name__


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@dataclass
class _Route:
    upstream: str
    tool: types.Tool
    definition: dict[str, Any]
    digest: str


@dataclass(frozen=True)
class CatalogEntry:
    """A tool as the gateway enforces it: its effect, whether its output is trusted, who set
    the effect, and why its definition is not the accepted one (``None``: it is; the tool is
    refused otherwise)."""

    name: str
    effect: str
    trusted_output: bool
    set_by: str
    change: str | None


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_DEFINITION = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def _definition(tool: types.Tool) -> tuple[dict[str, Any], str]:
    """What the model is shown of a tool, and its SHA-256 (canonical JSON)."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    definition = {k: dumped[k] for k in _DEFINITION if k in dumped}
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return definition, hashlib.sha256(canonical.encode()).hexdigest()


def _changed_fields(accepted: object, definition: Mapping[str, Any]) -> str:
    """Which parts of a definition differ from the accepted one."""
    if not isinstance(accepted, Mapping):
        return "the accepted definition is not on the record"
    fields = [k for k in _DEFINITION if accepted.get(k) != definition.get(k)]
    return ", ".join(fields) or "its definition"


def _printable(text: object) -> str:
    """A name or text from outside, safe to print or send: control characters (ESC, CR, LF,
    ...) and other invisible ones escaped, cut at 200 characters."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append("\\\\")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    text = "".join(out)
    return text if len(text) <= 200 else text[:200] + "..."


class Named:
    """A part of the gateway that knows its configuration and its name."""

    config: Config

    @property
    def owner(self) -> str:
        """The gateway's name: the owner of its namespaces and of the tools it writes."""
        return self.config.name or self.config.agent
