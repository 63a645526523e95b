"""Fixtures: the test database (PGDATABASE, made by run.sh with pg_labels in it), the roles of
the README's roles block under names of their own, and connections as each of them."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple

import asyncpg
import psycopg
import pytest

import pg_labels

PLATFORM = "labels_py_platform"
ALICE = "labels_py_alice"
ANALYST = "labels_py_analyst"
ROLES = (PLATFORM, ALICE, ANALYST)

TOOLS = [
    ("tickets.read", "read", False),
    ("kb.search", "read", True),
    ("tickets.update", "reversible_write", False),
    ("stripe.refund", "financial", False),
    ("files.delete", "destructive", False),
    ("company.search", "read", False),
]


def connect(
    user: str | None = None, *, dbname: str | None = None, autocommit: bool = False
) -> psycopg.Connection:
    return psycopg.connect(
        dbname=dbname or os.environ["PGDATABASE"],
        user=user or os.environ["PGUSER"],
        autocommit=autocommit,
    )


async def aconnect(
    user: str | None = None, *, dbname: str | None = None, autocommit: bool = False
) -> psycopg.AsyncConnection:
    """:func:`connect` for the async tests."""
    return await psycopg.AsyncConnection.connect(
        dbname=dbname or os.environ["PGDATABASE"],
        user=user or os.environ["PGUSER"],
        autocommit=autocommit,
    )


def _drop_roles(conn: psycopg.Connection) -> None:
    for role in ROLES:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        if exists:
            conn.execute(psycopg.sql.SQL("DROP OWNED BY {}").format(psycopg.sql.Identifier(role)))
            conn.execute(psycopg.sql.SQL("DROP ROLE {}").format(psycopg.sql.Identifier(role)))


@pytest.fixture(scope="session", autouse=True)
def database() -> Iterator[None]:
    """The README's roles block, as the superuser: the tool catalog, a platform writer, an
    approver and an analyst with a grant."""
    with connect(autocommit=True) as conn:
        _drop_roles(conn)
        q = psycopg.sql.SQL
        ident = psycopg.sql.Identifier
        conn.cursor().executemany(
            "INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO NOTHING",
            TOOLS,
        )
        for role in ROLES:
            conn.execute(q("CREATE ROLE {} LOGIN").format(ident(role)))
            conn.execute(q("GRANT USAGE ON SCHEMA pg_labels TO {}").format(ident(role)))
        conn.execute(
            q(
                "GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, "
                "pg_labels.shares, pg_labels.agent_versions TO {}"
            ).format(ident(PLATFORM))
        )
        conn.execute(
            q(
                "GRANT SELECT ON pg_labels.tools, pg_labels.listeners, "
                "pg_labels.approval_points, pg_labels.approval_requests TO {}"
            ).format(ident(PLATFORM))
        )
        conn.execute(
            q(
                "GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO {}"
            ).format(ident(ALICE))
        )
        conn.execute(
            q("GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.trail TO {}").format(
                ident(ANALYST)
            )
        )
        conn.execute(
            "INSERT INTO pg_labels.grants (role, scope) VALUES (%s, 'acme/platform') "
            "ON CONFLICT DO NOTHING",
            [ANALYST],
        )
        # where the writer and the approver act: the company whose areas the tests use
        for role in (PLATFORM, ALICE):
            conn.execute(
                "INSERT INTO pg_labels.grants (role, scope) VALUES (%s, 'acme') "
                "ON CONFLICT DO NOTHING",
                [role],
            )
    yield
    with connect(autocommit=True) as conn:
        _drop_roles(conn)


def trail(run_id: object) -> list[tuple[str, str | None, str | None, str | None]]:
    """A run's steps as the superuser reads them: (kind, tool, decision, rule), in order."""
    with connect(autocommit=True) as conn:
        rows = conn.execute(
            "SELECT kind, tool, decision, rule FROM pg_labels.steps WHERE run_id = %s ORDER BY id",
            [run_id],
        ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def used_approvals(run_id: object) -> list[int]:
    """The approval requests the run's tool calls used."""
    with connect(autocommit=True) as conn:
        rows = conn.execute(
            "SELECT request_id FROM pg_labels.steps WHERE run_id = %s AND kind = 'tool_called' "
            "AND request_id IS NOT NULL ORDER BY id",
            [run_id],
        ).fetchall()
    return [int(r[0]) for r in rows]


def labels_of(step_id: int) -> str:
    with connect(autocommit=True) as conn:
        row = conn.execute("SELECT labels::text FROM pg_labels.steps WHERE id = %s", [step_id])
        return str(_one(row.fetchone()))


def _one(row: tuple[object, ...] | None) -> object:
    assert row is not None
    return row[0]


@pytest.fixture
def admin() -> Iterator[psycopg.Connection]:
    with connect(autocommit=True) as conn:
        yield conn


@pytest.fixture
def platform_conn() -> Iterator[psycopg.Connection]:
    with connect(PLATFORM, autocommit=True) as conn:
        yield conn


@pytest.fixture
def platform(platform_conn: psycopg.Connection) -> pg_labels.Platform:
    return pg_labels.Platform(platform_conn)


@pytest.fixture
def approver() -> Iterator[pg_labels.Platform]:
    with connect(ALICE, autocommit=True) as conn:
        yield pg_labels.Platform(conn)


@pytest.fixture
def dba(admin: psycopg.Connection) -> pg_labels.Platform:
    """The platform's calls as the DBA (the superuser)."""
    return pg_labels.Platform(admin)


# The async tests: test_platform_async.py (whose twin test_platform.py is generated from it by
# python/tools/async_to_sync.py, aplatform becoming platform, ...) and test_async.py, each on
# psycopg's AsyncConnection and on asyncpg.


@pytest.fixture(params=["psycopg", "asyncpg"])
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _adriver_connect(driver: str, user: str | None) -> Any:
    """An autocommit connection of ``driver`` (asyncpg: outside a transaction block)."""
    if driver == "psycopg":
        return await aconnect(user, autocommit=True)
    conn = await asyncpg.connect(
        database=os.environ["PGDATABASE"], user=user or os.environ["PGUSER"]
    )
    # a jsonb codec of the application's own: args are still sent right
    await conn.set_type_codec("jsonb", schema="pg_catalog", encoder=json.dumps, decoder=json.loads)
    return conn


async def _aplatform(driver: str, user: str | None) -> AsyncIterator[pg_labels.AsyncPlatform]:
    conn = await _adriver_connect(driver, user)
    try:
        yield pg_labels.AsyncPlatform(conn)
    finally:
        await conn.close()


@pytest.fixture
async def aplatform(driver: str) -> AsyncIterator[pg_labels.AsyncPlatform]:
    async for platform in _aplatform(driver, PLATFORM):
        yield platform


@pytest.fixture
async def aapprover(driver: str) -> AsyncIterator[pg_labels.AsyncPlatform]:
    async for platform in _aplatform(driver, ALICE):
        yield platform


@pytest.fixture
async def adba(driver: str) -> AsyncIterator[pg_labels.AsyncPlatform]:
    async for platform in _aplatform(driver, None):
        yield platform


class DriverErrors(NamedTuple):
    """The driver's errors a test expects where the database refuses (not pg_labels)."""

    integrity: type[Exception]
    insufficient_privilege: type[Exception]
    closed: type[Exception]


def errors(platform: pg_labels.Platform | pg_labels.AsyncPlatform) -> DriverErrors:
    """The errors of the platform's driver: psycopg's (either form), or asyncpg's."""
    if isinstance(platform.conn, (psycopg.Connection, psycopg.AsyncConnection)):
        return DriverErrors(
            psycopg.IntegrityError, psycopg.errors.InsufficientPrivilege, psycopg.OperationalError
        )
    # asyncpg has a class only for the SQLSTATEs it knows: a refusal's own (23L02) is its
    # UnknownPostgresError, where psycopg goes by the class (23, an IntegrityError)
    return DriverErrors(
        asyncpg.PostgresError,
        asyncpg.InsufficientPrivilegeError,
        asyncpg.InterfaceError,
    )
