"""pg_labels.openai_agents: the barrier as a tool guardrail of the OpenAI Agents SDK, with a
scripted model on the SDK's Model interface (no network), against the server."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
from agents import ToolInputGuardrail, ToolOutputGuardrail

import pg_labels
from pg_labels import AsyncPlatform, AsyncRun, LabelSet, Platform, Run
from pg_labels.openai_agents import BarrierGuardrail, barrier_guardrail

from conftest import PLATFORM, connect, labels_of, trail, used_approvals
from scripted_agents import ScriptedModel, Tools, call, catalog_name, run_agent, say

UPDATE = {"ticket": 77, "status": "closed"}
OUTPUT_LABELS = {"company.search": "{area:acme/finance}", "tickets.read": ["tag:pii"]}


def request_of(message: str) -> int:
    m = re.search(r"Approval request (\d+) waits", message)
    assert m, message
    return int(m.group(1))


async def scenario(run: Run | AsyncRun, decide: Callable[[int], object]) -> None:
    """The product page's scenario: a Slack message, a refund refused, an update that asks a
    person and runs once after the grant, a finance search result, then the data barrier."""
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, output_labels=OUTPUT_LABELS)
    assert isinstance(guardrail, ToolInputGuardrail)
    assert isinstance(guardrail.output, ToolOutputGuardrail)
    guarded = guardrail.guard(*tools.all)

    model = ScriptedModel(
        [
            [call("tickets_read", {"order": 1234}, "c1")],
            [call("stripe_refund", {"order": 1234}, "c2")],
            [call("tickets_update", UPDATE, "c3")],
            [say("A person has to approve closing the ticket.")],
        ]
    )
    result = await run_agent(model, guarded, "please refund order 1234 and close my ticket")
    assert result.final_output == "A person has to approve closing the ticket."
    # the refused and the asking calls never ran
    assert tools.ran == [("tickets.read", {"order": 1234})]
    out = model.tool_outputs()
    assert out["c1"] == "ticket of order 1234: refund requested"
    assert out["c2"].startswith("pg_labels refused stripe.refund: untrusted_to_irreversible: ")
    assert "origin:slack/T01/C02" in out["c2"]
    assert "approval_required" in out["c3"]
    request = request_of(out["c3"])

    # rejected until a person decides, pointing at the same request (no second one)
    model = ScriptedModel([[call("tickets_update", UPDATE, "c4")], [say("still waiting")]])
    await run_agent(model, guarded, "close it now")
    assert request_of(model.tool_outputs()["c4"]) == request
    assert len(tools.ran) == 1

    decide(request)
    model = ScriptedModel(
        [
            [call("tickets_update", UPDATE, "c5")],
            [call("tickets_update", UPDATE, "c6")],  # the approval was used: asks again
            [call("company_search", {"q": "Q3 revenue"}, "c7")],
            [call("kb_search", {"q": "refund policy"}, "c8")],
            [say("done")],
        ]
    )
    await run_agent(model, guarded, "the ticket may be closed")
    out = model.tool_outputs()
    assert out["c5"] == "ticket 77 is closed"
    assert "approval_required" in out["c6"]
    assert request_of(out["c6"]) > request
    assert out["c7"] == "Q3 finance export: revenue 12.3M"
    assert out["c8"].startswith("pg_labels refused kb.search: data_barrier: ")
    assert tools.ran == [
        ("tickets.read", {"order": 1234}),
        ("tickets.update", UPDATE),
        ("company.search", {"q": "Q3 revenue"}),
    ]

    steps = trail(run.id)
    assert steps == [
        ("input", None, None, None),
        ("gate_decided", "tickets.read", "allow", None),
        ("tool_called", "tickets.read", "allow", None),
        ("tool_result", "tickets.read", None, None),
        ("gate_decided", "stripe.refund", "block", "untrusted_to_irreversible"),
        ("gate_decided", "tickets.update", "ask", "approval_required"),
        ("approval_requested", "tickets.update", None, None),
        ("gate_decided", "tickets.update", "ask", "approval_required"),
        ("approval_decided", "tickets.update", "granted", None),
        # allowed by the approval, which the call used (once)
        ("gate_decided", "tickets.update", "allow", "approval_required"),
        ("tool_called", "tickets.update", "allow", "approval_required"),
        ("tool_result", "tickets.update", None, None),
        ("gate_decided", "tickets.update", "ask", "approval_required"),
        ("approval_requested", "tickets.update", None, None),
        ("gate_decided", "company.search", "allow", None),
        ("tool_called", "company.search", "allow", None),
        ("tool_result", "company.search", None, None),
        ("gate_decided", "kb.search", "block", "data_barrier"),
    ]
    assert used_approvals(run.id) == [request]


async def test_scenario_on_a_run(platform: Platform, approver: Platform) -> None:
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}", {"text": "please refund order 1234"})
    await scenario(run, lambda r: approver.decide_approval(r, True, "the customer asked"))
    assert run.carried() == LabelSet(
        "{area:acme/finance,area:acme/platform,origin:slack/T01/C02,origin:tool,tag:pii}"
    )


@pytest.fixture
async def aplatform() -> AsyncIterator[AsyncPlatform]:
    conn = await psycopg.AsyncConnection.connect(
        dbname=os.environ["PGDATABASE"], user=PLATFORM, autocommit=True
    )
    try:
        yield AsyncPlatform(conn)
    finally:
        await conn.close()


async def test_scenario_on_an_async_run(aplatform: AsyncPlatform, approver: Platform) -> None:
    run = await aplatform.open_run("support-bot", "acme/platform")
    await run.input("{origin:slack/T01/C02}", {"text": "please refund order 1234"})
    await scenario(run, lambda r: approver.decide_approval(r, True))


async def test_result_labels(platform: Platform) -> None:
    """The result step carries the output's labels (a function of the tool and the output),
    origin:tool for an untrusted tool; the verdicts are the guardrails' output_info."""
    run = platform.open_run("support-bot", "acme/platform")
    tools = Tools()
    seen: list[tuple[str, object]] = []

    def labels(tool: str, output: object) -> list[str] | None:
        seen.append((tool, output))
        return ["tag:pii"] if tool == "tickets.read" else None

    guardrail = barrier_guardrail(run, names=catalog_name, output_labels=labels)
    model = ScriptedModel([[call("tickets_read", {"order": 5}, "r1")], [say("ok")]])
    result = await run_agent(model, guardrail.guard(*tools.all), "read it")
    assert seen == [("tickets.read", "ticket of order 5: refund requested")]
    (before,) = result.tool_input_guardrail_results
    verdict = before.output.output_info
    assert (verdict.decision, verdict.tool) == ("allow", "tickets_read")
    (after,) = result.tool_output_guardrail_results
    step = after.output.output_info
    assert step.kind == "tool_result" and step.labels == LabelSet("{origin:tool,tag:pii}")
    assert labels_of(step.id) == "{origin:tool,tag:pii}"
    # a trusted tool's result has no origin:tool
    model = ScriptedModel([[call("kb_search", {"q": "x"}, "r2")], [say("ok")]])
    result = await run_agent(model, guardrail.guard(*Tools().all), "search")
    assert result.tool_output_guardrail_results[0].output.output_info.labels == LabelSet()


