"""Calls the gateway holds for a person's decision (issue 49): the official MCP client calls a
reversible write on untrusted data; the gateway records the approval request and holds the
call, telling the client how long it has waited (progress notifications); an approver decides
with pg_labels.decide_approval on a connection of its own; the call then runs upstream once
(the counting server writes each call it runs to a file) or is refused with the denial, the
expiry or the client's cancellation (the request withdrawn). And an outsider's attempts on it:
another client cancelling, forged notifications, a flood of waiting calls."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psycopg
import pytest
from mcp.client.session import ClientSession

from conftest import (
    ALICE,
    FINANCE,
    PLATFORM,
    dsn,
    gateway_args,
    http_gateway,
    http_session,
    runs_of,
    stdio_gateway,
    steps_of,
    text,
    write_config,
)

UNTRUSTED = ["origin:event/mcp-client"]
# the application_name of the gateway's listening connection
LISTENER = "pg-labels-mcp approvals"


def held(tmp_path: Path, **settings: object) -> tuple[Path, str, Path]:
    """A gateway whose sessions carry untrusted input from the start (every reversible write
    asks), with the counting server: its config, its agent, the counting server's file."""
    calls = tmp_path / "calls.log"
    calls.touch()
    settings.setdefault("approval_progress", 0.2)
    config, agent = write_config(
        tmp_path / "gw.toml", everything=None, counting=calls, labels=UNTRUSTED, **settings
    )
    return config, agent, calls


def ran(calls: Path) -> list[str]:
    """The texts of the notes the counting server wrote: the calls it ran."""
    return [line.split("\t")[0] for line in calls.read_text().splitlines()]


async def db(user: str | None = None) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(dsn(user), autocommit=True)


async def requests_of(agent: str) -> list[tuple[Any, ...]]:
    """The agent's approval requests: (id, status, decision_reason, tool, args), in order."""
    async with await db() as conn:
        cur = await conn.execute(
            "SELECT id, status, decision_reason, tool, args FROM pg_labels.approval_requests "
            "WHERE agent = %s ORDER BY id",
            [agent],
        )
        return await cur.fetchall()


async def requested(agent: str, n: int = 1, status: str = "pending") -> list[int]:
    """The ids of the agent's first n requests in ``status``, once there are n."""
    with anyio.fail_after(30):
        while True:
            ids = [r[0] for r in await requests_of(agent) if r[1] == status]
            if len(ids) >= n:
                return ids[:n]
            await anyio.sleep(0.05)


async def decide(request: int, granted: bool, reason: str | None = None) -> float:
    """The approver decides on a connection of its own: when its COMMIT returned."""
    async with await db(ALICE) as conn:
        await conn.execute(
            "SELECT pg_labels.decide_approval(%s, %s, %s)", [request, granted, reason]
        )
        return time.monotonic()


class Call:
    """A call made in a task of its own: its result, and the progress it was told."""

    def __init__(self) -> None:
        self.result: types.CallToolResult | None = None
        self.progress: list[tuple[float, float, float | None, str | None]] = []
        self.done = anyio.Event()

    async def run(self, session: ClientSession, name: str, args: dict[str, Any]) -> None:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.progress.append((time.monotonic(), value, total, message))

        try:
            self.result = await session.call_tool(name, args, progress_callback=progress)
        finally:
            self.done.set()


@contextlib.asynccontextmanager
async def calling(
    session: ClientSession, name: str, args: dict[str, Any]
) -> AsyncIterator[tuple[Call, anyio.abc.TaskGroup]]:
    call = Call()
    async with anyio.create_task_group() as tg:
        tg.start_soon(call.run, session, name, args)
        yield call, tg


