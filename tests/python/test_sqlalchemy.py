"""pg_labels.sqlalchemy: ScopeType and LabelSetType columns, with psycopg and asyncpg."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, event, insert, select, text
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.ext.asyncio import create_async_engine

import pg_labels
from pg_labels import InvalidValue, LabelSet, Scope
from pg_labels.sqlalchemy import LabelSetType, ScopeType

metadata = MetaData()
items = Table(
    "py_items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("scope", ScopeType(), nullable=False),
    Column("labels", LabelSetType()),
)


def url(driver: str) -> str:
    return (
        f"postgresql+{driver}://{os.environ['PGUSER']}@/{os.environ['PGDATABASE']}"
        f"?host={os.environ['PGHOST']}&port={os.environ['PGPORT']}"
    )


@pytest.mark.parametrize("registered", [False, True])
def test_psycopg_engine(registered: bool) -> None:
    engine = create_engine(url("psycopg"))
    if registered:
        event.listen(engine, "connect", lambda dbapi_conn, _: pg_labels.register(dbapi_conn))
    try:
        with engine.begin() as conn:
            metadata.drop_all(conn)
            metadata.create_all(conn)
            conn.execute(
                insert(items),
                [
                    {"id": 1, "scope": Scope("acme/platform"), "labels": LabelSet("{tag:a}")},
                    {"id": 2, "scope": "acme", "labels": None},
                ],
            )
            rows = conn.execute(select(items).order_by(items.c.id)).all()
            assert [tuple(r) for r in rows] == [
                (1, Scope("acme/platform"), LabelSet("{tag:a}")),
                (2, Scope("acme"), None),
            ]
            found = conn.execute(
                select(items.c.id).where(items.c.scope == Scope("acme/platform"))
            ).all()
            assert [r[0] for r in found] == [1]
            # checked before anything is sent (SQLAlchemy wraps the error)
            with pytest.raises(StatementError) as e:
                conn.execute(insert(items), {"id": 3, "scope": 42})
            assert isinstance(e.value.orig, TypeError)
            with pytest.raises(StatementError) as e:
                conn.execute(insert(items), {"id": 3, "scope": "Acme"})
            assert isinstance(e.value.orig, InvalidValue)
            metadata.drop_all(conn)
    finally:
        engine.dispose()


async def test_asyncpg_engine() -> None:
    engine = create_async_engine(url("asyncpg"))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.drop_all)
            await conn.run_sync(metadata.create_all)
            await conn.execute(
                insert(items), [{"id": 1, "scope": Scope("acme"), "labels": LabelSet()}]
            )
            rows = (await conn.execute(select(items))).all()
            assert [tuple(r) for r in rows] == [(1, Scope("acme"), LabelSet())]
            await conn.run_sync(metadata.drop_all)
    finally:
        await engine.dispose()


def test_refusals_through_sqlalchemy() -> None:
    """refusal_from() finds the driver's error inside SQLAlchemy's wrapper."""
    engine = create_engine(url("psycopg"))
    try:
        with engine.connect() as conn, pytest.raises(DBAPIError) as e:
            conn.execute(
                text(
                    "INSERT INTO pg_labels.runs (agent, scope, labels) "
                    "VALUES ('bot', 'acme', '{company:globex}')"
                )
            )
        r = pg_labels.refusal_from(e.value)
        assert isinstance(r, pg_labels.DataBarrier)
        assert r.escaping == LabelSet("{company:globex}")
    finally:
        engine.dispose()


async def test_refusals_through_sqlalchemy_asyncpg() -> None:
    engine = create_async_engine(url("asyncpg"))
    try:
        async with engine.connect() as conn:
            with pytest.raises(DBAPIError) as e:
                await conn.execute(
                    text(
                        "INSERT INTO pg_labels.runs (agent, scope, labels) "
                        "VALUES ('bot', 'acme', '{company:globex}')"
                    )
                )
        r = pg_labels.refusal_from(e.value)
        assert isinstance(r, pg_labels.DataBarrier)
        assert r.escaping == LabelSet("{company:globex}") and r.table == "runs"
    finally:
        await engine.dispose()
