# Generated from test_platform_async.py by python/tools/async_to_sync.py: do not edit.
# Edit tests/python/test_platform_async.py
# and run the script; the python suite checks that this file is what it generates.
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
    DataBarrier,
    LabelSet,
    Platform,
    Refusal,
    Scope,
    UnknownTool,
    UntrustedToIrreversible,
)

from conftest import ANALYST, PLATFORM, connect, errors


def test_the_seed_scenario(platform: Platform) -> None:
    run = platform.open_run("support-bot", "acme/platform")
    assert run.scope == Scope("acme/platform")
    assert run.opened_labels == LabelSet("{area:acme/platform}")
    step = run.input("{origin:slack/T01/C02}", {"text": "refund order 1234"})
    assert step.kind == "input" and step.run_id == run.id

    d = run.gate("stripe.refund", {"order": 1234})
    assert (d.decision, d.rule, d.allowed) == ("block", "untrusted_to_irreversible", False)
    assert d.reason and "stripe.refund" in d.reason and d.step_id > step.id

    with pytest.raises(UntrustedToIrreversible) as e:
        run.call("stripe.refund", {"order": 1234})
    assert e.value.run_id == run.id and e.value.tool == "stripe.refund"
    assert isinstance(e.value.__cause__, errors(platform).integrity)
    assert not isinstance(e.value, errors(platform).integrity)

    called = run.call("tickets.read", {"ticket": 1})
    assert (called.kind, called.decision) == ("tool_called", "allow")
    result = run.result("tickets.read", labels=["tag:pii"])
    assert result.labels == LabelSet("{origin:tool,tag:pii}")
    trusted = run.result("kb.search")
    assert trusted.labels == LabelSet()

    run.input(LabelSet("{area:acme/finance}"))
    d = run.gate("kb.search")
    assert (d.decision, d.rule) == ("block", "data_barrier")
    with pytest.raises(DataBarrier) as b:
        run.call("kb.search")
    assert b.value.escaping == LabelSet("{area:acme/finance}")
    assert run.carried() == LabelSet(
        "{area:acme/finance,area:acme/platform,origin:slack/T01/C02,origin:tool,tag:pii}"
    )


def test_approvals(platform: Platform, approver: Platform) -> None:
    run = platform.open_run("support-bot", Scope("acme/platform"))
    run.input(["origin:slack"])
    args = {"ticket": 77, "status": "closed"}
    d = run.gate("tickets.update", args)
    assert (d.decision, d.rule) == ("ask", "approval_required")
    with pytest.raises(ApprovalRequired):
        run.call("tickets.update", args)
    request = run.request_approval("tickets.update", args, reason="close it")
    # the writer cannot approve its own calls
    with pytest.raises(errors(platform).insufficient_privilege):
        platform.decide_approval(request, True)
    assert run.approval(request) is None
    decided = approver.decide_approval(request, True, "the customer asked")
    assert run.approval(request) == "granted"
    assert decided > request
    assert run.gate("tickets.update", args).decision == "allow"
    step = run.call("tickets.update", args)
    assert step.request_id == request
    # one approval, one call
    with pytest.raises(ApprovalRequired):
        run.call("tickets.update", args)


def test_unknown_tool_and_missing_run(platform: Platform) -> None:
    run = platform.open_run("bot", "acme/platform")
    d = run.gate("no.such.tool")
    assert (d.decision, d.rule) == ("block", "unknown_tool")
    with pytest.raises(UnknownTool) as e:
        run.call("no.such.tool")
    assert e.value.tool == "no.such.tool"

    missing = uuid.uuid4()
    with pytest.raises(LookupError):
        platform.run(missing)
    ghost = pg_labels.Run(platform, missing, "bot", Scope("acme"), LabelSet())
    for attempt in (lambda: ghost.gate("kb.search"), lambda: ghost.input("{}"), ghost.carried):
        with pytest.raises((Refusal, LookupError)) as r:
            attempt()
        if isinstance(r.value, Refusal):
            assert (r.value.sqlstate, r.value.constraint) == ("23503", "steps_run_id_fkey")
    assert platform.run(run.id).scope == Scope("acme/platform")


def test_runs_not_opened(platform: Platform) -> None:
    with pytest.raises(DataBarrier) as e:
        platform.open_run("bot", "acme/platform", labels="{company:globex}")
    assert e.value.escaping == LabelSet("{company:globex}")
    with pytest.raises(Refusal) as c:
        platform.open_run("bot", "*")
    assert c.value.constraint == "runs_scope_check"
    rid = uuid.uuid4()
    assert platform.open_run("bot", "acme", run_id=str(rid)).id == rid
    # the writer's grant is acme: another company's scope is refused, naming the scope
    with pytest.raises(Refusal) as g:
        platform.open_run("bot", "globex/support")
    assert (g.value.sqlstate, g.value.constraint) == ("42501", "scope_not_granted")
    assert g.value.rule is None
    assert "may not open a run in scope globex/support" in g.value.message


def test_sharing(platform: Platform) -> None:
    source = platform.open_run("researcher", "acme/platform")
    source.input("{tag:pii}")
    shared = source.share("the summary", to_scope="acme/platform", description="summary")
    assert shared.digest == hashlib.sha256(b"the summary").hexdigest()
    assert shared.labels == LabelSet("{area:acme/platform,tag:pii}")
    assert shared.to_scope == Scope("acme/platform")

    reader = platform.open_run("support-bot", "acme/platform")
    read = reader.read_context(shared.artifact_id)
    assert read.kind == "context_read" and LabelSet("{tag:pii}") <= read.labels

    # another area may not receive it, and nothing of the refused share is left
    with pytest.raises(DataBarrier):
        source.share(b"more", to_scope="acme/finance")
    other = platform.open_run("bot", "acme/finance")
    with pytest.raises(DataBarrier):
        other.read_context(shared.artifact_id)
    to_one = source.share(b"for one run", to_run=reader)
    assert to_one.to_scope == reader.scope
    # a sub-area cannot carry its area's data
    infra = platform.open_run("bot", "acme/platform/infra")
    with pytest.raises(DataBarrier):
        infra.read_context(shared.artifact_id)


