"""The drivers each form of the platform's calls takes: :class:`Platform` a psycopg 3
``Connection``, :class:`AsyncPlatform` a psycopg 3 ``AsyncConnection`` or an asyncpg
connection (asyncpg has no twin: this module is written by hand, not generated)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, suppress
from typing import Any, TypeAlias

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from ._psycopg_async import AsyncPsycopgExecutor, gate_then_stepwise
from ._psycopg_sync import PsycopgExecutor

#: What :class:`AsyncPlatform` takes: psycopg's ``AsyncConnection`` or an asyncpg connection.
AsyncConnection: TypeAlias = "psycopg.AsyncConnection[Any] | Any"
#: What :class:`Platform` takes.
Connection: TypeAlias = "psycopg.Connection[Any]"


class AsyncpgExecutor:
    """Statements on an asyncpg connection: the same SQL with ``$n`` placeholders, ``args``
    sent as JSON text cast to ``jsonb`` (whatever jsonb codec the connection has), the types
    registered with :func:`pg_labels.asyncpg.register`. asyncpg has no implicit transaction:
    its ``transaction()`` is the call's own transaction, or a savepoint in the caller's."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.registered = False

    async def ready(self) -> None:
        if not self.registered:
            from ..asyncpg import register as register_asyncpg

            await register_asyncpg(self.conn)
            self.registered = True

    def atomic(self) -> AbstractAsyncContextManager[None]:
        transaction: AbstractAsyncContextManager[None] = self.conn.transaction()
        return transaction

    @staticmethod
    def _render(
        query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> tuple[str, list[object]]:
        parts = query.as_string(None).split("%s")
        if len(parts) != len(params) + 1:
            raise AssertionError("placeholders and parameters differ")
        text = [parts[0]]
        values: list[object] = []
        for n, (value, rest) in enumerate(zip(params, parts[1:], strict=True), start=1):
            if isinstance(value, Jsonb):
                text.append(f"(${n}::text)::jsonb")
                values.append(json.dumps(value.obj))
            else:
                text.append(f"${n}")
                values.append(value)
            text.append(rest)
        return "".join(text), values

    async def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        text, values = self._render(query, params)
        row: Sequence[Any] | None = await self.conn.fetchrow(text, *values)
        return row

    async def one(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        """One statement as one call: outside a transaction a statement is its own (one round
        trip), else a savepoint in the caller's."""
        if not self.conn.is_in_transaction():
            return await self.fetchone(query, params)
        async with self.atomic():
            return await self.fetchone(query, params)

    async def gate_then(
        self,
        gate: tuple[sql.Composed | sql.SQL, Sequence[object]],
        step: tuple[sql.Composed | sql.SQL, Sequence[object]],
        allowed: Callable[[Sequence[Any]], bool],
    ) -> tuple[Sequence[Any] | None, Sequence[Any] | None]:
        """The gate's statement and, when ``allowed`` says so of its row, the step's, as one
        call (a transaction, or a savepoint in the caller's); a step that fails is undone alone
        (the gate's row kept) and its error raised after it."""
        # (any error of the step's: asyncpg's errors are not of one class)
        return await gate_then_stepwise(self, self.conn.transaction, Exception, gate, step, allowed)

    async def executemany(
        self, query: sql.Composed | sql.SQL, rows: Sequence[Sequence[object]]
    ) -> None:
        if not rows:
            return
        text, _ = self._render(query, rows[0])
        await self.conn.executemany(text, [self._render(query, r)[1] for r in rows])

    async def connect_like(self) -> Any:
        """A new asyncpg connection with this one's address, user, password, database and
        SSL setting (asyncpg keeps them on the connection; a connection made otherwise, or a
        pool's setup, is the ``connect`` callable's to repeat)."""
        import asyncpg

        addr = self.conn._addr
        params = self.conn._params
        if isinstance(addr, str):  # a Unix socket: <directory>/.s.PGSQL.<port>
            host, port = os.path.dirname(addr), int(addr.rsplit(".", 1)[1])
        else:
            host, port = addr[0], int(addr[1])
        return await asyncpg.connect(
            host=host,
            port=port,
            user=params.user,
            password=params.password,
            database=params.database,
            ssl=params.ssl,
        )

    async def wait(
        self,
        connect: Callable[[], Any] | None,
        query: sql.Composed | sql.SQL,
        params: Sequence[object],
        payload: str,
        left: Callable[[Sequence[Any] | None], float | None],
    ) -> Sequence[Any] | None:
        """:meth:`AsyncPsycopgExecutor.wait` on asyncpg (``add_listener``)."""
        import asyncpg

        listener = await connect() if connect is not None else await self.connect_like()
        heard = asyncio.Event()

        def notified(_conn: object, _pid: int, _channel: str, text: str) -> None:
            if text == payload:
                heard.set()

        try:
            if not isinstance(listener, asyncpg.Connection):
                raise TypeError(
                    f"connect must return an asyncpg Connection, not {type(listener).__name__}"
                )
            await listener.add_listener("pg_labels_approvals", notified)
            text, values = self._render(query, params)
            while True:
                heard.clear()  # a notification that comes while this reads sets it again
                row: Sequence[Any] | None = await listener.fetchrow(text, *values)
                seconds = left(row)
                if seconds is None or seconds <= 0:
                    return row
                with suppress(TimeoutError):
                    await asyncio.wait_for(heard.wait(), seconds)
        finally:
            await listener.close(timeout=10)


def executor_async(conn: object) -> AsyncPsycopgExecutor | AsyncpgExecutor:
    """The statements of :class:`AsyncPlatform` on ``conn``; the types are registered by the
    first call."""
    if isinstance(conn, psycopg.AsyncConnection):
        return AsyncPsycopgExecutor(conn)
    try:
        import asyncpg
    except ImportError:
        asyncpg = None
    if asyncpg is not None and isinstance(
        conn, (asyncpg.Connection, asyncpg.pool.PoolConnectionProxy)
    ):
        return AsyncpgExecutor(conn)
    raise TypeError(
        "AsyncPlatform takes a psycopg AsyncConnection or an asyncpg connection, "
        f"not {type(conn).__name__} (Platform takes a psycopg Connection)"
    )


def executor(conn: object) -> PsycopgExecutor:
    """The statements of :class:`Platform` on ``conn``, the types registered on it now
    (:class:`ExtensionMissing` when the database has no pg_labels)."""
    if not isinstance(conn, psycopg.Connection):
        raise TypeError(
            f"Platform takes a psycopg Connection, not {type(conn).__name__} "
            "(AsyncPlatform takes an AsyncConnection)"
        )
    statements = PsycopgExecutor(conn)
    statements.ready()
    return statements
