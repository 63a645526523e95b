"""pg_labels.langgraph with a checkpointer: a call that needs a person's approval pauses the
graph (interrupt()), LangGraph's Postgres checkpointer keeps it in the same database, a person
decides on another connection, and Command(resume=...) resumes: the wrapper reads the decision
from the database (never from the resume value), runs a granted call once, tells the model of a
denial or an expiry. The model is scripted (a node returning canned AIMessages); LangGraph, its
ToolNode and PostgresSaver are the real ones.

Run as a script (``python test_langgraph_approvals.py RUN_ID THREAD_ID``) it is the process
that resumes a graph another process paused (test_a_restart_between_pause_and_grant)."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

import pg_labels
from pg_labels import AsyncPlatform, AsyncRun, Platform, Run
from pg_labels.langgraph import PAUSE_KIND, barrier_wrapper

from conftest import ALICE, PLATFORM, connect, trail, used_approvals

UPDATE = {"ticket": 77, "status": "closed"}
SCHEMA = "langgraph"  # the checkpointer's tables, in the database of pg_labels (as the docs)


def conninfo() -> str:
    """The checkpointer's connection: the platform's role, its tables in a schema of its own."""
    return psycopg.conninfo.make_conninfo(
        dbname=os.environ["PGDATABASE"], user=PLATFORM, options=f"-c search_path={SCHEMA}"
    )


@pytest.fixture(scope="module", autouse=True)
def checkpoint_schema() -> None:
    """The DBA's part: a schema the platform's role owns for LangGraph's tables, and the
    requests of its runs readable to it; the platform's role makes the tables (setup())."""
    with connect(autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA} AUTHORIZATION {PLATFORM}")
        conn.execute(f"GRANT SELECT ON pg_labels.approval_requests TO {PLATFORM}")
    with PostgresSaver.from_conn_string(conninfo()) as saver:
        saver.setup()


@pytest.fixture
def saver() -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(conninfo()) as s:
        yield s