async def test_a_held_call_runs_once_when_granted(tmp_path: Path) -> None:
    config, agent, calls = held(tmp_path)
    async with stdio_gateway(gateway_args(config)) as session:
        async with calling(session, "counting.note", {"text": "hello"}) as (call, _):
            [request] = await requested(agent)
            # the call waits: nothing ran, the client hears how long it has waited
            await anyio.sleep(0.8)
            assert not call.done.is_set() and ran(calls) == []
            granted_at = await decide(request, True, "fine")
            with anyio.fail_after(10):
                await call.done.wait()
        assert call.result is not None and not call.result.is_error, text(call.result)
        assert text(call.result) == "noted hello"
        assert ran(calls) == ["hello"]
        waited = [p for p in call.progress if p[0] < granted_at]
        assert len(waited) >= 2, call.progress
        assert all(p[2] == 120 and f"approval request {request}" in (p[3] or "") for p in waited)
        assert [p[1] for p in waited] == sorted(p[1] for p in waited)
        # the same call again asks anew: a grant lets one call through
        async with calling(session, "counting.note", {"text": "hello"}) as (again, _):
            second = await requested_after(agent, request)
            await decide(second, False, "once is enough")
            with anyio.fail_after(10):
                await again.done.wait()
        assert again.result is not None and again.result.is_error
        assert ran(calls) == ["hello"]

    rows = await requests_of(agent)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows[:1]] == [
        (request, "granted", "fine", "counting.note", {"text": "hello"})
    ]
    [(run, _, _)] = runs_of(agent)
    trail = steps_of(run)
    used = [s[6] for s in trail if s[0] == "tool_called"]
    assert used == [request]
    assert [s[0] for s in trail if s[0] in ("tool_called", "tool_result")] == [
        "tool_called",
        "tool_result",
    ]


async def requested_after(agent: str, known: int) -> int:
    """The id of a pending request of the agent's newer than ``known``."""
    with anyio.fail_after(30):
        while True:
            ids = [r[0] for r in await requests_of(agent) if r[1] == "pending" and r[0] > known]
            if ids:
                return int(ids[0])
            await anyio.sleep(0.05)


async def test_a_denial_returns_its_reason(tmp_path: Path) -> None:
    config, agent, calls = held(tmp_path)
    async with stdio_gateway(gateway_args(config)) as session:
        async with calling(session, "counting.note", {"text": "friday"}) as (call, _):
            [request] = await requested(agent)
            await decide(request, False, "not on a Friday")
            with anyio.fail_after(10):
                await call.done.wait()
        assert call.result is not None and call.result.is_error
        message = text(call.result)
        assert f"a person denied approval request {request}: not on a Friday" in message
        assert "Nothing was called" in message
    assert ran(calls) == []
    assert [r[1] for r in await requests_of(agent)] == ["denied"]


async def test_an_expired_request_returns_expiry_and_cannot_be_granted(tmp_path: Path) -> None:
    config, agent, calls = held(tmp_path, approval_wait=1.5)
    async with stdio_gateway(gateway_args(config)) as session:
        started = time.monotonic()
        result = await session.call_tool("counting.note", {"text": "late"})
        waited = time.monotonic() - started
    assert result.is_error
    [request] = [r[0] for r in await requests_of(agent)]
    assert f"approval request {request} expired at" in text(result), text(result)
    assert 1.4 < waited < 10, waited
    assert [r[1] for r in await requests_of(agent)] == ["expired"]
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="expired"):
        await decide(request, True)
    assert [r[1] for r in await requests_of(agent)] == ["expired"]
    assert ran(calls) == []


async def test_a_cancelled_call_withdraws_its_request(tmp_path: Path) -> None:
    config, agent, calls = held(tmp_path)
    async with stdio_gateway(gateway_args(config)) as session:
        async with calling(session, "counting.note", {"text": "never"}) as (call, tg):
            [request] = await requested(agent)
            tg.cancel_scope.cancel()
        assert call.result is None
        [withdrawn] = await requested(agent, status="withdrawn")
        assert withdrawn == request
        # a grant now is too late: it was decided (withdrawn by its requester)
        with pytest.raises(psycopg.errors.UniqueViolation):
            await decide(request, True)
        # the session goes on
        async with calling(session, "counting.note", {"text": "next"}) as (nxt, _):
            second = await requested_after(agent, request)
            await decide(second, True)
            with anyio.fail_after(10):
                await nxt.done.wait()
        assert nxt.result is not None and not nxt.result.is_error, text(nxt.result)
    assert ran(calls) == ["next"]
    rows = await requests_of(agent)
    assert rows[0][1] == "withdrawn" and "the client cancelled the call" in rows[0][2]


