"""The platform's statements on a psycopg 3 connection: one call is a transaction in
autocommit mode, else a savepoint in the caller's transaction. Written once, for psycopg's
``AsyncConnection``; ``_psycopg_sync.py`` (for ``Connection``) is generated from this file by
python/tools/async_to_sync.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Final, Protocol

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.pq import PipelineStatus, TransactionStatus

from .._psycopg import register_async

_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_call")
_RELEASE: Final = sql.SQL("RELEASE SAVEPOINT pg_labels_call")
_ROLLBACK: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_call")
_LISTEN: Final = sql.SQL("LISTEN pg_labels_approvals")
_BEGIN: Final = sql.SQL("BEGIN")
_COMMIT: Final = sql.SQL("COMMIT")
_ROLLBACK_ALL: Final = sql.SQL("ROLLBACK")
_STEP: Final = sql.SQL("SAVEPOINT pg_labels_step")
_STEP_UNDONE: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_step")


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


class _Stepwise(Protocol):
    """What :func:`gate_then_stepwise` asks of an executor."""

    def atomic(self) -> AbstractAsyncContextManager[None]: ...

    async def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None: ...


async def gate_then_stepwise(
    ex: _Stepwise,
    nested: Callable[[], AbstractAsyncContextManager[Any]],
    refused: type[Exception],
    gate: tuple[sql.Composed | sql.SQL, Sequence[object]],
    step: tuple[sql.Composed | sql.SQL, Sequence[object]],
    allowed: Callable[[Sequence[Any]], bool],
) -> tuple[Sequence[Any] | None, Sequence[Any] | None]:
    """An executor's ``gate_then`` a statement at a time: the gate's statement in
    ``ex.atomic()`` and, when ``allowed`` says so of its row, the step's in ``nested()`` (a
    savepoint of the driver's); the step's error (``refused``) raised once the gate's row is
    kept."""
    failure: Exception | None = None
    stepped: Sequence[Any] | None = None
    async with ex.atomic():
        row = await ex.fetchone(*gate)
        if row is not None and allowed(row):
            try:
                async with nested():
                    stepped = await ex.fetchone(*step)
            except refused as err:
                failure = err
    if failure is not None:
        raise failure
    return row, stepped


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

    async def one(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        """One statement as one call: in autocommit mode a statement is its own transaction
        (one round trip, no BEGIN and COMMIT around it), else a savepoint in the caller's."""
        if self.conn.autocommit:
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
        call: in autocommit mode one transaction, pipelined where libpq can (two round trips:
        ``BEGIN`` and the gate; the step in a savepoint and ``COMMIT``), else a savepoint in
        the caller's transaction. A step that fails is undone alone: the gate's row is kept
        (committed, in autocommit mode) and the step's error raised after it."""
        conn = self.conn
        if not conn.autocommit or not psycopg.AsyncPipeline.is_supported():
            return await self._gate_then(gate, step, allowed)
        decided = False
        try:
            async with conn.pipeline():
                await conn.execute(_BEGIN)
                cur = conn.cursor()
                await cur.execute(*gate)
                row: Sequence[Any] | None = await cur.fetchone()
                decided = True
                go = row is not None and allowed(row)
                called = conn.cursor()
                if go:
                    await conn.execute(_STEP)
                    await called.execute(*step)
                await conn.execute(_COMMIT)
            stepped: Sequence[Any] | None = await called.fetchone() if go else None
            return row, stepped
        except Exception:
            await self._after_failure(decided)
            raise
        except BaseException:
            # cancelled (psycopg cancels the statement: the transaction is left failed, in
            # autocommit mode): the whole call is undone, as a statement at a time it is
            await self._after_failure(False)
            raise

    async def _gate_then(
        self,
        gate: tuple[sql.Composed | sql.SQL, Sequence[object]],
        step: tuple[sql.Composed | sql.SQL, Sequence[object]],
        allowed: Callable[[Sequence[Any]], bool],
    ) -> tuple[Sequence[Any] | None, Sequence[Any] | None]:
        """:meth:`gate_then` a statement at a time."""
        return await gate_then_stepwise(
            self, self.conn.transaction, psycopg.Error, gate, step, allowed
        )

    async def _after_failure(self, decided: bool) -> None:
        """After a statement of :meth:`gate_then`'s transaction failed: when it was the step
        (the gate decided; the transaction is open and failed), commit the gate's decision
        alone, else roll back. Should that fail, the connection is left as it is (not idle: a
        pool discards it)."""
        conn = self.conn
        if conn.closed or conn.broken or conn.pgconn.pipeline_status != PipelineStatus.OFF:
            return
        status = conn.info.transaction_status
        if status == TransactionStatus.IDLE:
            return  # COMMIT itself failed: nothing was committed
        with suppress(psycopg.Error):
            if decided and status == TransactionStatus.INERROR:
                await conn.execute(_STEP_UNDONE)
                await conn.execute(_COMMIT)
            else:
                await conn.execute(_ROLLBACK_ALL)

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
