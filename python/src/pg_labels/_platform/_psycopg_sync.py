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
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.pq import TransactionStatus

from .._psycopg import register

_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_call")
_RELEASE: Final = sql.SQL("RELEASE SAVEPOINT pg_labels_call")
_ROLLBACK: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_call")
_LISTEN: Final = sql.SQL("LISTEN pg_labels_approvals")


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
