"""pg_labels.langgraph: the barrier around LangGraph's ToolNode (wrap_tool_call and
awrap_tool_call), driven with langchain_core's AIMessage carrying tool_calls, against the
server. No model, no network."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

import pg_labels
from pg_labels import AsyncPlatform, AsyncRun, LabelSet, Platform, Run
from pg_labels.langgraph import barrier_wrapper

from conftest import PLATFORM, connect, trail, used_approvals

UPDATE = {"ticket": 77, "status": "closed"}
OUTPUT_LABELS = {"company.search": "{area:acme/finance}", "tickets.read": ["tag:pii"]}


class Tools:
    """The scenario's tools under the catalog's names; their bodies note that they ran."""

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

        @tool("stripe.refund")
        def stripe_refund(order: int) -> str:
            """Refund an order."""
            self.ran.append(("stripe.refund", {"order": order}))
            return f"refunded order {order}"

        @tool("company.search")
        def company_search(q: str) -> str:
            """Search the company's documents."""
            self.ran.append(("company.search", {"q": q}))
            return "Q3 finance export: revenue 12.3M"

        @tool("kb.search")
        def kb_search(q: str) -> str:
            """Search the knowledge base."""
            self.ran.append(("kb.search", {"q": q}))
            return "refund policy: 30 days"

        self.all: list[BaseTool] = [
            tickets_read,
            tickets_update,
            stripe_refund,
            company_search,
            kb_search,
        ]


def ask(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The state a model's turn leaves: an AIMessage with one tool call."""
    return {
        "messages": [
            AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])
        ]
    }


def request_of(message: ToolMessage) -> int:
    m = re.search(r"Approval request (\d+) waits", str(message.content))
    assert m, message.content
    return int(m.group(1))


Invoke = Callable[[dict[str, Any]], Awaitable[ToolMessage]]


async def scenario(run: Run | AsyncRun, node: Invoke, tools: Tools, decide: Any) -> None:
    """The product page's scenario, as in test_openai_agents."""
    m = await node(ask("tickets.read", {"order": 1234}, "c1"))
    assert (m.status, m.content) == ("success", "ticket of order 1234: refund requested")

    m = await node(ask("stripe.refund", {"order": 1234}, "c2"))
    assert m.status == "error" and m.tool_call_id == "c2" and m.name == "stripe.refund"
    assert str(m.content).startswith("pg_labels refused stripe.refund: untrusted_to_irreversible")

    m = await node(ask("tickets.update", UPDATE, "c3"))
    assert m.status == "error" and "approval_required" in str(m.content)
    request = request_of(m)
    # asked again before a person decides: the same request
    m = await node(ask("tickets.update", UPDATE, "c3b"))
    assert m.status == "error" and request_of(m) == request
    assert tools.ran == [("tickets.read", {"order": 1234})]

    decide(request)
    m = await node(ask("tickets.update", UPDATE, "c4"))
    assert (m.status, m.content) == ("success", "ticket 77 is closed")
    m = await node(ask("tickets.update", UPDATE, "c5"))  # the approval was used: asks again
    assert m.status == "error" and request_of(m) > request

    m = await node(ask("company.search", {"q": "Q3 revenue"}, "c6"))
    assert m.content == "Q3 finance export: revenue 12.3M"
    m = await node(ask("kb.search", {"q": "refund policy"}, "c7"))
    assert m.status == "error"
    assert str(m.content).startswith("pg_labels refused kb.search: data_barrier: ")
    assert tools.ran == [
        ("tickets.read", {"order": 1234}),
        ("tickets.update", UPDATE),
        ("company.search", {"q": "Q3 revenue"}),
    ]
    assert trail(run.id) == [
        ("input", None, None, None),
        ("gate_decided", "tickets.read", "allow", None),
        ("tool_called", "tickets.read", "allow", None),
        ("tool_result", "tickets.read", None, None),
        ("gate_decided", "stripe.refund", "block", "untrusted_to_irreversible"),
        ("gate_decided", "tickets.update", "ask", "approval_required"),
        ("approval_requested", "tickets.update", None, None),
        ("gate_decided", "tickets.update", "ask", "approval_required"),
        ("approval_decided", "tickets.update", "granted", None),
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


def graph(node: ToolNode) -> Any:
    """The node in a graph of its own (a ToolNode runs inside a graph): START, tools, END."""
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def one(output: Any) -> ToolMessage:
    ai, message = output["messages"]
    assert isinstance(ai, AIMessage) and isinstance(message, ToolMessage)
    return message


async def test_scenario_on_a_run(platform: Platform, approver: Platform) -> None:
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}", {"text": "please refund order 1234"})
    tools = Tools()
    node = graph(
        ToolNode(tools.all, wrap_tool_call=barrier_wrapper(run, output_labels=OUTPUT_LABELS))
    )

    async def invoke(state: dict[str, Any]) -> ToolMessage:
        return one(node.invoke(state))

    await scenario(run, invoke, tools, lambda r: approver.decide_approval(r, True))
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
    tools = Tools()
    wrapper = barrier_wrapper(run, output_labels=OUTPUT_LABELS)
    node = graph(ToolNode(tools.all, awrap_tool_call=wrapper))

    async def invoke(state: dict[str, Any]) -> ToolMessage:
        return one(await node.ainvoke(state))

    await scenario(run, invoke, tools, lambda r: approver.decide_approval(r, True))