async def test_the_waiting_calls_are_bounded(tmp_path: Path) -> None:
    """max_approval_waits calls wait at once; one more is refused at once, its request
    withdrawn (nobody would wait for it); a call that needs no approval is not held up."""
    config, agent, calls = held(tmp_path, max_approval_waits=2)
    async with stdio_gateway(gateway_args(config)) as session:
        async with (
            calling(session, "counting.note", {"text": "one"}) as (one, _),
            calling(session, "counting.note", {"text": "two"}) as (two, _),
        ):
            first, second = await requested(agent, 2)
            with anyio.fail_after(10):
                third = await session.call_tool("counting.note", {"text": "three"})
            assert third.is_error and "max_approval_waits" in text(third), text(third)
            assert "was withdrawn" in text(third)
            [withdrawn] = await requested(agent, status="withdrawn")
            assert withdrawn > second
            # the two held ones still wait, and are decided
            assert not one.done.is_set() and not two.done.is_set()
            await decide(first, True)
            await decide(second, False, "no")
            with anyio.fail_after(10):
                await one.done.wait()
                await two.done.wait()
        # a freed place holds the next call
        async with calling(session, "counting.note", {"text": "four"}) as (four, _):
            fourth = await requested_after(agent, withdrawn)
            await decide(fourth, True)
            with anyio.fail_after(10):
                await four.done.wait()
    assert one.result is not None and not one.result.is_error
    assert two.result is not None and two.result.is_error
    assert four.result is not None and not four.result.is_error, text(four.result)
    assert sorted(ran(calls)) == ["four", "one"]


async def test_a_dropped_listener_misses_no_decision(tmp_path: Path) -> None:
    """The gateway's listening connection is cut while a call waits and the request is
    granted meanwhile: the listener connects again and the waiting call reads the grant."""
    config, agent, calls = held(tmp_path)
    async with stdio_gateway(gateway_args(config)) as session:
        async with calling(session, "counting.note", {"text": "reconnect"}) as (call, _):
            [request] = await requested(agent)
            async with await db() as admin:
                cur = await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE usename = %s AND application_name = %s",
                    [PLATFORM, LISTENER],
                )
                assert (await cur.fetchall()) == [(True,)]
            await decide(request, True)
            with anyio.fail_after(15):
                await call.done.wait()
        assert call.result is not None and not call.result.is_error, text(call.result)
    assert ran(calls) == ["reconnect"]


async def test_a_decision_read_on_a_dropped_connection_is_read_again(tmp_path: Path) -> None:
    """The gateway's pool connections are cut (a restart, a failover, a terminated backend)
    while a call waits, and the request is granted: the read the grant wakes fails once, is
    read again on another connection, and the granted call runs, once (an attacker's pass
    found it refused and the client told, wrongly, that its request was withdrawn)."""
    config, agent, calls = held(tmp_path, approval_progress=60.0)
    async with stdio_gateway(gateway_args(config)) as session:
        async with calling(session, "counting.note", {"text": "blip"}) as (call, _):
            [request] = await requested(agent)
            await anyio.sleep(0.5)  # the held call read its request once and waits
            async with await db() as admin:
                cur = await admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE usename = %s AND application_name <> %s AND pid <> pg_backend_pid()",
                    [PLATFORM, LISTENER],
                )
                row = await cur.fetchone()
                assert row is not None and row[0] >= 1
            await decide(request, True, "ok")
            with anyio.fail_after(20):
                await call.done.wait()
        assert call.result is not None and not call.result.is_error, text(call.result)
    assert ran(calls) == ["blip"]
    [(_, status, *_)] = [r for r in await requests_of(agent) if r[0] == request]
    assert status == "granted"