async def test_fail_closed_on_a_closed_connection() -> None:
    conn = connect(PLATFORM, autocommit=True)
    run = Platform(conn).open_run("support-bot", "acme/platform")
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name)
    conn.close()
    model = ScriptedModel([[call("kb_search", {"q": "x"}, "f1")], [say("ok")]])
    await run_agent(model, guardrail.guard(*tools.all), "search")
    assert tools.ran == []
    message = model.tool_outputs()["f1"]
    assert message.startswith("pg_labels refused kb.search: the barrier could not be checked")
    assert "OperationalError" in message and "closed" in message


async def test_fail_closed_on_a_database_error(platform: Platform) -> None:
    # a run the database does not have: the gate's step is refused with 23503
    ghost = pg_labels.Run(platform, uuid.uuid4(), "bot", pg_labels.Scope("acme"), LabelSet())
    tools = Tools()
    model = ScriptedModel([[call("kb_search", {"q": "x"}, "f2")], [say("ok")]])
    await run_agent(model, barrier_guardrail(ghost, names=catalog_name).guard(*tools.all), "go")
    assert tools.ran == []
    message = model.tool_outputs()["f2"]
    assert "could not be checked" in message and "SQLSTATE 23503" in message


async def test_a_result_that_cannot_be_recorded_is_withheld() -> None:
    conn = connect(PLATFORM, autocommit=True)
    run = Platform(conn).open_run("support-bot", "acme/platform")
    tools = Tools()

    # the connection breaks while the tool runs
    def breaks(tool: str, output: object) -> None:
        conn.close()

    guardrail = barrier_guardrail(run, names=catalog_name, output_labels=breaks)
    model = ScriptedModel([[call("tickets_read", {"order": 9}, "w1")], [say("ok")]])
    await run_agent(model, guardrail.guard(*tools.all), "read")
    assert tools.ran == [("tickets.read", {"order": 9})]
    message = model.tool_outputs()["w1"]
    assert "ticket of order 9" not in message
    assert message.startswith("pg_labels: the result of tickets_read could not be recorded")


