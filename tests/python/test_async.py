"""AsyncPlatform on a psycopg AsyncConnection: the same calls, awaited."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

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

from conftest import ALICE, PLATFORM


async def aconnect(user: str, autocommit: bool = True) -> psycopg.AsyncConnection:
    return await psycopg.AsyncConnection.connect(
        dbname=os.environ["PGDATABASE"], user=user, autocommit=autocommit
    )


@pytest.fixture
async def aplatform() -> AsyncIterator[AsyncPlatform]:
    conn = await aconnect(PLATFORM)
    try:
        yield AsyncPlatform(conn)
    finally:
        await conn.close()


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


async def test_approvals_and_transactions() -> None:
    writer = await aconnect(PLATFORM, autocommit=False)
    decider = await aconnect(ALICE)
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
        AsyncPlatform("nope")  # type: ignore[arg-type]
    run = await aplatform.open_run("bot", "acme")
    with pytest.raises(TypeError):
        await run.gate(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await run.input("{x}")
    await aplatform.conn.close()
    with pytest.raises(psycopg.OperationalError):
        await run.call("kb.search")
