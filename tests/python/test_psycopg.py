"""register() and register_async(): psycopg 3 reads and writes both types, text and binary."""

from __future__ import annotations

import os

import psycopg
import pytest

import pg_labels
from pg_labels import ExtensionMissing, LabelSet, Scope

from conftest import connect


def test_round_trip_text_and_binary() -> None:
    with connect() as conn:
        pg_labels.register(conn)
        s, ls = Scope("acme/platform"), LabelSet("{origin:slack, area:acme/platform}")
        for binary in (False, True):
            row = conn.execute(
                "SELECT %s::scope, %s::labelset, 'acme'::scope, '{tag:x}'::labelset, "
                "NULL::scope, ARRAY['*'::scope]",
                [s, ls],
                binary=binary,
            ).fetchone()
            assert row == (s, ls, Scope("acme"), LabelSet("{tag:x}"), None, [Scope("*")])
        # what the server computes comes back as values too
        row = conn.execute(
            "SELECT %s::scope @> %s::labelset, labelset_escaping(%s, %s)",
            [s, ls, ls, Scope("acme")],
        ).fetchone()
        assert row == (True, LabelSet())


def test_register_leaves_no_transaction_open() -> None:
    with connect() as conn:
        pg_labels.register(conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        conn.execute("SELECT 1")
        pg_labels.register(conn)  # inside the caller's transaction: left as it is
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.rollback()


def test_wrong_connection_types() -> None:
    with pytest.raises(TypeError):
        pg_labels.register("dbname=x")  # type: ignore[arg-type]


async def test_async_round_trip() -> None:
    async with await psycopg.AsyncConnection.connect(dbname=os.environ["PGDATABASE"]) as conn:
        with pytest.raises(TypeError, match="register_async"):
            pg_labels.register(conn)  # type: ignore[arg-type]
        await pg_labels.register_async(conn)
        cur = await conn.execute("SELECT %s::scope, %s::labelset", [Scope("acme"), LabelSet()])
        assert await cur.fetchone() == (Scope("acme"), LabelSet())


def test_extension_missing_and_other_schema(admin: psycopg.Connection) -> None:
    """Registration finds the types in the extension's schema, whatever it is, and refuses a
    database without the extension."""
    bare = os.environ["PG_LABELS_BARE_DB"]
    with connect(dbname=bare, autocommit=True) as conn:
        with pytest.raises(ExtensionMissing):
            pg_labels.register(conn)
        with pytest.raises(ExtensionMissing):
            pg_labels.Platform(conn)
        conn.execute("CREATE SCHEMA elsewhere")
        conn.execute("CREATE EXTENSION pg_labels SCHEMA elsewhere")
        try:
            with connect(dbname=bare) as other:
                pg_labels.register(other)
                row = other.execute(
                    "SELECT %s::text, %s::text", [Scope("acme/x"), LabelSet("{tag:a}")]
                ).fetchone()
                assert row == ("acme/x", "{tag:a}")
                row = other.execute(
                    "SELECT 'acme'::elsewhere.scope, '{tag:a}'::elsewhere.labelset"
                ).fetchone()
                assert row == (Scope("acme"), LabelSet("{tag:a}"))
        finally:
            conn.execute("DROP EXTENSION pg_labels")
            conn.execute("DROP SCHEMA elsewhere")


def test_dumper_refuses_other_values() -> None:
    with connect() as conn:
        pg_labels.register(conn)
        # a str is sent as text and parsed by the server; a malformed one is its 22P02
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            conn.execute("SELECT %s::scope", ["Acme"])
