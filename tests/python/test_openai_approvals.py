"""pg_labels.openai_agents with pause=True: a call the gate answers ``ask`` pauses the run (the
SDK's own interruption), a person decides in the database on another connection, and
resolve_approvals + Runner.run(agent, state) resume it: the tool's body runs once, after a
grant only. The real SDK, a scripted model (no network), the server.

Run as a script (``python test_openai_approvals.py STATE_FILE``), this file is the process
that resumes a paused run from its RunState JSON (test_restart_between_pause_and_grant)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from agents import Agent, Runner, RunState
from test_docs import expected_output

import pg_labels
from pg_labels import AsyncPlatform, Platform, Run
from pg_labels.openai_agents import BarrierGuardrail, barrier_guardrail, resolve_approvals

from conftest import ALICE, PLATFORM, connect, trail, used_approvals
from scripted_agents import ScriptedModel, Tools, call, catalog_name, say

UPDATE = {"ticket": 77, "status": "closed"}
HERE = Path(__file__).resolve().parent


def agent_of(model: ScriptedModel, guardrail: BarrierGuardrail, tools: Tools) -> Agent[Any]:
    return Agent(
        name="support-bot",
        instructions="Help the customer.",
        model=model,
        tools=guardrail.guard(*tools.all),
    )


def paused_run(platform: Platform) -> Run:
    """A run that read a Slack message: closing a ticket needs a person."""
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}", {"text": "please close my ticket"})
    return run


def requests_of(run: Run) -> list[int]:
    with connect(autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id FROM pg_labels.steps WHERE run_id = %s AND kind = 'approval_requested' "
            "ORDER BY id",
            [run.id],
        ).fetchall()
    return [int(r[0]) for r in rows]


def decide(request: int, granted: bool, reason: str | None = None) -> None:
    """The approver, on a connection of their own."""
    with connect(ALICE, autocommit=True) as conn:
        conn.execute("SELECT pg_labels.decide_approval(%s, %s, %s)", [request, granted, reason])


def decide_later(request: int, granted: bool, reason: str | None = None) -> threading.Timer:
    timer = threading.Timer(0.3, decide, [request, granted, reason])
    timer.start()
    return timer


async def test_pause_grant_resume(platform: Platform) -> None:
    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel(
        [
            [call("tickets_read", {"order": 1}, "a0"), call("tickets_update", UPDATE, "a1")],
            [say("closed")],
        ]
    )
    agent = agent_of(model, guardrail, tools)
    result = await Runner.run(agent, "close my ticket", max_turns=10)
    # the read ran; the update is the SDK's interruption, its body did not run
    assert tools.ran == [("tickets.read", {"order": 1})]
    (item,) = result.interruptions
    assert item.tool_name == "tickets_update"
    (request,) = requests_of(run)

    state = result.to_state()
    # no decision yet: left as it is
    (r,) = await resolve_approvals(state, guardrail)
    assert (r.action, r.request_id, r.decision and r.decision.status) == (
        "waiting",
        request,
        "pending",
    )
    (r,) = await resolve_approvals(state, guardrail, wait=0.2)
    assert (r.action, r.decision and r.decision.status) == ("waiting", "timeout")

    # the approver grants on another connection while the app waits
    timer = decide_later(request, True, "the customer asked")
    started = time.monotonic()
    (r,) = await resolve_approvals(state, guardrail, wait=30)
    timer.join()
    assert time.monotonic() - started < 10
    assert r.action == "approved" and r.decision is not None
    assert (r.decision.status, r.decision.reason, r.decision.decided_by) == (
        "granted",
        "the customer asked",
        ALICE,
    )

    result = await Runner.run(agent, state, max_turns=10)
    assert result.final_output == "closed"
    assert tools.ran == [("tickets.read", {"order": 1}), ("tickets.update", UPDATE)]
    assert model.tool_outputs()["a1"] == "ticket 77 is closed"
    assert used_approvals(run.id) == [request]
    assert trail(run.id) == [
        ("input", None, None, None),
        ("gate_decided", "tickets.read", "allow", None),
        ("tool_called", "tickets.read", "allow", None),
        ("gate_decided", "tickets.update", "ask", "approval_required"),
        ("approval_requested", "tickets.update", None, None),
        ("tool_result", "tickets.read", None, None),
        ("approval_decided", "tickets.update", "granted", None),
        ("gate_decided", "tickets.update", "allow", "approval_required"),
        ("tool_called", "tickets.update", "allow", "approval_required"),
        ("tool_result", "tickets.update", None, None),
    ]


async def test_denial_reaches_the_model(platform: Platform) -> None:
    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel([[call("tickets_update", UPDATE, "d1")], [say("not closed")]])
    agent = agent_of(model, guardrail, tools)
    result = await Runner.run(agent, "close my ticket", max_turns=10)
    (request,) = requests_of(run)
    state = result.to_state()
    timer = decide_later(request, False, "the ticket is still open upstream")
    (r,) = await resolve_approvals(state, guardrail, wait=30)
    timer.join()
    assert r.action == "rejected"
    result = await Runner.run(agent, state, max_turns=10)
    assert result.final_output == "not closed"
    assert tools.ran == []
    told = model.tool_outputs()["d1"]
    assert f"denied approval request {request} for tickets.update" in told
    assert "the ticket is still open upstream" in told
    assert [s[0] for s in trail(run.id)].count("tool_called") == 0

    # the same call asked again: refused with the denial, without pausing
    model.turns = [[call("tickets_update", UPDATE, "d2")], [say("ok")]]
    result = await Runner.run(agent, "close it", max_turns=10)
    assert not result.interruptions
    assert f"person denied approval request {request}" in model.tool_outputs()["d2"]
    assert tools.ran == []


async def test_an_expired_request_cannot_be_granted(platform: Platform) -> None:
    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True, approval_ttl=0.5)
    model = ScriptedModel([[call("tickets_update", UPDATE, "e1")], [say("too late")]])
    agent = agent_of(model, guardrail, tools)
    result = await Runner.run(agent, "close my ticket", max_turns=10)
    (request,) = requests_of(run)
    state = result.to_state()
    started = time.monotonic()
    # the wait stops at expires_at, not at its own bound
    (r,) = await resolve_approvals(state, guardrail, wait=30)
    assert time.monotonic() - started < 10
    assert (r.action, r.decision and r.decision.status) == ("rejected", "expired")
    with pytest.raises(psycopg.Error) as e:
        decide(request, True, "too late")
    assert e.value.sqlstate == "55000"
    assert f"approval request {request} expired at" in str(e.value)
    result = await Runner.run(agent, state, max_turns=10)
    assert tools.ran == []
    assert "expired at" in model.tool_outputs()["e1"]
    assert "approval_decided" not in [s[0] for s in trail(run.id)]


async def test_an_approval_the_database_did_not_grant_lets_nothing_through(
    platform: Platform,
) -> None:
    """The app approving by itself (or a tampered RunState): the gate is asked again when the
    call runs, and the call is refused."""
    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel([[call("tickets_update", UPDATE, "t1")], [say("hm")]])
    agent = agent_of(model, guardrail, tools)
    result = await Runner.run(agent, "close my ticket", max_turns=10)
    (request,) = requests_of(run)
    state = result.to_state()
    state.approve(result.interruptions[0])
    await Runner.run(agent, state, max_turns=10)
    assert tools.ran == []
    assert f"Approval request {request} waits" in model.tool_outputs()["t1"]
    assert used_approvals(run.id) == []


async def test_calls_that_do_not_ask_do_not_pause(platform: Platform) -> None:
    """pause=True changes nothing for allowed and refused calls: one gate decision each."""
    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel(
        [[call("tickets_read", {"order": 2}, "n1"), call("stripe_refund", {"order": 2}, "n2")]]
    )
    result = await Runner.run(agent_of(model, guardrail, tools), "go", max_turns=10)
    assert not result.interruptions
    assert tools.ran == [("tickets.read", {"order": 2})]
    assert "untrusted_to_irreversible" in model.tool_outputs()["n2"]
    assert trail(run.id) == [
        ("input", None, None, None),
        ("gate_decided", "tickets.read", "allow", None),
        ("tool_called", "tickets.read", "allow", None),
        ("gate_decided", "stripe.refund", "block", "untrusted_to_irreversible"),
        ("tool_result", "tickets.read", None, None),
    ]


async def test_pause_on_an_async_run(aplatform: AsyncPlatform) -> None:
    """The same on an AsyncRun (psycopg's AsyncConnection and asyncpg)."""
    run = await aplatform.open_run("support-bot", "acme/platform")
    await run.input("{origin:slack/T01/C02}")
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel([[call("tickets_update", UPDATE, "y1")], [say("closed")]])
    agent = agent_of(model, guardrail, tools)
    result = await Runner.run(agent, "close my ticket", max_turns=10)
    assert len(result.interruptions) == 1
    state = result.to_state()
    request = guardrail._asked["y1"]
    timer = decide_later(request, True)
    (r,) = await resolve_approvals(state, guardrail, wait=30)
    timer.join()
    assert (r.item.raw_item.call_id, r.action, r.request_id) == ("y1", "approved", request)
    await Runner.run(agent, state, max_turns=10)
    assert tools.ran == [("tickets.update", UPDATE)]
    assert used_approvals(run.id) == [request]


async def test_a_call_the_sdk_pauses_without_asking(platform: Platform) -> None:
    """A tool with a default the model left out: the SDK pauses the call without asking
    needs_approval; resolve_approvals asks the gate then (ask: a request, waited for; allow:
    approved, no person needed)."""
    from agents import function_tool

    ran: list[dict[str, Any]] = []

    @function_tool
    def tickets_update(ticket: int, status: str = "closed") -> str:
        """Update a ticket."""
        ran.append({"ticket": ticket, "status": status})
        return f"ticket {ticket} is {status}"

    @function_tool
    def tickets_read(order: int, full: bool = False) -> str:
        """Read the ticket of an order."""
        ran.append({"order": order})
        return "a ticket"

    run = paused_run(platform)
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel(
        [
            [call("tickets_update", {"ticket": 5}, "s1"), call("tickets_read", {"order": 5}, "s2")],
            [say("ok")],
        ]
    )
    agent = Agent(
        name="support-bot", model=model, tools=guardrail.guard(tickets_update, tickets_read)
    )
    result = await Runner.run(agent, "close it", max_turns=10)
    assert len(result.interruptions) == 2 and ran == []
    assert requests_of(run) == []  # the gate was not asked
    state = result.to_state()
    timer = threading.Timer(1.0, lambda: decide(requests_of(run)[0], True))
    timer.start()
    by_call = {
        r.item.raw_item.call_id: r  # type: ignore[union-attr]
        for r in await resolve_approvals(state, guardrail, wait=30)
    }
    timer.join()
    (request,) = requests_of(run)
    assert (by_call["s1"].action, by_call["s1"].request_id) == ("approved", request)
    assert by_call["s2"].action == "allowed"
    await Runner.run(agent, state, max_turns=10)
    assert sorted(map(str, ran)) == sorted(
        map(str, [{"ticket": 5, "status": "closed"}, {"order": 5}])
    )
    assert used_approvals(run.id) == [request]
    kinds = [s[0] for s in trail(run.id)]
    assert (kinds.count("tool_called"), kinds.count("tool_result")) == (2, 2)


async def test_a_verdict_is_used_for_its_own_call_only(platform: Platform) -> None:
    """A verdict needs_approval took and no guardrail used (a call id the model uses again,
    other arguments): the gate is asked again for the new call."""
    from pg_labels import Verdict
    from pg_labels.openai_agents import _key

    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name)
    guardrail._checked["z1"] = (_key({"order": 1}), Verdict("tickets_read", "allow"))
    model = ScriptedModel([[call("tickets_read", {"order": 2}, "z1")], [say("ok")]])
    await Runner.run(agent_of(model, guardrail, tools), "read", max_turns=10)
    assert tools.ran == [("tickets.read", {"order": 2})]
    with connect(autocommit=True) as conn:
        rows = conn.execute(
            "SELECT kind, args FROM pg_labels.steps WHERE run_id = %s AND kind = 'tool_called'",
            [run.id],
        ).fetchall()
    assert rows == [("tool_called", {"order": 2})]


