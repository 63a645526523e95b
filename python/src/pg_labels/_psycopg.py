"""psycopg 3: reading and writing ``scope`` and ``labelset`` on a connection."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format, TransactionStatus
from psycopg.types import TypeInfo

from ._common import EXTENSION_SCHEMA
from ._errors import ExtensionMissing
from ._values import LabelSet, Scope

__all__ = ["register", "register_async"]

FORMAT_VERSION = 1


def _text(value: object, cls: type[Scope] | type[LabelSet]) -> str:
    if isinstance(value, cls):
        return str(value)
    raise TypeError(f"expected {cls.__name__}, got {type(value).__name__}")


class _TextDumper(Dumper):
    value_class: type[Scope] | type[LabelSet] = Scope

    def dump(self, obj: Any) -> bytes:
        return _text(obj, self.value_class).encode()


class _BinaryDumper(_TextDumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return bytes([FORMAT_VERSION]) + _text(obj, self.value_class).encode()


class _TextLoader(Loader):
    value_class: type[Scope] | type[LabelSet] = Scope

    def load(self, data: Buffer) -> Any:
        return self.value_class(bytes(data).decode())


class _BinaryLoader(_TextLoader):
    format = Format.BINARY

    def load(self, data: Buffer) -> Any:
        raw = bytes(data)
        if not raw or raw[0] != FORMAT_VERSION:
            raise psycopg.DataError(
                f"unsupported binary format of {self.value_class.__name__}: "
                f"{raw[:1].hex() or 'empty'}"
            )
        return self.value_class(raw[1:].decode())


def _names(schema: str) -> tuple[sql.Identifier, sql.Identifier]:
    return sql.Identifier(schema, "scope"), sql.Identifier(schema, "labelset")


def _install(context: AdaptContext, scope: TypeInfo | None, labelset: TypeInfo | None) -> None:
    if scope is None or labelset is None:
        raise ExtensionMissing(
            "pg_labels is installed but its types scope and labelset are missing"
        )
    adapters = context.adapters
    for info, cls in ((scope, Scope), (labelset, LabelSet)):
        attrs: dict[str, object] = {"oid": info.oid, "value_class": cls}
        for base in (_TextDumper, _BinaryDumper):
            adapters.register_dumper(cls, type(f"{cls.__name__}{base.__name__}", (base,), attrs))
        for lbase in (_TextLoader, _BinaryLoader):
            adapters.register_loader(
                info.oid, type(f"{cls.__name__}{lbase.__name__}", (lbase,), {"value_class": cls})
            )
        info.register(context)


def _missing() -> ExtensionMissing:
    return ExtensionMissing(
        "the extension pg_labels is not installed in this database (CREATE EXTENSION pg_labels)"
    )


def register(conn: psycopg.Connection[Any]) -> None:
    """Make a psycopg 3 connection read ``scope`` and ``labelset`` values as :class:`Scope`
    and :class:`LabelSet` and send those (text and binary formats).

    The types are found by name in the schema the extension was created in. Raises
    :class:`ExtensionMissing` when the database has no pg_labels. For an
    ``AsyncConnection`` use ``await register_async(conn)``.
    """
    if isinstance(conn, psycopg.AsyncConnection):
        raise TypeError("register() takes a psycopg Connection; use await register_async(conn)")
    if not isinstance(conn, psycopg.Connection):
        raise TypeError(f"register() takes a psycopg Connection, not {type(conn).__name__}")
    # Reading the catalog starts a transaction on a connection that is not in autocommit
    # mode: end it again when there was none, so the caller's state is as it was.
    idle = not conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE
    try:
        row = conn.execute(EXTENSION_SCHEMA).fetchone()
        if row is None:
            raise _missing()
        scope_name, labelset_name = _names(row[0])
        _install(conn, TypeInfo.fetch(conn, scope_name), TypeInfo.fetch(conn, labelset_name))
    finally:
        if idle and not conn.closed:
            conn.rollback()


async def register_async(conn: psycopg.AsyncConnection[Any]) -> None:
    """:func:`register` for a psycopg 3 ``AsyncConnection`` (finding the types is a query,
    so it is awaited)."""
    if not isinstance(conn, psycopg.AsyncConnection):
        raise TypeError(
            f"register_async() takes a psycopg AsyncConnection, not {type(conn).__name__}"
        )
    idle = not conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE
    try:
        cur = await conn.execute(EXTENSION_SCHEMA)
        row = await cur.fetchone()
        if row is None:
            raise _missing()
        scope_name, labelset_name = _names(row[0])
        _install(
            conn,
            await TypeInfo.fetch(conn, scope_name),
            await TypeInfo.fetch(conn, labelset_name),
        )
    finally:
        if idle and not conn.closed:
            await conn.rollback()
