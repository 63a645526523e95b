"""pg_labels.asyncpg.register() and refusals of asyncpg errors."""

from __future__ import annotations

import os

import asyncpg
import pytest

import pg_labels.asyncpg
from pg_labels import (
    DataBarrier,
    ExtensionMissing,
    LabelSet,
    Refusal,
    Scope,
    UntrustedToIrreversible,
    refusal_from,
)

from conftest import PLATFORM


async def test_round_trip_and_refusals() -> None:
    conn = await asyncpg.connect(database=os.environ["PGDATABASE"], user=PLATFORM)
    try:
        await pg_labels.asyncpg.register(conn)
        row = await conn.fetchrow(
            "SELECT $1::scope AS s, $2::labelset AS l, NULL::scope AS n",
            Scope("acme/platform"),
            LabelSet("{tag:b, tag:a}"),
        )
        assert (row["s"], row["l"], row["n"]) == (
            Scope("acme/platform"),
            LabelSet("{tag:a,tag:b}"),
            None,
        )
        run = await conn.fetchval(
            "INSERT INTO pg_labels.runs (agent, scope) VALUES ('bot', $1) RETURNING id",
            Scope("acme/platform"),
        )
        await conn.execute(
            "INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ($1, 'input', $2)",
            run,
            LabelSet("{origin:webhook}"),
        )
        with pytest.raises(asyncpg.PostgresError) as e:
            await conn.execute(
                "INSERT INTO pg_labels.steps (run_id, kind, tool) "
                "VALUES ($1, 'tool_called', 'files.delete')",
                run,
            )
        r = refusal_from(e.value)
        assert isinstance(r, UntrustedToIrreversible)
        assert r.run_id == run and r.origins == LabelSet("{origin:webhook}")
        with pytest.raises(asyncpg.PostgresError) as e:
            await conn.execute(
                "INSERT INTO pg_labels.runs (agent, scope, labels) VALUES ('b', 'acme', $1)",
                LabelSet("{company:globex}"),
            )
        r = refusal_from(e.value)
        assert isinstance(r, DataBarrier) and r.escaping == LabelSet("{company:globex}")
        assert isinstance(r, Refusal) and not isinstance(
            r, asyncpg.IntegrityConstraintViolationError
        )
        assert await conn.fetchval("SELECT $1::scope", "acme") == Scope("acme")
        with pytest.raises(asyncpg.DataError) as d:
            await conn.fetchval("SELECT $1::scope", 42)
        assert isinstance(d.value.__cause__, TypeError)
        with pytest.raises(asyncpg.DataError) as d:
            await conn.fetchval("SELECT $1::labelset", "{nope}")
        assert isinstance(d.value.__cause__, ValueError)
    finally:
        await conn.close()


async def test_extension_missing() -> None:
    conn = await asyncpg.connect(database=os.environ["PG_LABELS_BARE_DB"])
    try:
        with pytest.raises(ExtensionMissing):
            await pg_labels.asyncpg.register(conn)
        with pytest.raises(TypeError):
            await pg_labels.asyncpg.register("conn")
    finally:
        await conn.close()