async def test_a_run_wrapper_under_ainvoke(platform: Platform) -> None:
    """A Run's (sync) wrapper serves ainvoke too, as LangGraph falls back to it."""
    run = platform.open_run("support-bot", "acme/platform")
    tools = Tools()
    node = graph(ToolNode(tools.all, wrap_tool_call=barrier_wrapper(run)))
    m = one(await node.ainvoke(ask("kb.search", {"q": "x"}, "a1")))
    assert m.content == "refund policy: 30 days"
    assert [s[0] for s in trail(run.id)] == ["gate_decided", "tool_called", "tool_result"]


def test_fail_closed_on_a_closed_connection() -> None:
    conn = connect(PLATFORM, autocommit=True)
    run = Platform(conn).open_run("support-bot", "acme/platform")
    tools = Tools()
    node = graph(ToolNode(tools.all, wrap_tool_call=barrier_wrapper(run)))
    conn.close()
    m = one(node.invoke(ask("kb.search", {"q": "x"}, "f1")))
    assert tools.ran == [] and m.status == "error"
    assert str(m.content).startswith("pg_labels refused kb.search: the barrier could not be")
    assert "OperationalError" in str(m.content)


def test_fail_closed_on_a_database_error(platform: Platform) -> None:
    ghost = pg_labels.Run(platform, uuid.uuid4(), "bot", pg_labels.Scope("acme"), LabelSet())
    tools = Tools()
    node = graph(ToolNode(tools.all, wrap_tool_call=barrier_wrapper(ghost)))
    m = one(node.invoke(ask("kb.search", {"q": "x"}, "f2")))
    assert tools.ran == [] and m.status == "error"
    assert "could not be checked" in str(m.content) and "SQLSTATE 23503" in str(m.content)


def test_a_result_that_cannot_be_recorded_is_withheld() -> None:
    conn = connect(PLATFORM, autocommit=True)
    run = Platform(conn).open_run("support-bot", "acme/platform")
    tools = Tools()

    def breaks(tool: str, output: object) -> None:
        assert output == "ticket of order 9: refund requested"
        conn.close()

    node = graph(ToolNode(tools.all, wrap_tool_call=barrier_wrapper(run, output_labels=breaks)))
    m = one(node.invoke(ask("tickets.read", {"order": 9}, "w1")))
    assert tools.ran == [("tickets.read", {"order": 9})]
    assert m.status == "error" and "ticket of order 9" not in str(m.content)
    assert str(m.content).startswith("pg_labels: the result of tickets.read could not be")