async def test_identical_calls_wait_each_for_its_own_request(tmp_path: Path) -> None:
    """Two identical calls held at once record a request each: granting one runs one call,
    once; the other still waits for its own."""
    config, agent, calls = held(tmp_path)
    async with stdio_gateway(gateway_args(config)) as session:
        async with (
            calling(session, "counting.note", {"text": "same"}) as (x, _),
            calling(session, "counting.note", {"text": "same"}) as (y, _),
        ):
            first, second = await requested(agent, 2)
            await decide(second, True)
            with anyio.fail_after(10):
                while not (x.done.is_set() or y.done.is_set()):
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)
            assert x.done.is_set() != y.done.is_set()
            assert ran(calls) == ["same"]
            await decide(first, False, "one is enough")
            with anyio.fail_after(10):
                await x.done.wait()
                await y.done.wait()
    outcomes = sorted(bool(c.result and c.result.is_error) for c in (x, y))
    assert outcomes == [False, True]
    assert ran(calls) == ["same"]
    [(run, _, _)] = runs_of(agent)
    assert [s[6] for s in steps_of(run) if s[0] == "tool_called"] == [second]


# -- an outsider's attempts -------------------------------------------------------------------


async def test_notifications_are_only_a_reason_to_read(tmp_path: Path) -> None:
    """Anyone may NOTIFY the channel: a forged id, or anything else, makes a waiting call read
    its request again (at a bounded rate), never go through."""
    config, agent, calls = held(tmp_path)
    async with stdio_gateway(gateway_args(config)) as session:
        async with calling(session, "counting.note", {"text": "forged"}) as (call, _):
            [request] = await requested(agent)
            async with await db(FINANCE) as other:
                for payload in (str(request), f"{request} granted", "granted", "-1", "9" * 40):
                    await other.execute("SELECT pg_notify('pg_labels_approvals', %s)", [payload])
                # a flood of its id (a transaction each: PostgreSQL folds the same payload
                # within one): the call reads it at a bounded rate, and still waits
                await other.execute(
                    "DO $$ BEGIN FOR i IN 1..2000 LOOP "
                    f"PERFORM pg_notify('pg_labels_approvals', '{request}'); COMMIT; "
                    "END LOOP; END $$"
                )
            await anyio.sleep(1)
            assert not call.done.is_set() and ran(calls) == []
            await decide(request, False, "forged notifications grant nothing")
            with anyio.fail_after(5):
                await call.done.wait()
        assert call.result is not None and call.result.is_error
        assert "forged notifications grant nothing" in text(call.result)
    assert ran(calls) == []


async def test_another_client_cannot_cancel_or_withdraw(tmp_path: Path) -> None:
    """Over HTTP, client B cancels every request id A might have used, and another gateway's
    role tries to withdraw A's request and to read it: A's call still waits and is granted."""
    config, agent, calls = held(tmp_path)
    with http_gateway(gateway_args(config)) as url:
        async with http_session(url) as a, http_session(url) as b:
            async with calling(a, "counting.note", {"text": "mine"}) as (call, _):
                [request] = await requested(agent)
                for guess in range(0, 20):
                    await b.send_notification(
                        types.CancelledNotification(
                            params=types.CancelledNotificationParams(
                                request_id=guess, reason="not yours"
                            )
                        )
                    )
                async with await db(FINANCE) as other:
                    with pytest.raises(psycopg.Error) as refused:
                        await other.execute("SELECT pg_labels.withdraw_approval(%s)", [request])
                    assert refused.value.sqlstate in ("42501", "23503")
                    cur = await other.execute(
                        "SELECT count(*) FROM pg_labels.approval_requests WHERE id = %s",
                        [request],
                    )
                    assert await cur.fetchone() == (0,)
                await anyio.sleep(0.5)
                assert not call.done.is_set()
                assert [r[1] for r in await requests_of(agent)] == ["pending"]
                await decide(request, True)
                with anyio.fail_after(10):
                    await call.done.wait()
            assert call.result is not None and not call.result.is_error, text(call.result)
    assert ran(calls) == ["mine"]


