# Generated from _psycopg_async.py by python/tools/async_to_sync.py: do not edit.
# Edit python/src/pg_labels/_platform/_psycopg_async.py
# and run the script; the python suite checks that this file is what it generates.
"""The platform's statements on a psycopg 3 connection: one call is a transaction in
autocommit mode, else a savepoint in the caller's transaction. Written once, for psycopg's
``AsyncConnection``; ``_psycopg_sync.py`` (for ``Connection``) is generated from this file by
python/tools/async_to_sync.py."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from .._psycopg import register

_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_call")
_RELEASE: Final = sql.SQL("RELEASE SAVEPOINT pg_labels_call")
_ROLLBACK: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_call")


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
