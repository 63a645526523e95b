"""AsyncPlatform's own cases, on psycopg's AsyncConnection and on asyncpg (the fixture
aplatform): the cases of both forms are in test_platform_async.py."""

from __future__ import annotations

import os
import uuid

import asyncpg
import psycopg
import pytest

from pg_labels import (
    ApprovalRequired,
    AsyncPlatform,
    DataBarrier,
    LabelSet,
    Scope,
    UnknownTool,
    UntrustedToIrreversible,
)

from conftest import ALICE, PLATFORM, aconnect, connect


async def test_calls(aplatform: AsyncPlatform) -> None:
    run = await aplatform.open_run("support-bot", "acme/platform")
    assert run.opened_labels == LabelSet("{area:acme/platform}")
    await run.input("{origin:event}")
    d = await run.gate("stripe.refund", {"order": 1})
    assert (d.decision, d.rule) == ("block", "untrusted_to_irreversible")
    with pytest.raises(UntrustedToIrreversible) as e:
        await run.call("stripe.refund", {"order": 1})
    assert e.value.run_id == run.id
    with pytest.raises(UnknownTool):
        await run.call("nope")
    result = await run.result("tickets.read")
    assert result.labels == LabelSet("{origin:tool}")
    shared = await run.share("notes", to_scope=Scope("acme/platform"))
    reader = await aplatform.open_run("bot", "acme/platform")
    read = await reader.read_context(shared.artifact_id)
    assert LabelSet("{origin:event}") <= read.labels
    await reader.input("{company:globex}")
    with pytest.raises(DataBarrier):
        await reader.call("kb.search")
    assert (await aplatform.run(run.id)).id == run.id
    assert "origin:event" in await run.carried()
    assert read.run_id == reader.id and shared.to_scope == Scope("acme/platform")


async def test_args_are_jsonb(aplatform: AsyncPlatform) -> None:
    """The same args are the same call: an approval of {"t": [1, "x"]} lets exactly that
    call through, whichever driver sent it."""
    run = await aplatform.open_run("bot", "acme/platform")
    await run.input("{origin:slack}")
    args = {"t": [1, "x"], "note": "it's 100% fine"}
    request = await run.request_approval("tickets.update", args)
    assert await run.approval(request) is None
    approver = await aconnect(ALICE, autocommit=True)
    try:
        await AsyncPlatform(approver).decide_approval(request, True)
    finally:
        await approver.close()
    assert await run.approval(request) == "granted"
    with pytest.raises(TypeError):
        await run.approval("1")  # type: ignore[arg-type]
    with pytest.raises(ApprovalRequired):
        await run.call("tickets.update", {"t": [1, "x"]})
    step = await run.call("tickets.update", args)
    assert step.request_id == request
    # stored as a JSON object, not as a string holding one
    with connect(PLATFORM) as conn:
        row = conn.execute(
            "SELECT args, jsonb_typeof(args) FROM pg_labels.steps WHERE id = %s", [step.id]
        ).fetchone()
    assert row == (args, "object")
    chosen = uuid.uuid4()
    assert (await aplatform.open_run("bot", "acme/platform", run_id=chosen)).id == chosen


async def test_approvals_and_transactions() -> None:
    writer = await aconnect(PLATFORM, autocommit=False)
    decider = await aconnect(ALICE, autocommit=True)
    try:
        platform, alice = AsyncPlatform(writer), AsyncPlatform(decider)
        run = await platform.open_run("bot", "acme/platform")
        await run.input(["origin:slack"])
        with pytest.raises(ApprovalRequired):
            await run.call("tickets.update", {"t": 1})
        # the refusal rolled back itself only
        assert writer.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        request = await run.request_approval("tickets.update", {"t": 1})
        await writer.commit()
        await alice.decide_approval(request, True)
        step = await run.call("tickets.update", {"t": 1})
        assert step.request_id == request
        await writer.rollback()
    finally:
        await writer.close()
        await decider.close()


async def test_bad_input(aplatform: AsyncPlatform) -> None:
    with pytest.raises(TypeError):
        AsyncPlatform("nope")
    run = await aplatform.open_run("bot", "acme")
    with pytest.raises(TypeError):
        await run.gate(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await run.input("{x}")
    await aplatform.conn.close()
    with pytest.raises((psycopg.OperationalError, asyncpg.InterfaceError)):
        await run.call("kb.search")


async def test_asyncpg_transactions() -> None:
    """On asyncpg each call is its own transaction, or a savepoint in the caller's: a refused
    call undoes itself only, and nothing is committed before the caller's block is."""
    conn = await asyncpg.connect(database=os.environ["PGDATABASE"], user=PLATFORM)
    try:
        platform = AsyncPlatform(conn)
        outer = conn.transaction()
        await outer.start()
        run = await platform.open_run("bot", "acme/platform")
        await run.input("{origin:webhook}")
        with pytest.raises(UntrustedToIrreversible):
            await run.call("files.delete")
        assert await run.carried() == LabelSet("{area:acme/platform,origin:webhook}")
        await outer.rollback()
        with pytest.raises(LookupError):
            await platform.run(run.id)
    finally:
        await conn.close()
