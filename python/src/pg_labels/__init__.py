"""pg_labels for Python: the ``scope`` and ``labelset`` values, driver registration, refusals
as exceptions, and the platform's calls; the guards for agent SDKs' tools are the modules
``pg_labels.openai_agents`` and ``pg_labels.langgraph`` (with their extras).

The values and the exceptions need no driver. ``register``, ``register_async``, ``Platform``
and the rest of the platform's calls need psycopg 3 and are imported when first used, so that
a service using asyncpg alone does not need psycopg. See docs/python.md in the repository.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import (
    ApprovalRequired,
    DataBarrier,
    ExtensionMissing,
    PgLabelsError,
    Refusal,
    Sealed,
    UnknownTool,
    UntrustedToIrreversible,
    refusal_from,
)
from ._values import InvalidValue, LabelSet, Scope

if TYPE_CHECKING:
    from ._guard import Guard, Verdict
    from ._platform import (
        APPROVALS_CHANNEL,
        EFFECTS,
        ApprovalDecision,
        AsyncPlatform,
        AsyncRun,
        Decision,
        Platform,
        Run,
        Shared,
        Step,
        Tool,
        effect_of,
        tools_from_mcp,
    )
    from ._psycopg import register, register_async

__version__ = "0.3.0"

_LAZY = {
    "APPROVALS_CHANNEL": "._platform",
    "ApprovalDecision": "._platform",
    "EFFECTS": "._platform",
    "AsyncPlatform": "._platform",
    "AsyncRun": "._platform",
    "Decision": "._platform",
    "Platform": "._platform",
    "Run": "._platform",
    "Shared": "._platform",
    "Step": "._platform",
    "Tool": "._platform",
    "tools_from_mcp": "._platform",
    "effect_of": "._platform",
    "Guard": "._guard",
    "Verdict": "._guard",
    "register": "._psycopg",
    "register_async": "._psycopg",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pg_labels' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "APPROVALS_CHANNEL",
    "EFFECTS",
    "ApprovalDecision",
    "ApprovalRequired",
    "AsyncPlatform",
    "AsyncRun",
    "DataBarrier",
    "Decision",
    "ExtensionMissing",
    "Guard",
    "InvalidValue",
    "LabelSet",
    "PgLabelsError",
    "Platform",
    "Refusal",
    "Run",
    "Scope",
    "Sealed",
    "Shared",
    "Step",
    "Tool",
    "UnknownTool",
    "UntrustedToIrreversible",
    "Verdict",
    "effect_of",
    "refusal_from",
    "register",
    "register_async",
    "tools_from_mcp",
]