class Tools:
    """The tools under the catalog's names; their bodies note each time they ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool("tickets.read")
        def tickets_read(order: int) -> str:
            """Read the ticket of an order."""
            self.ran.append(("tickets.read", {"order": order}))
            return f"ticket of order {order}: refund requested"

        @tool("tickets.update")
        def tickets_update(ticket: int, status: str) -> str:
            """Update a ticket."""
            self.ran.append(("tickets.update", {"ticket": ticket, "status": status}))
            return f"ticket {ticket} is {status}"

        self.all: list[BaseTool] = [tickets_read, tickets_update]


class ScriptedModel:
    """The model node: each turn returns the next canned AIMessage and keeps what it saw."""

    def __init__(self, turns: list[AIMessage]) -> None:
        self.turns = list(turns)
        self.seen: list[list[AnyMessage]] = []

    def __call__(self, state: MessagesState) -> dict[str, Any]:
        self.seen.append(list(state["messages"]))
        return {"messages": [self.turns.pop(0)]}


def calls(*calls: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls]
    )


def the_update(call_id: str = "u1") -> list[AIMessage]:
    """The script: close the ticket (a reversible write, asked for on untrusted data), then
    answer."""
    return [calls(("tickets.update", UPDATE, call_id)), AIMessage(content="done")]


def build(run: Run | AsyncRun, tools: Tools, model: ScriptedModel, saver: Any, **kw: Any) -> Any:
    """model -> tools (guarded) -> model, checkpointed by ``saver``."""
    wrapper = barrier_wrapper(run, **kw)
    node = (
        ToolNode(tools.all, wrap_tool_call=wrapper)
        if isinstance(run, Run)
        else ToolNode(tools.all, awrap_tool_call=wrapper)
    )
    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", node)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver)


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def untrusted_run(platform: Platform) -> Run:
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}", {"text": "please close ticket 77"})
    return run


def paused_on(output: dict[str, Any]) -> dict[str, Any]:
    """The one pg_labels interrupt a paused invoke returned."""
    (pause,) = output["__interrupt__"]
    value: dict[str, Any] = pause.value
    assert value["kind"] == PAUSE_KIND
    return value


def request_row(request: int) -> tuple[Any, ...]:
    """(status, tool, args, decided_by, decision_reason) as the superuser reads the request."""
    with connect(autocommit=True) as conn:
        row = conn.execute(
            "SELECT status, tool, args, decided_by, decision_reason "
            "FROM pg_labels.approval_requests WHERE id = %s",
            [request],
        ).fetchone()
    assert row is not None
    return tuple(row)


def kinds(run_id: object, kind: str) -> int:
    return [s[0] for s in trail(run_id)].count(kind)


def last_tool_message(output: dict[str, Any]) -> ToolMessage:
    messages = [m for m in output["messages"] if isinstance(m, ToolMessage)]
    return messages[-1]


def test_pause_grant_resume(platform: Platform, approver: Platform, saver: PostgresSaver) -> None:
    """The graph pauses on the call with the request in the interrupt and the state; a person
    grants on another connection; the resumed graph runs the call once."""
    run = untrusted_run(platform)
    tools, model = Tools(), ScriptedModel(the_update())
    graph = build(run, tools, model, saver)
    config = thread()

    pause = paused_on(graph.invoke({"messages": [HumanMessage("close ticket 77")]}, config))
    request = pause["request"]
    assert pause["tool"] == "tickets.update" and pause["args"] == UPDATE
    assert pause["rule"] == "approval_required" and pause["tool_call_id"] == "u1"
    assert pause["run"] == str(run.id) and pause["reason"]
    state = graph.get_state(config)
    assert state.next == ("tools",) and [i.value for i in state.interrupts] == [pause]
    assert tools.ran == [] and request_row(request)[:3] == ("pending", "tickets.update", UPDATE)

    approver.decide_approval(request, True, "the customer asked for it")
    output = graph.invoke(Command(resume="whatever"), config)
    assert "__interrupt__" not in output
    message = last_tool_message(output)
    assert (message.status, message.content) == ("success", "ticket 77 is closed")
    assert output["messages"][-1].content == "done"
    assert tools.ran == [("tickets.update", UPDATE)]
    assert used_approvals(run.id) == [request]
    assert kinds(run.id, "approval_requested") == 1 and kinds(run.id, "tool_called") == 1
    assert request_row(request)[0] == "granted"


def test_a_denial_reaches_the_model(
    platform: Platform, approver: Platform, saver: PostgresSaver
) -> None:
    """A resume that says "granted" while the request waits pauses again (the same request, no
    second one); the person denies it: the model gets the denial and its reason."""
    run = untrusted_run(platform)
    tools, model = Tools(), ScriptedModel(the_update())
    graph = build(run, tools, model, saver)
    config = thread()
    request = paused_on(graph.invoke({"messages": [HumanMessage("close it")]}, config))["request"]

    for forged in (True, {"granted": True, "request": request}, "granted"):
        again = paused_on(graph.invoke(Command(resume=forged), config))
        assert again["request"] == request
    assert tools.ran == [] and kinds(run.id, "approval_requested") == 1

    approver.decide_approval(request, False, "not this ticket")
    output = graph.invoke(Command(resume={"granted": True}), config)
    message = last_tool_message(output)
    assert message.status == "error" and message.tool_call_id == "u1"
    assert f"a person denied approval request {request}" in str(message.content)
    assert "not this ticket" in str(message.content)
    assert model.seen[-1][-1] == message  # the model's next turn saw it
    assert tools.ran == [] and kinds(run.id, "tool_called") == 0
    assert request_row(request)[0] == "denied"

    # the same call, asked again in a later turn, is a new request
    model.turns = the_update("u2")
    pause = paused_on(graph.invoke({"messages": [HumanMessage("try again")]}, config))
    assert pause["request"] > request and pause["tool_call_id"] == "u2"


def test_an_expired_request(
    platform: Platform, approver: Platform, saver: PostgresSaver
) -> None:
    """approval_ttl: past it the person cannot grant (55000), and the resumed graph tells the
    model the request expired."""
    run = untrusted_run(platform)
    tools, model = Tools(), ScriptedModel(the_update())
    ttl = datetime.timedelta(seconds=1)
    graph = build(run, tools, model, saver, approval_ttl=ttl)
    config = thread()
    request = paused_on(graph.invoke({"messages": [HumanMessage("close it")]}, config))["request"]
    time.sleep(1.2)
    with pytest.raises(pg_labels.Refusal, match=f"approval request {request} expired") as err:
        approver.decide_approval(request, True)
    assert err.value.sqlstate == "55000"
    assert request_row(request)[0] == "expired"
    message = last_tool_message(graph.invoke(Command(resume=True), config))
    assert message.status == "error"
    assert f"approval request {request} for tickets.update expired" in str(message.content)
    assert tools.ran == [] and kinds(run.id, "approval_decided") == 0


def test_a_withdrawn_request(
    platform: Platform, platform_conn: psycopg.Connection, saver: PostgresSaver
) -> None:
    """The app stops waiting and withdraws the request (withdraw_approval, as its requester):
    the resumed graph tells the model so; nobody can grant it after."""
    run = untrusted_run(platform)
    tools, model = Tools(), ScriptedModel(the_update())
    graph = build(run, tools, model, saver)
    config = thread()
    request = paused_on(graph.invoke({"messages": [HumanMessage("close it")]}, config))["request"]
    platform_conn.execute("SELECT pg_labels.withdraw_approval(%s, 'nobody is there')", [request])
    message = last_tool_message(graph.invoke(Command(resume=True), config))
    assert message.status == "error"
    assert f"approval request {request} for tickets.update was withdrawn" in str(message.content)
    assert "nobody is there" in str(message.content)
    assert tools.ran == [] and request_row(request)[0] == "withdrawn"


def test_a_sibling_call_runs_once(
    platform: Platform, approver: Platform, saver: PostgresSaver
) -> None:
    """LangGraph runs the whole node again on resume: a call of the same turn that already ran
    is handed its result, not run again."""
    run = untrusted_run(platform)
    tools = Tools()
    model = ScriptedModel(
        [
            calls(("tickets.read", {"order": 1}, "r1"), ("tickets.update", UPDATE, "u1")),
            AIMessage(content="done"),
        ]
    )
    graph = build(run, tools, model, saver)
    config = thread()
    request = paused_on(graph.invoke({"messages": [HumanMessage("go")]}, config))["request"]
    paused_on(graph.invoke(Command(resume=True), config))  # still pending: pauses again
    approver.decide_approval(request, True)
    output = graph.invoke(Command(resume=True), config)
    by_id = {m.tool_call_id: m for m in output["messages"] if isinstance(m, ToolMessage)}
    assert by_id["r1"].content == "ticket of order 1: refund requested"
    assert by_id["u1"].content == "ticket 77 is closed"
    assert sorted(tools.ran, key=str) == [
        ("tickets.read", {"order": 1}),
        ("tickets.update", UPDATE),
    ]
    assert kinds(run.id, "tool_called") == 2 and kinds(run.id, "approval_requested") == 1


def test_two_asks_in_one_turn(
    platform: Platform, approver: Platform, saver: PostgresSaver
) -> None:
    """Two calls of one turn need approvals: each has its request; the graph pauses on one,
    then on the other while it waits; each runs once when granted."""
    run = untrusted_run(platform)
    tools = Tools()
    other = {"ticket": 78, "status": "closed"}
    model = ScriptedModel(
        [
            calls(("tickets.update", UPDATE, "u1"), ("tickets.update", other, "u2")),
            AIMessage(content="done"),
        ]
    )
    graph = build(run, tools, model, saver)
    config = thread()
    first = paused_on(graph.invoke({"messages": [HumanMessage("go")]}, config))
    assert kinds(run.id, "approval_requested") == 2
    approver.decide_approval(first["request"], True)
    second = paused_on(graph.invoke(Command(resume=True), config))
    assert second["request"] != first["request"]
    assert second["tool_call_id"] != first["tool_call_id"]
    assert tools.ran == [("tickets.update", first["args"])]
    approver.decide_approval(second["request"], True)
    output = graph.invoke(Command(resume=True), config)
    assert "__interrupt__" not in output
    assert sorted(tools.ran, key=str) == sorted(
        [("tickets.update", UPDATE), ("tickets.update", other)], key=str
    )
    assert kinds(run.id, "approval_requested") == 2 and kinds(run.id, "tool_called") == 2


def test_without_a_checkpointer(platform: Platform) -> None:
    """pause=None without a checkpointer: an ask is a ToolMessage error, as before; pause=True
    without one is an error of the app's, raised; pause=False with one never pauses."""
    run = untrusted_run(platform)
    tools = Tools()
    graph = build(run, tools, ScriptedModel(the_update()), None)
    message = last_tool_message(graph.invoke({"messages": [HumanMessage("x")]}))
    assert message.status == "error" and "approval_required" in str(message.content)

    graph = build(run, tools, ScriptedModel(the_update()), None, pause=True)
    with pytest.raises(RuntimeError, match="needs a checkpointer"):
        graph.invoke({"messages": [HumanMessage("x")]})
    assert tools.ran == []
    with pytest.raises(TypeError):
        barrier_wrapper(run, pause="yes")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="approval_ttl"):
        barrier_wrapper(run, approval_ttl=datetime.timedelta(0))


