"""The platform's calls as the platform's writer and an approver, written once: for
AsyncPlatform and AsyncRun in test_platform_async.py (on psycopg's AsyncConnection and on
asyncpg: the fixture aplatform), for Platform and Run in test_platform.py, generated from it
by python/tools/async_to_sync.py. AsyncPlatform's own cases are in test_async.py."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Callable
from types import SimpleNamespace

import psycopg
import pytest

import pg_labels
from pg_labels import (
    ApprovalRequired,
    AsyncPlatform,
    DataBarrier,
    LabelSet,
    Refusal,
    Scope,
    UnknownTool,
    UntrustedToIrreversible,
)

from conftest import ALICE, ANALYST, PLATFORM, aconnect, connect, errors


async def test_the_seed_scenario(aplatform: AsyncPlatform) -> None:
    run = await aplatform.open_run("support-bot", "acme/platform")
    assert run.scope == Scope("acme/platform")
    assert run.opened_labels == LabelSet("{area:acme/platform}")
    step = await run.input("{origin:slack/T01/C02}", {"text": "refund order 1234"})
    assert step.kind == "input" and step.run_id == run.id

    d = await run.gate("stripe.refund", {"order": 1234})
    assert (d.decision, d.rule, d.allowed) == ("block", "untrusted_to_irreversible", False)
    assert d.reason and "stripe.refund" in d.reason and d.step_id > step.id

    with pytest.raises(UntrustedToIrreversible) as e:
        await run.call("stripe.refund", {"order": 1234})
    assert e.value.run_id == run.id and e.value.tool == "stripe.refund"
    assert isinstance(e.value.__cause__, errors(aplatform).integrity)
    assert not isinstance(e.value, errors(aplatform).integrity)

    called = await run.call("tickets.read", {"ticket": 1})
    assert (called.kind, called.decision) == ("tool_called", "allow")
    result = await run.result("tickets.read", labels=["tag:pii"])
    assert result.labels == LabelSet("{origin:tool,tag:pii}")
    trusted = await run.result("kb.search")
    assert trusted.labels == LabelSet()

    await run.input(LabelSet("{area:acme/finance}"))
    d = await run.gate("kb.search")
    assert (d.decision, d.rule) == ("block", "data_barrier")
    with pytest.raises(DataBarrier) as b:
        await run.call("kb.search")
    assert b.value.escaping == LabelSet("{area:acme/finance}")
    assert await run.carried() == LabelSet(
        "{area:acme/finance,area:acme/platform,origin:slack/T01/C02,origin:tool,tag:pii}"
    )


async def test_gate_and_call(aplatform: AsyncPlatform) -> None:
    """The gate and, when it allows, the call, as one call: the decision and the
    ``tool_called`` step (one transaction, one commit); a gate that does not allow records its
    decision and calls nothing."""
    run = await aplatform.open_run("support-bot", "acme/platform")
    d, step = await run.gate_and_call("tickets.read", {"ticket": 1})
    assert (d.decision, d.allowed) == ("allow", True)
    assert step is not None
    assert (step.kind, step.tool, step.decision) == ("tool_called", "tickets.read", "allow")
    assert step.id > d.step_id
    await run.input(["origin:slack"])
    d, step = await run.gate_and_call("stripe.refund", {"order": 1})
    assert (d.decision, d.rule, step) == ("block", "untrusted_to_irreversible", None)
    d, step = await run.gate_and_call("tickets.update", {"ticket": 2})
    assert (d.decision, d.rule, step) == ("ask", "approval_required", None)
    # a step refused after the gate decided (here a tool the catalog does not have: the gate
    # blocks it) raises nothing: only an allowed gate is followed by the call
    d, step = await run.gate_and_call("no.such.tool")
    assert (d.decision, d.rule, step) == ("block", "unknown_tool", None)
    # the calls' results
    result = await run.result("tickets.read", labels=["tag:pii"])
    assert result.labels == LabelSet("{origin:tool,tag:pii}")


async def test_approvals(aplatform: AsyncPlatform, aapprover: AsyncPlatform) -> None:
    run = await aplatform.open_run("support-bot", Scope("acme/platform"))
    await run.input(["origin:slack"])
    args = {"ticket": 77, "status": "closed"}
    d = await run.gate("tickets.update", args)
    assert (d.decision, d.rule) == ("ask", "approval_required")
    with pytest.raises(ApprovalRequired):
        await run.call("tickets.update", args)
    request = await run.request_approval("tickets.update", args, reason="close it")
    # the writer cannot approve its own calls
    with pytest.raises(errors(aplatform).insufficient_privilege):
        await aplatform.decide_approval(request, True)
    assert await run.approval(request) is None
    decided = await aapprover.decide_approval(request, True, "the customer asked")
    assert await run.approval(request) == "granted"
    assert decided > request
    assert (await run.gate("tickets.update", args)).decision == "allow"
    step = await run.call("tickets.update", args)
    assert step.request_id == request
    # one approval, one call
    with pytest.raises(ApprovalRequired):
        await run.call("tickets.update", args)


async def test_unknown_tool_and_missing_run(aplatform: AsyncPlatform) -> None:
    run = await aplatform.open_run("bot", "acme/platform")
    d = await run.gate("no.such.tool")
    assert (d.decision, d.rule) == ("block", "unknown_tool")
    with pytest.raises(UnknownTool) as e:
        await run.call("no.such.tool")
    assert e.value.tool == "no.such.tool"

    missing = uuid.uuid4()
    with pytest.raises(LookupError):
        await aplatform.run(missing)
    ghost = pg_labels.AsyncRun(aplatform, missing, "bot", Scope("acme"), LabelSet())
    for attempt in (lambda: ghost.gate("kb.search"), lambda: ghost.input("{}"), ghost.carried):
        with pytest.raises((Refusal, LookupError)) as r:
            await attempt()
        if isinstance(r.value, Refusal):
            assert (r.value.sqlstate, r.value.constraint) == ("23503", "steps_run_id_fkey")
    assert (await aplatform.run(run.id)).scope == Scope("acme/platform")


async def test_runs_not_opened(aplatform: AsyncPlatform) -> None:
    with pytest.raises(DataBarrier) as e:
        await aplatform.open_run("bot", "acme/platform", labels="{company:globex}")
    assert e.value.escaping == LabelSet("{company:globex}")
    with pytest.raises(Refusal) as c:
        await aplatform.open_run("bot", "*")
    assert c.value.constraint == "runs_scope_check"
    rid = uuid.uuid4()
    assert (await aplatform.open_run("bot", "acme", run_id=str(rid))).id == rid
    # the writer's grant is acme: another company's scope is refused, naming the scope
    with pytest.raises(Refusal) as g:
        await aplatform.open_run("bot", "globex/support")
    assert (g.value.sqlstate, g.value.constraint) == ("42501", "scope_not_granted")
    assert g.value.rule is None
    assert "may not open a run in scope globex/support" in g.value.message


async def test_sharing(aplatform: AsyncPlatform) -> None:
    source = await aplatform.open_run("researcher", "acme/platform")
    await source.input("{tag:pii}")
    shared = await source.share("the summary", to_scope="acme/platform", description="summary")
    assert shared.digest == hashlib.sha256(b"the summary").hexdigest()
    assert shared.labels == LabelSet("{area:acme/platform,tag:pii}")
    assert shared.to_scope == Scope("acme/platform")

    reader = await aplatform.open_run("support-bot", "acme/platform")
    read = await reader.read_context(shared.artifact_id)
    assert read.kind == "context_read" and LabelSet("{tag:pii}") <= read.labels

    # another area may not receive it, and nothing of the refused share is left
    with pytest.raises(DataBarrier):
        await source.share(b"more", to_scope="acme/finance")
    other = await aplatform.open_run("bot", "acme/finance")
    with pytest.raises(DataBarrier):
        await other.read_context(shared.artifact_id)
    to_one = await source.share(b"for one run", to_run=reader)
    assert to_one.to_scope == reader.scope
    # a sub-area cannot carry its area's data
    infra = await aplatform.open_run("bot", "acme/platform/infra")
    with pytest.raises(DataBarrier):
        await infra.read_context(shared.artifact_id)


async def test_caller_transaction_is_respected() -> None:
    """No commit the caller did not ask for; a refusal rolls back only itself (psycopg; on
    asyncpg: test_async.py's test_asyncpg_transactions)."""
    async with await aconnect(PLATFORM) as conn:  # not autocommit
        platform = AsyncPlatform(conn)
        run = await platform.open_run("bot", "acme/platform")
        await run.input("{origin:webhook}")
        with pytest.raises(UntrustedToIrreversible):
            await run.call("files.delete", {"path": "/"})
        # the caller's transaction goes on
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert await run.carried() == LabelSet("{area:acme/platform,origin:webhook}")
        await conn.rollback()
        with pytest.raises(LookupError):
            await platform.run(run.id)
        await conn.rollback()
        # inside the caller's own transaction block
        async with conn.transaction():
            kept = await platform.open_run("bot", "acme/platform")
            with pytest.raises(UnknownTool):
                await kept.call("nope")
            await kept.input("{tag:x}")
        await conn.commit()
        assert (await platform.run(kept.id)).scope == Scope("acme/platform")
        await conn.rollback()


async def test_sync_tools(adba: AsyncPlatform, admin: psycopg.Connection) -> None:
    tools = [
        {"name": "mcp.read", "annotations": {"readOnlyHint": True}},
        {"name": "mcp.drop", "annotations": {"destructiveHint": True}, "description": "drops"},
        SimpleNamespace(name="mcp.write", annotations=None),
        SimpleNamespace(name="mcp.pay", annotations=SimpleNamespace(readOnlyHint=False)),
        {"name": "mcp.search", "annotations": {"readOnlyHint": True}},
        {"name": "mcp.edit", "annotations": {"destructiveHint": False}},
    ]
    written = await adba.sync_tools(
        tools, effects={"mcp.pay": "financial"}, trusted=["mcp.search"]
    )
    got = {t.name: (t.effect, t.trusted_output) for t in written}
    assert got == {
        "mcp.read": ("read", False),
        "mcp.drop": ("destructive", False),
        "mcp.write": ("destructive", False),  # MCP's default: destructiveHint true
        "mcp.pay": ("financial", False),
        "mcp.search": ("read", True),
        "mcp.edit": ("reversible_write", False),
    }
    rows = admin.execute(
        "SELECT name, effect, trusted_output, description FROM pg_labels.tools "
        "WHERE name LIKE 'mcp.%' ORDER BY name"
    ).fetchall()
    assert rows == [
        ("mcp.drop", "destructive", False, "drops"),
        ("mcp.edit", "reversible_write", False, None),
        ("mcp.pay", "financial", False, None),
        ("mcp.read", "read", False, None),
        ("mcp.search", "read", True, None),
        ("mcp.write", "destructive", False, None),
    ]
    # a change is written, the rest left as it is
    await adba.sync_tools([{"name": "mcp.write", "annotations": {"destructiveHint": False}}])
    row = admin.execute("SELECT effect FROM pg_labels.tools WHERE name = 'mcp.write'").fetchone()
    assert row == ("reversible_write",)
    with pytest.raises(ValueError):
        await adba.sync_tools(tools, effects={"mcp.pay": "expensive"})
    with pytest.raises(ValueError):
        await adba.sync_tools(tools, effects={"mcp.typo": "financial"})
    with pytest.raises(TypeError):
        await adba.sync_tools([{"annotations": {}}])
    with pytest.raises(TypeError):
        await adba.sync_tools({"name": "x"})  # type: ignore[arg-type]
    assert pg_labels.tools_from_mcp(tools[:1]) == [pg_labels.Tool("mcp.read", "read", False)]


async def test_the_writer_cannot_sync_tools(aplatform: AsyncPlatform) -> None:
    with pytest.raises(errors(aplatform).insufficient_privilege):
        await aplatform.sync_tools([{"name": "sneaky", "annotations": {"readOnlyHint": True}}])


async def test_bad_input(aplatform: AsyncPlatform) -> None:
    run = await aplatform.open_run("bot", "acme/platform")
    with pytest.raises(TypeError):
        await run.call(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await run.call("")
    with pytest.raises(TypeError):
        await run.input(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await run.input("{nope}")
    with pytest.raises(TypeError):
        await run.call("kb.search", {"x": object()})
    with pytest.raises(TypeError):
        await aplatform.open_run("bot", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await aplatform.open_run("bot", "Acme")
    with pytest.raises(TypeError):
        await run.share(42, to_scope="acme")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await run.share("x")
    with pytest.raises(TypeError):
        AsyncPlatform("not a connection")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await aplatform.decide_approval(True, True)
    await aplatform.conn.close()
    with pytest.raises(errors(aplatform).closed):
        await run.call("kb.search")


async def test_analyst_reads_what_the_scope_carries(aplatform: AsyncPlatform) -> None:
    run = await aplatform.open_run("bot", "acme/platform")
    await run.input("{tag:seen}")
    async with await aconnect(ANALYST) as conn:
        await pg_labels.register_async(conn)
        assert await (await conn.execute("SELECT count(*) FROM pg_labels.runs")).fetchone() == (0,)
        await conn.execute("SELECT pg_labels.enter_scope(%s)", [Scope("acme/platform")])
        row = await conn.execute("SELECT scope, labels FROM pg_labels.runs WHERE id = %s", [run.id])
        assert await row.fetchone() == (
            Scope("acme/platform"),
            LabelSet("{area:acme/platform,tag:seen}"),
        )
        await conn.rollback()


async def test_runs_of_a_listener(aplatform: AsyncPlatform, admin: psycopg.Connection) -> None:
    row = admin.execute(
        "INSERT INTO pg_labels.listeners (agent, scope, event) "
        "VALUES ('support-bot', 'acme/platform', 'slack.message') RETURNING id"
    ).fetchone()
    assert row is not None
    listener = row[0]
    run = await aplatform.open_run("support-bot", None, listener=listener)
    assert run.scope == Scope("acme/platform")
    with pytest.raises(DataBarrier) as e:
        await aplatform.open_run("support-bot", "acme/finance", listener=listener)
    assert "listener" in str(e.value)
    with pytest.raises(Refusal) as r:
        await aplatform.open_run("support-bot", None, listener=listener + 1000)
    assert r.value.constraint == "runs_listener_id_fkey"
    with pytest.raises(TypeError):
        await aplatform.open_run("support-bot", None, listener="1")  # type: ignore[arg-type]


# Waiting for a person: Run.wait_for_decision on LISTEN pg_labels_approvals.

UPDATE = {"ticket": 77, "status": "closed"}


def _decide(request: int, granted: bool, reason: str | None) -> None:
    with connect(ALICE, autocommit=True) as conn:
        conn.execute("SELECT pg_labels.decide_approval(%s, %s, %s)", [request, granted, reason])


def _decide_later(request: int, granted: bool, reason: str | None = None) -> threading.Timer:
    """The approver decides on a connection of their own, in 0.3 s."""
    timer = threading.Timer(0.3, _decide, [request, granted, reason])
    timer.start()
    return timer


def _backends(
    admin: psycopg.Connection, until: Callable[[set[int]], bool] | None = None
) -> set[int]:
    """The platform's backends on the server (their pids), waiting up to 5 s for ``until``
    to hold of them: a backend leaves pg_stat_activity shortly after its client closed (a
    count would take one of an earlier test's, still leaving, for one of this test's)."""
    for _ in range(50):
        pids = {
            int(row[0])
            for row in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE usename = %s", [PLATFORM]
            ).fetchall()
        }
        if until is None or until(pids):
            break
        time.sleep(0.1)
    return pids


async def _asking_run(aplatform: AsyncPlatform) -> pg_labels.AsyncRun:
    run = await aplatform.open_run("support-bot", "acme/platform")
    await run.input("{origin:slack}")
    return run


async def test_wait_for_a_grant(aplatform: AsyncPlatform, admin: psycopg.Connection) -> None:
    run = await _asking_run(aplatform)
    request = await run.request_approval("tickets.update", UPDATE, reason="close it")
    assert (await run.approval_status(request)).status == "pending"
    before = _backends(admin)
    timer = _decide_later(request, True, "the customer asked")
    started = time.monotonic()
    decision = await run.wait_for_decision(request, timeout=30)
    timer.join()
    assert time.monotonic() - started < 10
    assert isinstance(decision, pg_labels.ApprovalDecision)
    assert (decision.status, decision.granted, decision.decided) == ("granted", True, True)
    assert (decision.reason, decision.decided_by) == ("the customer asked", ALICE)
    assert decision.request_id == request and decision.decision_id is not None
    assert decision.decision_id > request and decision.expires_at is None
    # the wait's connection is closed (no backend but those before it); the run's own is as
    # it was (it writes the call below)
    assert _backends(admin, lambda now: now <= before) <= before
    step = await run.call("tickets.update", UPDATE)
    assert step.request_id == request
    # decided before the wait: read right after LISTEN
    assert (await run.wait_for_decision(request, timeout=30)).status == "granted"


async def test_wait_for_a_denial_and_a_withdrawal(aplatform: AsyncPlatform) -> None:
    run = await _asking_run(aplatform)
    request = await run.request_approval("tickets.update", UPDATE)
    timer = _decide_later(request, False, "not this one")
    decision = await run.wait_for_decision(request, timeout=30)
    timer.join()
    assert (decision.status, decision.reason, decision.granted) == ("denied", "not this one", False)

    other = await run.request_approval("tickets.update", {"ticket": 78, "status": "closed"})
    withdrawn = await run.withdraw_approval(other, "the customer left")
    decision = await run.wait_for_decision(other, timeout=30)
    assert (decision.status, decision.decision_id) == ("withdrawn", withdrawn)
    assert decision.reason is not None and "the customer left" in decision.reason


async def test_wait_ends_at_the_timeout_and_at_expiry(aplatform: AsyncPlatform) -> None:
    run = await _asking_run(aplatform)
    request = await run.request_approval("tickets.update", UPDATE)
    started = time.monotonic()
    decision = await run.wait_for_decision(request, timeout=0.3)
    assert 0.3 <= time.monotonic() - started < 5
    assert (decision.status, decision.decided) == ("timeout", False)
    assert (await run.wait_for_decision(request, timeout=0)).status == "timeout"

    # a decision on another request does not end the wait
    short = await run.request_approval("tickets.update", {"ticket": 1}, ttl=0.8)
    timer = _decide_later(request, True)
    started = time.monotonic()
    decision = await run.wait_for_decision(short, timeout=30)
    timer.join()
    assert 0.5 <= time.monotonic() - started < 10
    assert decision.status == "expired" and decision.expires_at is not None
    with pytest.raises(psycopg.Error) as e:
        _decide(short, True, "too late")
    assert e.value.sqlstate == "55000"


async def test_wait_bad_arguments(aplatform: AsyncPlatform) -> None:
    run = await _asking_run(aplatform)
    other = await _asking_run(aplatform)
    request = await other.request_approval("tickets.update", UPDATE)
    with pytest.raises(LookupError):
        await run.wait_for_decision(request, timeout=1)
    with pytest.raises(LookupError):
        await run.approval_status(request)
    with pytest.raises(TypeError):
        await run.wait_for_decision("1", timeout=1)  # type: ignore[arg-type]
    for bad in (-1, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            await run.wait_for_decision(request, timeout=bad)
    with pytest.raises(ValueError):
        await run.request_approval("tickets.update", UPDATE, ttl=0)
    assert await other.pending_request("tickets.update", UPDATE) == request
    assert await other.pending_request("tickets.update", {"ticket": 2}) is None


async def test_wait_on_a_connection_of_ones_own(aplatform: AsyncPlatform) -> None:
    """``connect`` opens the wait's connection; it is closed after the wait."""
    opened: list[object] = []

    async def connect_() -> object:
        conn = await aconnect(PLATFORM)
        opened.append(conn)
        return conn

    if isinstance(aplatform.conn, psycopg.AsyncConnection):
        own = AsyncPlatform(aplatform.conn, connect=connect_)
        run = await _asking_run(own)
        request = await run.request_approval("tickets.update", UPDATE)
        assert (await run.wait_for_decision(request, timeout=0.1)).status == "timeout"
        (conn,) = opened
        assert conn.closed  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        AsyncPlatform(aplatform.conn, connect=1)  # type: ignore[arg-type]


async def test_a_cancelled_wait_closes_its_connection(  # async only
    aplatform: AsyncPlatform, admin: psycopg.Connection
) -> None:
    import asyncio

    run = await _asking_run(aplatform)
    request = await run.request_approval("tickets.update", UPDATE)
    before = _backends(admin)
    task = asyncio.create_task(run.wait_for_decision(request, timeout=30))
    await asyncio.sleep(0.5)
    # the wait's own connection: one backend more
    assert len(_backends(admin, lambda now: len(now - before) == 1) - before) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _backends(admin, lambda now: now <= before) <= before
