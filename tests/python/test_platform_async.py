"""The platform's calls as the platform's writer and an approver, written once: for
AsyncPlatform and AsyncRun in test_platform_async.py (on psycopg's AsyncConnection and on
asyncpg: the fixture aplatform), for Platform and Run in test_platform.py, generated from it
by python/tools/async_to_sync.py. AsyncPlatform's own cases are in test_async.py."""

from __future__ import annotations

import hashlib
import uuid
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

from conftest import ANALYST, PLATFORM, aconnect, errors


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