def test_a_tool_with_its_own_needs_approval(platform: Platform) -> None:
    tools = Tools()
    tools.all[2].needs_approval = True
    guardrail = barrier_guardrail(platform.open_run("bot", "acme"), pause=True)
    with pytest.raises(TypeError, match="needs_approval of its own"):
        guardrail.guard(*tools.all)
    # nothing was guarded
    assert all(not t.tool_input_guardrails for t in tools.all)


async def test_restart_between_pause_and_grant(platform: Platform, tmp_path: Path) -> None:
    """The process that paused is gone; another one restores the RunState from its JSON,
    waits for the person's decision, and resumes: the tool's body runs once, there."""
    run = paused_run(platform)
    tools = Tools()
    guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
    model = ScriptedModel([[call("tickets_update", UPDATE, "r1")]])
    result = await Runner.run(agent_of(model, guardrail, tools), "close my ticket", max_turns=10)
    assert len(result.interruptions) == 1
    (request,) = requests_of(run)
    saved = tmp_path / "state.json"
    saved.write_text(json.dumps({"run": str(run.id), "state": result.to_state().to_json()}))
    del result, guardrail, model  # this process forgets the run

    child = subprocess.Popen(
        [sys.executable, __file__, str(saved)],
        cwd=HERE,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # grant once the other process waits (it says so on its stderr)
        assert child.stderr is not None
        line = child.stderr.readline()
        assert line.startswith("waiting"), line + child.stderr.read()
        await asyncio.sleep(0.2)
        decide(request, True, "yes")
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    resumed = json.loads(out)
    assert resumed["actions"] == [["approved", request]]
    assert resumed["ran"] == [["tickets.update", UPDATE]]
    assert resumed["said"] == "ticket 77 is closed"
    assert tools.ran == []
    assert used_approvals(run.id) == [request]
    kinds = [s[0] for s in trail(run.id)]
    assert kinds.count("tool_called") == 1 and kinds.count("tool_result") == 1


def test_the_docs_example() -> None:
    """docs/approvals.md's Python example runs as written (its roles the suite's) and prints
    what its comments say."""
    page = (HERE.parents[1] / "docs" / "approvals.md").read_text(encoding="utf-8")
    section = page[page.index("## Waiting for a person in Python and the OpenAI Agents SDK") :]
    (code,) = re.findall(r"<!-- runnable -->\n```python\n(.*?)```", section, re.S)
    assert 'user="alice"' in code
    env = dict(os.environ, PGUSER=PLATFORM)
    done = subprocess.run(
        [sys.executable, "-c", code.replace('user="alice"', f'user="{ALICE}"')],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected_output(code), done.stderr


async def _resume(saved: Path) -> dict[str, Any]:
    """The other process: restores the paused run and resumes it after the decision."""
    data = json.loads(saved.read_text())
    with connect(PLATFORM, autocommit=True) as conn:
        run = pg_labels.Platform(conn).run(data["run"])
        tools = Tools()
        guardrail = barrier_guardrail(run, names=catalog_name, pause=True)
        model = ScriptedModel([[say("resumed")]])
        agent = agent_of(model, guardrail, tools)
        state = await RunState.from_json(agent, data["state"])
        print("waiting", file=sys.stderr, flush=True)
        resolutions = await resolve_approvals(state, guardrail, wait=30)
        result = await Runner.run(agent, state, max_turns=10)
        assert result.final_output == "resumed"
        return {
            "actions": [[r.action, r.request_id] for r in resolutions],
            "ran": [list(r) for r in tools.ran],
            "said": model.tool_outputs().get("r1"),
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_resume(Path(sys.argv[1])))))