def test_a_denied_approval(platform: Platform, approver: Platform) -> None:
    """Denied: the model is told so, the tool never runs; the next attempt asks anew. Other
    arguments are another call, with a request of their own."""
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}")
    tools = Tools()
    app = graph(ToolNode(tools.all, wrap_tool_call=barrier_wrapper(run)))
    first = request_of(one(app.invoke(ask("tickets.update", UPDATE, "d1"))))
    other = request_of(
        one(app.invoke(ask("tickets.update", {"ticket": 78, "status": "closed"}, "d2")))
    )
    assert other != first
    approver.decide_approval(first, False, "not this one")
    assert run.approval(first) == "denied" and run.approval(other) is None
    m = one(app.invoke(ask("tickets.update", UPDATE, "d3")))
    assert m.status == "error"
    assert f"a person denied approval request {first} for this call" in str(m.content)
    again = request_of(one(app.invoke(ask("tickets.update", UPDATE, "d4"))))
    assert again > other
    assert request_of(one(app.invoke(ask("tickets.update", UPDATE, "d5")))) == again
    approver.decide_approval(again, True)
    assert run.approval(again) == "granted"
    assert one(app.invoke(ask("tickets.update", UPDATE, "d6"))).content == "ticket 77 is closed"
    assert tools.ran == [("tickets.update", UPDATE)]


def test_names_and_an_unknown_tool(platform: Platform) -> None:
    """names maps the node's tool names to the catalog's; a tool the catalog lacks is
    refused unknown_tool (fail closed)."""
    run = platform.open_run("support-bot", "acme/platform")
    tools = Tools()
    node = graph(
        ToolNode(
            tools.all,
            wrap_tool_call=barrier_wrapper(run, names={"tickets.read": "no.such.tool"}),
        )
    )
    m = one(node.invoke(ask("tickets.read", {"order": 1}, "n1")))
    assert m.status == "error" and "unknown_tool" in str(m.content)
    assert tools.ran == []


def parallel(calls: list[tuple[str, dict[str, Any], str]]) -> dict[str, Any]:
    tool_calls = [{"name": n, "args": a, "id": i} for n, a, i in calls]
    return {"messages": [AIMessage(content="", tool_calls=tool_calls)]}


CALLS = [("kb.search", {"q": str(n)}, f"p{n}") for n in range(8)] + [
    ("stripe.refund", {"order": n}, f"r{n}") for n in range(4)
]


def check_parallel(run_id: uuid.UUID, messages: list[Any], tools: Tools) -> None:
    by_id = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    assert all(by_id[f"p{n}"].content == "refund policy: 30 days" for n in range(8))
    assert all(by_id[f"r{n}"].status == "error" for n in range(4))
    assert sorted(t for t, _ in tools.ran) == ["kb.search"] * 8
    kinds = [s[0] for s in trail(run_id)]
    assert kinds.count("tool_called") == 8 and kinds.count("tool_result") == 8
    assert kinds.count("gate_decided") == 12


def test_parallel_calls_on_a_run(platform: Platform) -> None:
    """A ToolNode runs an AIMessage's calls in parallel threads: the guard's statements on the
    run's one connection are serialized."""
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:webhook}")
    tools = Tools()
    app = graph(ToolNode(tools.all, wrap_tool_call=barrier_wrapper(run)))
    check_parallel(run.id, app.invoke(parallel(CALLS))["messages"], tools)


async def test_parallel_calls_on_an_async_run(aplatform: AsyncPlatform) -> None:
    run = await aplatform.open_run("support-bot", "acme/platform")
    await run.input("{origin:webhook}")
    tools = Tools()
    app = graph(ToolNode(tools.all, awrap_tool_call=barrier_wrapper(run)))
    check_parallel(run.id, (await app.ainvoke(parallel(CALLS)))["messages"], tools)
