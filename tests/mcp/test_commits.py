"""An allowed call through the gateway is two commits (issue 50): the gate's ``gate_decided``
step and the call's ``tool_called`` step in one transaction, committed before the upstream
runs (the upstream reads it on a connection of its own), then the ``tool_result`` step,
committed before the client reads the result; the commits counted in the WAL (pg_walinspect).
And the gate's transaction when something in it fails: a ``tool_called`` step refused after
the gate allowed (the gate's decision stays on the record, the refusal in refused_writes), a
gate that fails (nothing is committed, the connection is usable again)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from psycopg.pq import TransactionStatus

import pg_labels._platform._async as platform_async
from pg_labels import AsyncPlatform, AsyncRun, LabelSet, Scope
from pg_labels.mcp.guard import GatewayGuard

from conftest import (
    PLATFORM,
    connect,
    dsn,
    gateway_args,
    runs_of,
    stdio_gateway,
    text,
    write_config,
)

COMMITS = (
    "SELECT xid::text, description FROM pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn) "
    "WHERE resource_manager = 'Transaction' AND record_type = 'COMMIT' ORDER BY start_lsn"
)


def wal_position() -> str:
    with connect() as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    return str(row[0])


def commits_between(start: str, end: str) -> list[tuple[int, list[int]]]:
    """The COMMIT records written between two WAL positions: (xid, its subtransactions)."""
    with connect() as conn:
        # a durable commit of its own flushes what came before (pg_walinspect reads no further)
        conn.execute("SELECT pg_current_xact_id()")
        conn.commit()
        # (and pg_walinspect reads only what is flushed: wait for the WAL writer if need be)
        for _ in range(200):
            flushed = conn.execute(
                "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", [end]
            ).fetchone()
            if flushed and flushed[0]:
                break
            time.sleep(0.05)
        rows = conn.execute(COMMITS, [start, end]).fetchall()
    out = []
    for xid, description in rows:
        found = re.search(r"subxacts:((?: \d+)+)", description)
        out.append((int(xid), [int(s) for s in found.group(1).split()] if found else []))
    return out


def steps_with_xmin(run: uuid.UUID) -> list[tuple[str, Any, int]]:
    """The run's steps: (kind, args, the transaction that wrote it), in order."""
    with connect() as conn:
        rows = conn.execute(
            "SELECT kind, args, xmin::text FROM pg_labels.steps WHERE run_id = %s ORDER BY id",
            [run],
        ).fetchall()
    return [(r[0], r[1], int(r[2])) for r in rows]


def walinspect() -> bool:
    with connect() as conn:
        if conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_walinspect'"
        ).fetchone():
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            return True
    return False