async def test_a_flood_of_waiting_calls_holds_no_more_than_its_bound(tmp_path: Path) -> None:
    """Thirty calls at once from two HTTP sessions against max_approval_waits = 5: five wait,
    the others are refused at once; the gateway still answers other calls; when the waiting
    clients give up, their requests are withdrawn and the places are free again."""
    config, agent, calls = held(tmp_path, max_approval_waits=5)
    results: list[types.CallToolResult] = []
    with http_gateway(gateway_args(config)) as url:
        async with http_session(url) as a, http_session(url) as b:

            async def flood(session: ClientSession, i: int) -> None:
                results.append(await session.call_tool("counting.note", {"text": f"f{i}"}))

            async with anyio.create_task_group() as tg:
                for i in range(30):
                    tg.start_soon(flood, a if i % 2 else b, i)
                with anyio.fail_after(30):
                    while len(results) < 25:
                        await anyio.sleep(0.05)
                await requested(agent, 5)
                assert all(r.is_error and "max_approval_waits" in text(r) for r in results)
                rows = await requests_of(agent)
                assert sorted(r[1] for r in rows) == ["pending"] * 5 + ["withdrawn"] * 25
                tg.cancel_scope.cancel()
            with anyio.fail_after(30):
                while [r[1] for r in await requests_of(agent)].count("withdrawn") < 30:
                    await anyio.sleep(0.05)
            # the places are free again
            last = max(r[0] for r in await requests_of(agent))
            async with calling(a, "counting.note", {"text": "after"}) as (after, _):
                request = await requested_after(agent, last)
                await decide(request, True)
                with anyio.fail_after(10):
                    await after.done.wait()
            assert after.result is not None and not after.result.is_error, text(after.result)
    assert ran(calls) == ["after"]


def docs_block() -> str:
    """docs/approvals.md's Python client of the MCP gateway, as written."""
    page = (Path(__file__).parents[2] / "docs" / "approvals.md").read_text(encoding="utf-8")
    section = page[page.index("\n## The MCP gateway\n") :]
    found = re.search(r"\n```python\n(.*?)\n```\n", section, re.S)
    assert found, "docs/approvals.md: no python block in ## The MCP gateway"
    return found.group(1)


async def test_the_docs_example(
    tmp_path: Path, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = docs_block()
    assert "/srv/files" in code
    namespace: dict[str, Any] = {}
    exec(compile(code.replace("/srv/files", str(files)), "approvals.md", "exec"), namespace)
    config, agent = write_config(
        tmp_path / "gw.toml",
        files=files,
        everything=None,
        labels=UNTRUSTED,
        approval_progress=0.2,
    )
    answers: list[str] = []
    async with stdio_gateway(gateway_args(config)) as session:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                answers.append(await namespace["make_reports_dir"](session))

            tg.start_soon(call)
            [request] = await requested(agent)
            await anyio.sleep(0.5)
            assert not (files / "reports").exists()
            await decide(request, True, "checked the path")
    assert answers == [f"Successfully created directory {files / 'reports'}"], answers
    assert (files / "reports").is_dir()
    printed = capsys.readouterr().out
    assert f"s of 120s: waiting for a person's decision on approval request {request}" in printed


def test_the_settings_are_bounded(tmp_path: Path) -> None:
    from pg_labels.mcp.config import _settings, load_config

    def loaded(line: str) -> Any:
        path = tmp_path / "gw.toml"
        path.write_text(line + "\n")
        return load_config(str(path))

    config = loaded("")
    assert (config.approval_wait, config.approval_progress, config.max_approval_waits) == (
        120,
        10,
        100,
    )
    assert loaded("approval_wait = 0").approval_wait == 0
    for bad in (
        "approval_wait = -1",
        "approval_wait = 86401",
        'approval_wait = "soon"',
        "approval_progress = 0.01",
        "max_approval_waits = 0",
    ):
        with pytest.raises(ValueError):
            loaded(bad)
    flags, *_ = _settings(["--approval-wait", "0", "--max-approval-waits", "7"])
    assert (flags.approval_wait, flags.max_approval_waits) == (0, 7)