def test_caller_transaction_is_respected() -> None:
    """No commit the caller did not ask for; a refusal rolls back only itself (psycopg; on
    asyncpg: test_async.py's test_asyncpg_transactions)."""
    with connect(PLATFORM) as conn:  # not autocommit
        platform = Platform(conn)
        run = platform.open_run("bot", "acme/platform")
        run.input("{origin:webhook}")
        with pytest.raises(UntrustedToIrreversible):
            run.call("files.delete", {"path": "/"})
        # the caller's transaction goes on
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert run.carried() == LabelSet("{area:acme/platform,origin:webhook}")
        conn.rollback()
        with pytest.raises(LookupError):
            platform.run(run.id)
        conn.rollback()
        # inside the caller's own transaction block
        with conn.transaction():
            kept = platform.open_run("bot", "acme/platform")
            with pytest.raises(UnknownTool):
                kept.call("nope")
            kept.input("{tag:x}")
        conn.commit()
        assert platform.run(kept.id).scope == Scope("acme/platform")
        conn.rollback()


def test_sync_tools(dba: Platform, admin: psycopg.Connection) -> None:
    tools = [
        {"name": "mcp.read", "annotations": {"readOnlyHint": True}},
        {"name": "mcp.drop", "annotations": {"destructiveHint": True}, "description": "drops"},
        SimpleNamespace(name="mcp.write", annotations=None),
        SimpleNamespace(name="mcp.pay", annotations=SimpleNamespace(readOnlyHint=False)),
        {"name": "mcp.search", "annotations": {"readOnlyHint": True}},
        {"name": "mcp.edit", "annotations": {"destructiveHint": False}},
    ]
    written = dba.sync_tools(
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
    dba.sync_tools([{"name": "mcp.write", "annotations": {"destructiveHint": False}}])
    row = admin.execute("SELECT effect FROM pg_labels.tools WHERE name = 'mcp.write'").fetchone()
    assert row == ("reversible_write",)
    with pytest.raises(ValueError):
        dba.sync_tools(tools, effects={"mcp.pay": "expensive"})
    with pytest.raises(ValueError):
        dba.sync_tools(tools, effects={"mcp.typo": "financial"})
    with pytest.raises(TypeError):
        dba.sync_tools([{"annotations": {}}])
    with pytest.raises(TypeError):
        dba.sync_tools({"name": "x"})  # type: ignore[arg-type]
    assert pg_labels.tools_from_mcp(tools[:1]) == [pg_labels.Tool("mcp.read", "read", False)]


def test_the_writer_cannot_sync_tools(platform: Platform) -> None:
    with pytest.raises(errors(platform).insufficient_privilege):
        platform.sync_tools([{"name": "sneaky", "annotations": {"readOnlyHint": True}}])


def test_bad_input(platform: Platform) -> None:
    run = platform.open_run("bot", "acme/platform")
    with pytest.raises(TypeError):
        run.call(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        run.call("")
    with pytest.raises(TypeError):
        run.input(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        run.input("{nope}")
    with pytest.raises(TypeError):
        run.call("kb.search", {"x": object()})
    with pytest.raises(TypeError):
        platform.open_run("bot", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        platform.open_run("bot", "Acme")
    with pytest.raises(TypeError):
        run.share(42, to_scope="acme")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        run.share("x")
    with pytest.raises(TypeError):
        Platform("not a connection")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        platform.decide_approval(True, True)
    platform.conn.close()
    with pytest.raises(errors(platform).closed):
        run.call("kb.search")


def test_analyst_reads_what_the_scope_carries(platform: Platform) -> None:
    run = platform.open_run("bot", "acme/platform")
    run.input("{tag:seen}")
    with connect(ANALYST) as conn:
        pg_labels.register(conn)
        assert conn.execute("SELECT count(*) FROM pg_labels.runs").fetchone() == (0,)
        conn.execute("SELECT pg_labels.enter_scope(%s)", [Scope("acme/platform")])
        row = conn.execute("SELECT scope, labels FROM pg_labels.runs WHERE id = %s", [run.id])
        assert row.fetchone() == (
            Scope("acme/platform"),
            LabelSet("{area:acme/platform,tag:seen}"),
        )
        conn.rollback()


def test_runs_of_a_listener(platform: Platform, admin: psycopg.Connection) -> None:
    row = admin.execute(
        "INSERT INTO pg_labels.listeners (agent, scope, event) "
        "VALUES ('support-bot', 'acme/platform', 'slack.message') RETURNING id"
    ).fetchone()
    assert row is not None
    listener = row[0]
    run = platform.open_run("support-bot", None, listener=listener)
    assert run.scope == Scope("acme/platform")
    with pytest.raises(DataBarrier) as e:
        platform.open_run("support-bot", "acme/finance", listener=listener)
    assert "listener" in str(e.value)
    with pytest.raises(Refusal) as r:
        platform.open_run("support-bot", None, listener=listener + 1000)
    assert r.value.constraint == "runs_listener_id_fkey"
    with pytest.raises(TypeError):
        platform.open_run("support-bot", None, listener="1")  # type: ignore[arg-type]
