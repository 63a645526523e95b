"""refusal_from() and the classes: the refusals of plain INSERTs, read back as exceptions."""

from __future__ import annotations

import pickle
import uuid

import psycopg
import pytest

import pg_labels
from pg_labels import (
    ApprovalRequired,
    DataBarrier,
    LabelSet,
    Refusal,
    Sealed,
    UnknownTool,
    UntrustedToIrreversible,
    refusal_from,
)

from conftest import PLATFORM, connect


def refused(conn: psycopg.Connection, query: str, params: list[object]) -> Refusal:
    with pytest.raises(psycopg.Error) as e:
        conn.execute(query, params)
    r = refusal_from(e.value)
    assert r is not None, e.value
    return r


def open_run(conn: psycopg.Connection, scope: str = "acme/platform") -> uuid.UUID:
    row = conn.execute(
        "INSERT INTO pg_labels.runs (agent, scope) VALUES ('bot', %s) RETURNING id", [scope]
    ).fetchone()
    assert row is not None
    run: uuid.UUID = row[0]
    return run


STEP = (
    "INSERT INTO pg_labels.steps (run_id, kind, tool, labels) "
    "VALUES (%s, %s, %s, coalesce(%s, '{}'::labelset))"
)


def test_classes_are_not_integrity_errors() -> None:
    for cls in (
        Refusal,
        DataBarrier,
        UntrustedToIrreversible,
        ApprovalRequired,
        UnknownTool,
        Sealed,
    ):
        assert not issubclass(cls, psycopg.IntegrityError)
        assert issubclass(cls, Refusal) and issubclass(cls, Exception)
    assert DataBarrier.SQLSTATE == "23L01" and Sealed.SQLSTATE == "23L05"


def test_each_rule_its_class() -> None:
    with connect(PLATFORM, autocommit=True) as conn:
        pg_labels.register(conn)
        run = open_run(conn)
        conn.execute(STEP, [run, "input", None, LabelSet("{origin:slack/T01/C02}")])

        r = refused(conn, STEP, [run, "tool_called", "stripe.refund", None])
        assert type(r) is UntrustedToIrreversible
        assert (r.rule, r.sqlstate, r.constraint, r.table) == (
            "untrusted_to_irreversible",
            "23L02",
            "untrusted_to_irreversible",
            "steps",
        )
        assert r.run_id == run and r.tool == "stripe.refund"
        assert r.origins == LabelSet("{origin:slack/T01/C02}") and r.escaping == LabelSet()
        assert str(r).startswith("untrusted_to_irreversible: financial tool stripe.refund")
        assert r.detail and r.hint and f"DETAIL:  {r.detail}" in str(r)
        copy = pickle.loads(pickle.dumps(r))
        assert type(copy) is UntrustedToIrreversible and copy.__dict__ == r.__dict__
        assert str(copy) == str(r)

        r = refused(conn, STEP, [run, "tool_called", "tickets.update", None])
        assert type(r) is ApprovalRequired and r.tool == "tickets.update"
        assert r.origins == LabelSet("{origin:slack/T01/C02}")

        r = refused(conn, STEP, [run, "tool_called", "no.such.tool", None])
        assert type(r) is UnknownTool and r.tool == "no.such.tool" and r.run_id == run

        conn.execute(STEP, [run, "input", None, LabelSet("{area:acme/finance}")])
        r = refused(conn, STEP, [run, "tool_called", "kb.search", None])
        assert type(r) is DataBarrier
        assert r.escaping == LabelSet("{area:acme/finance}") and r.tool == "kb.search"
        assert r.run_id == run

    # sealed holds for the superuser too
    with connect(autocommit=True) as conn:
        r = refused(conn, "UPDATE pg_labels.runs SET scope = 'acme' WHERE id = %s", [run])
        assert type(r) is Sealed and (r.rule, r.sqlstate) == ("sealed", "23L05")
        r = refused(conn, "DELETE FROM pg_labels.steps WHERE run_id = %s", [run])
        assert type(r) is Sealed


def test_run_not_opened_and_checks() -> None:
    with connect(PLATFORM, autocommit=True) as conn:
        r = refused(
            conn,
            "INSERT INTO pg_labels.runs (agent, scope, labels) VALUES ('bot', 'acme/platform', %s)",
            ["{company:globex,area:acme/platform}"],
        )
        assert type(r) is DataBarrier and r.escaping == LabelSet("{company:globex}")
        assert r.table == "runs" and r.run_id is not None

        missing = uuid.uuid4()
        r = refused(conn, STEP, [missing, "input", None, None])
        assert type(r) is Refusal and r.rule is None
        assert (r.sqlstate, r.constraint) == ("23503", "steps_run_id_fkey")
        assert r.run_id == missing

        run = open_run(conn)
        r = refused(
            conn,
            "INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES (%s, 'input', %s)",
            [run, uuid.uuid4()],
        )
        assert (r.sqlstate, r.constraint, r.rule) == ("23514", "steps_shape_check", None)

        # (the writer's grant is acme: it may not enter globex)
        r = refused(conn, "SELECT pg_labels.enter_scope('globex')", [])
        assert r.sqlstate == "42501" and r.table == "grants"
        r = refused(conn, "INSERT INTO pg_labels.runs (agent, scope) VALUES ('b', 'globex/x')", [])
        assert (r.sqlstate, r.constraint, r.table) == ("42501", "scope_not_granted", "grants")


def test_not_refusals() -> None:
    with connect(autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE t (id int PRIMARY KEY, CHECK (id > 0))")
        conn.execute("INSERT INTO t VALUES (1)")
        for query in ("INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (-1)", "SELECT 1/0"):
            with pytest.raises(psycopg.Error) as e:
                conn.execute(query)
            assert refusal_from(e.value) is None
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT 'X'::scope")
        assert refusal_from(e.value) is None  # a malformed literal is a data error, not a refusal
    assert refusal_from(ValueError("x")) is None


def test_capped_lists() -> None:
    """A DETAIL lists at most 20 labels, then how many more: the listed ones are read."""
    with connect(PLATFORM, autocommit=True) as conn:
        many = LabelSet([f"company:c{i:02d}" for i in range(25)])
        with pytest.raises(psycopg.Error) as e:
            conn.execute(
                "INSERT INTO pg_labels.runs (agent, scope, labels) VALUES ('b', 'acme', %s)",
                [str(many)],
            )
        r = refusal_from(e.value)
        assert isinstance(r, DataBarrier)
        assert len(r.escaping) == 20 and r.escaping <= many
