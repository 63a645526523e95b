"""Downstream conversations and the database connections they borrow."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp_types as types
import psycopg
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext

from pg_labels import AsyncPlatform, AsyncRun, LabelSet, Scope

from .common import RUN_META_KEY, Named, _error
from .config import Client, Config
from .guard import GatewayGuard

log = logging.getLogger("pg_labels.mcp")


class _Session:
    """A downstream conversation: an MCP session (a stdio client, a Streamable HTTP
    ``Mcp-Session-Id``) or the run token of sessionless calls. Its run is opened with its first
    call; it holds no database connection between calls (the gateway's pool serves them)."""

    def __init__(self, client: Client | None, agent: str, run: AsyncRun | None = None) -> None:
        self.lock = asyncio.Lock()
        self.client = client
        self.agent = agent
        self.guard: GatewayGuard | None = None
        # the run's id, agent, scope and labels as opened
        self.run: tuple[Any, str | None, Scope, LabelSet] | None = None
        if run is not None:
            self.run = (run.id, run.agent, run.scope, run.opened_labels)
        self.used = time.monotonic()


class _Pool:
    """The gateway's database connections as its ``--database`` role: at most ``size``, each
    lent to one call's statements at a time, opened again after one broke."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.idle: list[AsyncPlatform] = []
        self.slots = asyncio.Semaphore(config.pool_size)

    async def _connect(self) -> AsyncPlatform:
        timeout = self.config.db_timeout
        conn = await psycopg.AsyncConnection.connect(
            self.config.database, autocommit=True, connect_timeout=max(1, int(timeout))
        )
        try:
            # every statement ends within the database timeout (the URL's own options, or
            # PGOPTIONS, are kept)
            await conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", [f"{int(timeout * 1000)}ms"]
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        return AsyncPlatform(conn)

    @contextlib.asynccontextmanager
    async def platform(self) -> AsyncIterator[AsyncPlatform]:
        """A connection of the pool for the statements of one call (waiting for a free one
        within the database timeout)."""
        with anyio.fail_after(self.config.db_timeout):
            await self.slots.acquire()
        platform: AsyncPlatform | None = None
        try:
            while self.idle and platform is None:
                candidate = self.idle.pop()
                if candidate.conn.closed or candidate.conn.broken:
                    await _close(candidate.conn)
                else:
                    platform = candidate
            if platform is None:
                with anyio.fail_after(self.config.db_timeout):
                    platform = await self._connect()
            yield platform
        finally:
            if platform is not None:
                conn = platform.conn
                if (
                    conn.closed
                    or conn.broken
                    or conn.info.transaction_status != 0
                    or conn.pgconn.pipeline_status != 0
                ):
                    await _close(conn)
                else:
                    self.idle.append(platform)
            self.slots.release()

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for platform in idle:
            await _close(platform.conn)


async def _close(conn: psycopg.AsyncConnection[Any]) -> None:
    with contextlib.suppress(Exception):
        with anyio.move_on_after(1):
            await conn.close()


class Conversations(Named):
    """The gateway's downstream conversations: an MCP session's, or a sessionless call's run
    token (a part of :class:`~pg_labels.mcp.gateway.Gateway`)."""

    config: Config
    _sessions: weakref.WeakKeyDictionary[Connection, _Session]
    _runs: OrderedDict[str, _Session]
    _token_key: bytes

    def _client(self, ctx: ServerRequestContext[Any]) -> Client | None:
        """The client a bearer token named (HTTP with [clients]), else None."""
        request = ctx.request
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        client = state.get("pg_labels_client") if isinstance(state, Mapping) else None
        return client if isinstance(client, Client) else None

    def _new_session(self, client: Client | None, run: AsyncRun | None = None) -> _Session:
        agent = (client.agent if client is not None else None) or self.config.agent
        return _Session(client, agent, run)

    def _connection_session(self, ctx: ServerRequestContext[Any]) -> _Session:
        # The connection of the request (one per stdio client, per Streamable HTTP session):
        # ServerSession is built per request, its connection lives as long as the session.
        connection = ctx.session._connection
        session = self._sessions.get(connection)
        if session is None:
            session = self._sessions[connection] = self._new_session(self._client(ctx))
        session.used = time.monotonic()
        return session

    def _token(self, run_id: str, client: Client | None) -> str:
        """A run token: the run's id and an HMAC of it with the client's name and the
        gateway's name and scope (a token is only its client's, at this gateway)."""
        what = "\0".join((run_id, client.name if client else "", self.owner, self.config.scope))
        mac = hmac.new(self._token_key, what.encode(), hashlib.sha256).hexdigest()
        return f"{run_id}.{mac[:32]}"

    def _token_run(self, token: object, client: Client | None) -> str | None:
        """The run a token this gateway issued to this client names (None for any other)."""
        if not isinstance(token, str) or len(token) > 100 or "." not in token:
            return None
        run_id, _, _ = token.partition(".")
        try:
            run_id = str(uuid.UUID(run_id))
        except ValueError:
            return None
        return run_id if hmac.compare_digest(self._token(run_id, client), token) else None

    async def _sessionless(
        self, ctx: ServerRequestContext[Any], name: str
    ) -> _Session | types.CallToolResult:
        """A call of MCP's sessionless revision: its conversation's run, named by the run token
        the gateway issued in ``_meta`` (``pg-labels/run``); without one, the call is answered
        with a new conversation's token, not made (the run is opened by the first call that
        carries it: a call without a token writes nothing)."""
        mode = self.config.sessionless
        client = self._client(ctx)
        if mode == "per_call":
            return self._new_session(client)
        if mode == "refuse":
            return _error(
                f"pg_labels refused {name}: this gateway keeps the calls of one conversation in "
                "one run, and a call without an MCP session (protocol revision "
                f"{ctx.protocol_version}) has none; nothing was called. Connect with a session "
                "(an earlier protocol revision)"
            )
        meta = ctx.meta or {}
        token = meta.get(RUN_META_KEY) if isinstance(meta, Mapping) else None
        if token is None:
            issued = self._token(str(uuid.uuid4()), client)
            result = _error(
                f"pg_labels: {name} was not called. A call without an MCP session needs its "
                f"conversation's run: send this call, and every later call of the conversation, "
                f'with _meta {{"{RUN_META_KEY}": "{issued}"}}'
            )
            result.meta = {RUN_META_KEY: issued}
            return result
        run_id = self._token_run(token, client)
        if run_id is None:
            return _error(
                f"pg_labels refused {name}: _meta {RUN_META_KEY} is not a run token this "
                "gateway issued to this client (it issues one to a call that comes without); "
                "nothing was called"
            )
        known = self._runs.get(run_id)
        if known is None:
            known = self._new_session(client)
            known.run = (run_id, None, Scope(self.config.scope), LabelSet([]))
            self._remember(run_id, known)
        known.used = time.monotonic()
        return known

    def _remember(self, run_id: str, session: _Session) -> None:
        """The sessionless conversations kept: at most max_sessions, the idlest forgotten
        first (a forgotten one's next call finds its run again)."""
        self._runs[run_id] = session
        self._runs.move_to_end(run_id)
        cutoff = time.monotonic() - self.config.session_idle_timeout
        while self._runs and (
            len(self._runs) > self.config.max_sessions
            or next(iter(self._runs.values())).used < cutoff
        ):
            self._runs.popitem(last=False)