async def test_an_allowed_call_is_two_commits(tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    calls.touch()
    # its output trusted: every call is allowed (an untrusted result would make the next ask)
    config, agent = write_config(
        tmp_path / "gw.toml",
        everything=None,
        counting=calls,
        counting_reads=dsn(),
        tools={"counting.note": {"trusted": True}},
    )
    counted = walinspect()
    commits: list[int] = []
    async with stdio_gateway(gateway_args(config)) as session:
        # the first call opens the session's run (a commit of its own)
        tag = uuid.uuid4().hex[:8]
        first = await session.call_tool("counting.note", {"text": f"{tag} first"})
        assert not first.is_error, text(first)
        # the server's own work (autovacuum) may commit meanwhile: the count is taken again
        # when it exceeds two, the calls' own transactions are checked each time
        for attempt in range(3):
            note = f"{tag} call {attempt}"
            start = wal_position()
            result = await session.call_tool("counting.note", {"text": note})
            end = wal_position()
            assert not result.is_error, text(result)
            assert text(result) == f"noted {note}"
            [(run, _, _)] = runs_of(agent)
            mine = steps_with_xmin(run)[-3:]
            assert [s[:2] for s in mine] == [
                ("gate_decided", {"text": note}),
                ("tool_called", {"text": note}),
                ("tool_result", None),
            ]
            (_, _, gate), (_, _, called), (_, _, result_xid) = mine
            if not counted:
                continue
            records = commits_between(start, end)
            by_xid = dict(records)
            # one commit for the gate and the call (the call in a subtransaction of the
            # gate's: its savepoint), one for the result, in that order
            assert gate in by_xid and called in by_xid[gate] + [gate], records
            assert called not in by_xid or called == gate, records
            assert result_xid in by_xid and result_xid != gate, records
            assert [x for x, _ in records if x in (gate, result_xid)] == [gate, result_xid]
            commits.append(len(records))
            if len(records) <= 2:
                break
    # the upstream ran after the call's tool_called step was committed: it read it
    lines = [line.split("\t") for line in calls.read_text().splitlines()]
    assert lines and all(int(fields[2]) == 1 for fields in lines), lines
    if not counted:
        pytest.skip("pg_walinspect is not available: the commits were not counted")
    assert min(commits) <= 2, commits


async def _guarded(conn: psycopg.AsyncConnection[Any]) -> tuple[GatewayGuard, AsyncRun]:
    run = await AsyncPlatform(conn).open_run(f"mcp-commits-{uuid.uuid4().hex[:8]}", "acme/platform")
    return GatewayGuard(run), run


def read_tool() -> str:
    """A tool of the DBA's that only reads (the gate allows it in any run)."""
    tool = f"commits.read_{uuid.uuid4().hex[:8]}"
    with connect() as conn:
        conn.execute("INSERT INTO pg_labels.tools (name, effect) VALUES (%s, 'read')", [tool])
    return tool


# with libpq's pipeline (libpq 14 or later), and a statement at a time (older libpq)
PIPELINE = pytest.mark.parametrize("pipeline", [True, False], ids=["pipeline", "statements"])


def pipelined(monkeypatch: pytest.MonkeyPatch, pipeline: bool) -> None:
    """Without a pipeline: as where libpq has none (AsyncRun.gate_and_call then sends a
    statement at a time)."""
    if not pipeline:
        monkeypatch.setattr(psycopg.AsyncPipeline, "is_supported", staticmethod(lambda: False))


@PIPELINE
async def test_a_call_refused_after_the_gate_allowed_keeps_the_gate(
    monkeypatch: pytest.MonkeyPatch, pipeline: bool
) -> None:
    """The catalog changes between the gate and the call (here: the call names a tool the
    catalog does not have): the call is refused with the database's rule, the gate's decision
    is committed as when the two were transactions of their own, the refusal is in
    refused_writes, and the connection goes on."""
    pipelined(monkeypatch, pipeline)
    tool = read_tool()
    async with await psycopg.AsyncConnection.connect(dsn(PLATFORM), autocommit=True) as conn:
        guard, run = await _guarded(conn)
        real = platform_async._step_statement
        gone = f"commits.gone_{uuid.uuid4().hex[:8]}"

        def renamed(run_id: uuid.UUID, kind: str, **columns: object) -> Any:
            return real(run_id, kind, **{**columns, "tool": gone})

        monkeypatch.setattr(platform_async, "_step_statement", renamed)
        verdict = await guard.acheck(tool, {"q": 1})
        monkeypatch.setattr(platform_async, "_step_statement", real)
        assert verdict.decision == "block" and verdict.rule == "unknown_tool", verdict
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert [(s[0], s[1]) for s in steps_with_xmin(run.id)] == [("gate_decided", {"q": 1})]
        with connect() as admin:
            assert admin.execute(
                "SELECT decision FROM pg_labels.steps WHERE run_id = %s", [run.id]
            ).fetchall() == [("allow",)]
            with anyio.fail_after(30):
                while not admin.execute(
                    "SELECT 1 FROM pg_labels.refused_writes WHERE run_id = %s AND tool = %s "
                    "AND rule = 'unknown_tool'",
                    [run.id, gone],
                ).fetchone():
                    await anyio.sleep(0.05)
        # the next call on the same connection is allowed and recorded
        allowed = await guard.acheck(tool, {"q": 2})
        assert allowed.allowed, allowed
        assert [s[0] for s in steps_with_xmin(run.id)] == [
            "gate_decided",
            "gate_decided",
            "tool_called",
        ]


@PIPELINE
async def test_a_gate_that_fails_commits_nothing(
    monkeypatch: pytest.MonkeyPatch, pipeline: bool
) -> None:
    """The gate fails (a run that is not there): the call is refused, nothing is committed,
    the connection is idle and serves the next call."""
    pipelined(monkeypatch, pipeline)
    tool = read_tool()
    async with await psycopg.AsyncConnection.connect(dsn(PLATFORM), autocommit=True) as conn:
        guard, run = await _guarded(conn)
        missing = AsyncRun(
            run.platform, uuid.uuid4(), run.agent, Scope("acme/platform"), LabelSet()
        )
        failing = GatewayGuard(missing)
        verdict = await failing.acheck(tool, {"q": 1})
        assert not verdict.allowed, verdict
        assert conn.info.transaction_status == TransactionStatus.IDLE
        with connect() as admin:
            assert admin.execute(
                "SELECT count(*) FROM pg_labels.steps WHERE run_id = %s", [missing.id]
            ).fetchone() == (0,)
        allowed = await guard.acheck(tool, {"q": 2})
        assert allowed.allowed, allowed
        assert [s[0] for s in steps_with_xmin(run.id)] == ["gate_decided", "tool_called"]


@PIPELINE
async def test_a_cancelled_call_leaves_the_connection_idle(
    monkeypatch: pytest.MonkeyPatch, pipeline: bool
) -> None:
    """The caller cancels gate_and_call while the gate waits (here for a lock on the run's row
    held by another session; psycopg cancels the statement): nothing of the call is committed,
    and the connection, in autocommit mode, is idle, not left in a failed transaction that
    refuses every call after it."""
    pipelined(monkeypatch, pipeline)
    tool = read_tool()
    async with await psycopg.AsyncConnection.connect(dsn(PLATFORM), autocommit=True) as conn:
        guard, run = await _guarded(conn)
        with connect() as admin:
            with admin.transaction():
                admin.execute("SELECT 1 FROM pg_labels.runs WHERE id = %s FOR UPDATE", [run.id])
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(run.gate_and_call(tool, {"q": 1}), 0.5)
                assert conn.info.transaction_status == TransactionStatus.IDLE
        assert steps_with_xmin(run.id) == []
        allowed = await guard.acheck(tool, {"q": 2})
        assert allowed.allowed, allowed
        assert [(s[0], s[1]) for s in steps_with_xmin(run.id)] == [
            ("gate_decided", {"q": 2}),
            ("tool_called", {"q": 2}),
        ]