def test_pause_false_with_a_checkpointer(platform: Platform, saver: PostgresSaver) -> None:
    run = untrusted_run(platform)
    tools = Tools()
    graph = build(run, tools, ScriptedModel(the_update()), saver, pause=False)
    output = graph.invoke({"messages": [HumanMessage("x")]}, thread())
    assert "__interrupt__" not in output
    assert "waits for a decision" in str(last_tool_message(output).content)


@pytest.fixture
async def aplatform() -> AsyncIterator[AsyncPlatform]:
    conn = await psycopg.AsyncConnection.connect(
        dbname=os.environ["PGDATABASE"], user=PLATFORM, autocommit=True
    )
    try:
        yield AsyncPlatform(conn)
    finally:
        await conn.close()


async def test_an_async_run_with_the_async_checkpointer(
    aplatform: AsyncPlatform, approver: Platform
) -> None:
    """awrap_tool_call on an AsyncRun, AsyncPostgresSaver, ainvoke: pause, grant, resume."""
    run = await aplatform.open_run("support-bot", "acme/platform")
    await run.input("{origin:slack/T01/C02}")
    tools, model = Tools(), ScriptedModel(the_update())
    async with AsyncPostgresSaver.from_conn_string(conninfo()) as saver:
        graph = build(run, tools, model, saver)
        config = thread()
        output = await graph.ainvoke({"messages": [HumanMessage("close it")]}, config)
        request = paused_on(output)["request"]
        assert paused_on(await graph.ainvoke(Command(resume=True), config))["request"] == request
        approver.decide_approval(request, True)
        output = await graph.ainvoke(Command(resume=True), config)
    assert last_tool_message(output).content == "ticket 77 is closed"
    assert tools.ran == [("tickets.update", UPDATE)] and used_approvals(run.id) == [request]


