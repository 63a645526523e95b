"""Fixtures: the test database (PGDATABASE, made by run.sh with pg_labels in it), the roles of
the README's roles block under names of their own, and connections as each of them."""

from __future__ import annotations

import os
from collections.abc import Iterator

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
                "pg_labels.approval_points TO {}"
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
