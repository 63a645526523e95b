"""asyncpg: reading and writing ``scope`` and ``labelset`` on a connection."""

from __future__ import annotations

from typing import Any

from ._common import EXTENSION_SCHEMA
from ._errors import ExtensionMissing
from ._values import LabelSet, Scope

__all__ = ["register"]


def _encoder(cls: type[Scope] | type[LabelSet]) -> Any:
    def encode(value: object) -> str:
        if isinstance(value, cls):
            return str(value)
        if isinstance(value, str):
            # parsed here, so a malformed literal is refused before it is sent
            return str(cls(value))
        raise TypeError(f"expected {cls.__name__} or str, got {type(value).__name__}")

    return encode


async def register(conn: Any) -> None:
    """Make an asyncpg connection read ``scope`` and ``labelset`` values as :class:`Scope`
    and :class:`LabelSet`, and send those or their text (checked before it is sent), in text
    format. The types are found in the schema the extension was created in. Raises
    :class:`ExtensionMissing` when the database has no pg_labels. A pool registers each
    connection in its ``init`` callback.
    """
    import asyncpg

    if not isinstance(conn, (asyncpg.Connection, asyncpg.pool.PoolConnectionProxy)):
        raise TypeError(f"register() takes an asyncpg Connection, not {type(conn).__name__}")
    schema = await conn.fetchval(EXTENSION_SCHEMA)
    if schema is None:
        raise ExtensionMissing(
            "the extension pg_labels is not installed in this database (CREATE EXTENSION pg_labels)"
        )
    for name, cls in (("scope", Scope), ("labelset", LabelSet)):
        await conn.set_type_codec(
            name, schema=schema, encoder=_encoder(cls), decoder=cls, format="text"
        )