async def test_unguarded_output_is_withheld(platform: Platform) -> None:
    """The output guardrail alone (no input guardrail on the tool) lets nothing through."""
    run = platform.open_run("support-bot", "acme/platform")
    guardrail = barrier_guardrail(run, names=catalog_name)
    tools = Tools()
    tools.all[0].tool_output_guardrails = [guardrail.output]
    model = ScriptedModel([[call("tickets_read", {"order": 3}, "u1")], [say("ok")]])
    await run_agent(model, tools.all, "read")
    assert "no allowed call of tickets_read" in model.tool_outputs()["u1"]


def test_bad_arguments(platform: Platform) -> None:
    run = platform.open_run("support-bot", "acme/platform")
    with pytest.raises(TypeError):
        barrier_guardrail(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        barrier_guardrail(run, names=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        barrier_guardrail(run).guard("tickets.read")  # type: ignore[arg-type]
    assert isinstance(barrier_guardrail(run), BarrierGuardrail)


async def test_parallel_calls_on_an_async_run(aplatform: AsyncPlatform) -> None:
    """One turn calling several tools: the SDK runs them at once, the guard's statements on
    the run's connection take turns."""
    run = await aplatform.open_run("support-bot", "acme/platform")
    await run.input("{origin:webhook}")
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name)
    turn = [call("kb_search", {"q": str(n)}, f"k{n}") for n in range(6)]
    turn += [call("stripe_refund", {"order": n}, f"s{n}") for n in range(3)]
    model = ScriptedModel([turn, [say("ok")]])
    await run_agent(model, guardrail.guard(*tools.all), "go")
    out = model.tool_outputs()
    assert [out[f"k{n}"] for n in range(6)] == ["refund policy: 30 days"] * 6
    assert all("untrusted_to_irreversible" in out[f"s{n}"] for n in range(3))
    kinds = [s[0] for s in trail(run.id)]
    assert (kinds.count("gate_decided"), kinds.count("tool_called")) == (9, 6)
    assert kinds.count("tool_result") == 6


async def test_a_tool_that_fails(platform: Platform) -> None:
    """A tool that raises: the SDK gives the model its own error text (the pinned version's
    default hides the exception), which enters the run as the result like any output."""
    from agents import function_tool

    @function_tool(name_override="tickets_read")
    def broken(order: int) -> str:
        """Read the ticket of an order."""
        raise RuntimeError("the ticket service is down")

    run = platform.open_run("support-bot", "acme/platform")
    guardrail = barrier_guardrail(run, names=catalog_name)
    model = ScriptedModel([[call("tickets_read", {"order": 1}, "x1")], [say("ok")]])
    await run_agent(model, guardrail.guard(broken), "read")
    assert model.tool_outputs()["x1"].startswith("An error occurred while running the tool")
    assert [s[0] for s in trail(run.id)] == ["gate_decided", "tool_called", "tool_result"]
