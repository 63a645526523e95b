# Generated from _psycopg_async.py by python/tools/async_to_sync.py: do not edit.
# Edit python/src/pg_labels/_platform/_psycopg_async.py
# and run the script; the python suite checks that this file is what it generates.
"""The platform's statements on a psycopg 3 connection: one call is a transaction in
autocommit mode, else a savepoint in the caller's transaction. Written once, for psycopg's
``AsyncConnection``; ``_psycopg_sync.py`` (for ``Connection``) is generated from this file by
python/tools/async_to_sync.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, Final, Protocol

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.pq import PipelineStatus, TransactionStatus

from .._psycopg import register

_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_call")
_RELEASE: Final = sql.SQL("RELEASE SAVEPOINT pg_labels_call")
_ROLLBACK: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_call")
_LISTEN: Final = sql.SQL("LISTEN pg_labels_approvals")
_BEGIN: Final = sql.SQL("BEGIN")
_COMMIT: Final = sql.SQL("COMMIT")
_ROLLBACK_ALL: Final = sql.SQL("ROLLBACK")
_STEP: Final = sql.SQL("SAVEPOINT pg_labels_step")
_STEP_UNDONE: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_step")


@contextmanager
def _atomic(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """One call: a transaction in autocommit mode, else a savepoint in the caller's
    transaction (begun as psycopg begins it, never committed here)."""
    if conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        with conn.transaction():
            yield
        return
    conn.execute(_SAVEPOINT)
    try:
        yield
    except BaseException:
        # Undo this call only; should that fail too (a broken connection), the first error
        # is the one that explains it.
        with suppress(psycopg.Error):
            conn.execute(_ROLLBACK)
            conn.execute(_RELEASE)
        raise
    conn.execute(_RELEASE)


class _Stepwise(Protocol):
    """What :func:`gate_then_stepwise` asks of an executor."""

    def atomic(self) -> AbstractContextManager[None]: ...

    def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None: ...


def gate_then_stepwise(
    ex: _Stepwise,
    nested: Callable[[], AbstractContextManager[Any]],
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
    with ex.atomic():
        row = ex.fetchone(*gate)
        if row is not None and allowed(row):
            try:
                with nested():
                    stepped = ex.fetchone(*step)
            except refused as err:
                failure = err
    if failure is not None:
        raise failure
    return row, stepped


class PsycopgExecutor:
    """Statements on a psycopg connection."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.registered = False

    def ready(self) -> None:
        """Register the types on the connection, once."""
        if not self.registered:
            register(self.conn)
            self.registered = True

    def atomic(self) -> AbstractContextManager[None]:
        return _atomic(self.conn)

    def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        with self.conn.cursor() as cur:
            cur.execute(query, params)
            row: Sequence[Any] | None = cur.fetchone()
        return row

    def one(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        """One statement as one call: in autocommit mode a statement is its own transaction
        (one round trip, no BEGIN and COMMIT around it), else a savepoint in the caller's."""
        if self.conn.autocommit:
            return self.fetchone(query, params)
        with self.atomic():
            return self.fetchone(query, params)

    def gate_then(
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
        if not conn.autocommit or not psycopg.Pipeline.is_supported():
            return self._gate_then(gate, step, allowed)
        decided = False
        try:
            with conn.pipeline():
                conn.execute(_BEGIN)
                cur = conn.cursor()
                cur.execute(*gate)
                row: Sequence[Any] | None = cur.fetchone()
                decided = True
                go = row is not None and allowed(row)
                called = conn.cursor()
                if go:
                    conn.execute(_STEP)
                    called.execute(*step)
                conn.execute(_COMMIT)
            stepped: Sequence[Any] | None = called.fetchone() if go else None
            return row, stepped
        except Exception:
            self._after_failure(decided)
            raise
        except BaseException:
            # cancelled (psycopg cancels the statement: the transaction is left failed, in
            # autocommit mode): the whole call is undone, as a statement at a time it is
            self._after_failure(False)
            raise

    def _gate_then(
        self,
        gate: tuple[sql.Composed | sql.SQL, Sequence[object]],
        step: tuple[sql.Composed | sql.SQL, Sequence[object]],
        allowed: Callable[[Sequence[Any]], bool],
    ) -> tuple[Sequence[Any] | None, Sequence[Any] | None]:
        """:meth:`gate_then` a statement at a time."""
        return gate_then_stepwise(
            self, self.conn.transaction, psycopg.Error, gate, step, allowed
        )

    def _after_failure(self, decided: bool) -> None:
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
                conn.execute(_STEP_UNDONE)
                conn.execute(_COMMIT)
            else:
                conn.execute(_ROLLBACK_ALL)

    def executemany(
        self, query: sql.Composed | sql.SQL, rows: Sequence[Sequence[object]]
    ) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(query, rows)

    def connect_like(self) -> psycopg.Connection[Any]:
        """A new connection with this one's parameters (its conninfo and password; a
        ``SET ROLE`` on this one is not carried), in autocommit mode."""
        info = self.conn.info
        conninfo = make_conninfo(info.dsn, password=info.password or None)
        return psycopg.Connection.connect(conninfo, autocommit=True)

    def wait(
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
        listener = connect() if connect is not None else self.connect_like()
        try:
            if not isinstance(listener, psycopg.Connection):
                raise TypeError(
                    f"connect must return a psycopg Connection, not {type(listener).__name__}"
                )
            if not listener.autocommit:
                listener.set_autocommit(True)
            listener.execute(_LISTEN)
            while True:
                # a notification that comes while this reads waits in psycopg's backlog
                with listener.cursor() as cur:
                    cur.execute(query, params)
                    row: Sequence[Any] | None = cur.fetchone()
                seconds = left(row)
                if seconds is None or seconds <= 0:
                    return row
                for note in listener.notifies(timeout=seconds):
                    if note.payload == payload:
                        break
        finally:
            listener.close()