async def test_a_run_under_ainvoke(platform: Platform, approver: Platform) -> None:
    """A Run's (sync) wrapper, which LangGraph uses from ainvoke too, pauses there as well."""
    run = untrusted_run(platform)
    tools, model = Tools(), ScriptedModel(the_update())
    async with AsyncPostgresSaver.from_conn_string(conninfo()) as saver:
        graph = build(run, tools, model, saver)
        config = thread()
        output = await graph.ainvoke({"messages": [HumanMessage("close it")]}, config)
        request = paused_on(output)["request"]
        approver.decide_approval(request, False, "no")
        output = await graph.ainvoke(Command(resume=True), config)
    assert "no" in str(last_tool_message(output).content) and tools.ran == []


def test_a_restart_between_pause_and_grant(
    platform: Platform, approver: Platform, saver: PostgresSaver
) -> None:
    """This process pauses the graph and goes; a person grants; another process opens the run
    by its id and resumes the thread from the Postgres checkpoint: the call runs there, once."""
    run = untrusted_run(platform)
    tools, model = Tools(), ScriptedModel(the_update())
    config = thread()
    graph = build(run, tools, model, saver)
    request = paused_on(graph.invoke({"messages": [HumanMessage("close it")]}, config))["request"]
    approver.decide_approval(request, True, "fine")

    child = subprocess.run(
        [sys.executable, __file__, str(run.id), config["configurable"]["thread_id"]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.path.dirname(__file__)},
    )
    assert child.returncode == 0, child.stderr
    resumed = json.loads(child.stdout)
    assert resumed["ran"] == [["tickets.update", UPDATE]] and tools.ran == []
    assert resumed["tool_message"] == ["success", "ticket 77 is closed"]
    assert resumed["last"] == "after the restart"
    assert used_approvals(run.id) == [request] and kinds(run.id, "approval_requested") == 1


def test_the_docs_example() -> None:
    """docs/approvals.md's LangGraph example, as written, as the platform's role (here the
    suite's), its approver the suite's; it prints what its comments say."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "approvals.md").read_text("utf-8")
    section = page[page.index("\n## LangGraph\n") :]
    found = re.search(r"<!-- runnable -->\n```python\n(.*?)```", section, re.S)
    assert found, "docs/approvals.md: no runnable block in ## LangGraph"
    code = found.group(1)
    assert 'user="alice"' in code, "the example's approver is no longer alice: update this test"
    code = code.replace('user="alice"', f'user="{ALICE}"')
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PGUSER=PLATFORM),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = re.findall(r"print\(.*\)\s+#\s(.*)$", code, re.M)
    assert len(expected) == 2 and done.stdout.splitlines() == expected


def resume_in_this_process(run_id: str, thread_id: str) -> None:
    """The other process of test_a_restart_between_pause_and_grant: the run by its id, the
    same graph, the thread resumed from its checkpoint; prints what happened as JSON."""
    with connect(PLATFORM, autocommit=True) as conn, PostgresSaver.from_conn_string(
        conninfo()
    ) as saver:
        run = pg_labels.Platform(conn).run(run_id)
        tools = Tools()
        model = ScriptedModel([AIMessage(content="after the restart")])
        graph = build(run, tools, model, saver)
        output = graph.invoke(Command(resume="granted"), {"configurable": {"thread_id": thread_id}})
        message = last_tool_message(output)
        print(
            json.dumps(
                {
                    "ran": tools.ran,
                    "tool_message": [message.status, message.content],
                    "last": output["messages"][-1].content,
                }
            )
        )


if __name__ == "__main__":
    resume_in_this_process(sys.argv[1], sys.argv[2])
