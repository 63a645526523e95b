"""The platform's calls: runs, steps, the gate, approvals, sharing and the tool catalog.

Each call is one statement, or one transaction for the two statements of a share (and for
the tool catalog), written with parameters only. The caller's transaction is respected: on a
connection that is not in autocommit mode nothing is committed, and each call runs in a
savepoint, so a refused call rolls back itself and leaves the caller's transaction usable. In
autocommit mode (and on asyncpg outside a transaction block) each call is its own transaction.

Each call is written once, in :mod:`._async` (:class:`AsyncPlatform`, :class:`AsyncRun`);
:mod:`._sync` (:class:`Platform`, :class:`Run`) is generated from it by
python/tools/async_to_sync.py, as :mod:`._psycopg_sync` from :mod:`._psycopg_async`. What
both share is in :mod:`._common` and :mod:`._catalog`, the drivers in :mod:`._drivers`.
"""

from ._async import AsyncPlatform, AsyncRun
from ._catalog import EFFECTS, Tool, effect_of, tools_from_mcp
from ._common import APPROVALS_CHANNEL, WAIT_TIMEOUT, ApprovalDecision, Decision, Shared, Step
from ._sync import Platform, Run

__all__ = [
    "APPROVALS_CHANNEL",
    "EFFECTS",
    "WAIT_TIMEOUT",
    "ApprovalDecision",
    "AsyncPlatform",
    "AsyncRun",
    "Decision",
    "Platform",
    "Run",
    "Shared",
    "Step",
    "Tool",
    "effect_of",
    "tools_from_mcp",
]
