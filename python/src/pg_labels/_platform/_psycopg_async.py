"""The platform's statements on a psycopg 3 connection: one call is a transaction in
autocommit mode, else a savepoint in the caller's transaction. Written once, for psycopg's
``AsyncConnection``; ``_psycopg_sync.py`` (for ``Connection``) is generated from this file by
python/tools/async_to_sync.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.pq import TransactionStatus

from .._psycopg import register_async

_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_call")
_RELEASE: Final = sql.SQL("RELEASE SAVEPOINT pg_labels_call")
_ROLLBACK: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_call")
_LISTEN: Final = sql.SQL("LISTEN pg_labels_approvals")


@asynccontextmanager
async def _atomic(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[None]:
    """One call: a transaction in autocommit mode, else a savepoint in the caller's
    transaction (begun as psycopg begins it, never committed here)."""
    if conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        async with conn.transaction():
            yield
        return
    await conn.execute(_SAVEPOINT)
    try:
        yield
    except BaseException:
        # Undo this call only; should that fail too (a broken connection), the first error
        # is the one that explains it.
        with suppress(psycopg.Error):
            await conn.execute(_ROLLBACK)
            await conn.execute(_RELEASE)
        raise
    await conn.execute(_RELEASE)


class AsyncPsycopgExecutor:
    """Statements on a psycopg connection."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn
        self.registered = False

    async def ready(self) -> None:
        """Register the types on the connection, once."""
        if not self.registered:
            await register_async(self.conn)
            self.registered = True

    def atomic(self) -> AbstractAsyncContextManager[None]:
        return _atomic(self.conn)

    async def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        async with self.conn.cursor() as cur:
            await cur.execute(query, params)
            row: Sequence[Any] | None = await cur.fetchone()
        return row

    async def executemany(
        self, query: sql.Composed | sql.SQL, rows: Sequence[Sequence[object]]
    ) -> None:
        async with self.conn.cursor() as cur:
            await cur.executemany(query, rows)

    async def connect_like(self) -> psycopg.AsyncConnection[Any]:
        """A new connection with this one's parameters (its conninfo and password; a
        ``SET ROLE`` on this one is not carried), in autocommit mode."""
        info = self.conn.info
        conninfo = make_conninfo(info.dsn, password=info.password or None)
        return await psycopg.AsyncConnection.connect(conninfo, autocommit=True)

    async def wait(
        self,
        connect: Callable[[], Any] | None,
        query: sql.Composed | sql.SQL,
        params: Sequence[object],
        payload: str,
        left: Callable[[Sequence[Any] | None], float | None],
    ) -> Sequence[Any] | None:
        """Read ``query`` on a connection of its own that listens on pg_labels_approvals:
        after ``LISTEN`` and after each notification whose payload is ``payload``, until
        ``left(row)`` says there is no time left (or nothing to wait for). The connection is
        closed at the end, however it ends."""
        listener = await connect() if connect is not None else await self.connect_like()
        try:
            if not isinstance(listener, psycopg.AsyncConnection):
                raise TypeError(
                    f"connect must return a psycopg AsyncConnection, not {type(listener).__name__}"
                )
            if not listener.autocommit:
                await listener.set_autocommit(True)
            await listener.execute(_LISTEN)
            while True:
                # a notification that comes while this reads waits in psycopg's backlog
                async with listener.cursor() as cur:
                    await cur.execute(query, params)
                    row: Sequence[Any] | None = await cur.fetchone()
                seconds = left(row)
                if seconds is None or seconds <= 0:
                    return row
                async for note in listener.notifies(timeout=seconds):
                    if note.payload == payload:
                        break
        finally:
            await listener.close()
