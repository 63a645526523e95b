"""The guards' spans (the otel extra): one ``execute_tool <name>`` span per guarded call, as the
GenAI semantic conventions name a tool's execution, with the barrier's attributes; a refused
call's span has status ERROR. Read with the SDK's in-memory exporter. Without OpenTelemetry
the guards work the same, without spans."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import pg_labels
from pg_labels import LabelSet, Platform
from pg_labels.langgraph import barrier_wrapper
from pg_labels.openai_agents import barrier_guardrail

from conftest import PLATFORM, connect
from scripted_agents import ScriptedModel, call, catalog_name, run_agent, say
from scripted_agents import Tools as AgentTools
from test_langgraph import Tools as GraphTools


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def node(tools: GraphTools, wrapper: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools.all, wrap_tool_call=wrapper))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def ask(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "messages": [
            AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])
        ]
    }


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_spans_of_a_langgraph_node(
    platform: Platform,
    approver: Platform,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}")
    graph = node(GraphTools(), barrier_wrapper(run, tracer_provider=provider))

    graph.invoke(ask("tickets.read", {"order": 1}, "s1"))
    graph.invoke(ask("stripe.refund", {"order": 1}, "s2"))
    graph.invoke(ask("tickets.update", {"ticket": 7, "status": "closed"}, "s3"))
    allowed, refused, asked = exporter.get_finished_spans()

    assert allowed.name == "execute_tool tickets.read"
    a = attrs(allowed)
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "tickets.read"
    assert a["gen_ai.tool.call.id"] == "s1"
    assert a["pg_labels.decision"] == "allow"
    assert a["pg_labels.run_id"] == str(run.id)
    assert (
        isinstance(a["pg_labels.step_id"], int)
        and a["pg_labels.result_step_id"] > (a["pg_labels.step_id"])
    )
    assert "pg_labels.rule" not in a and "pg_labels.sqlstate" not in a
    assert allowed.status.status_code == StatusCode.UNSET

    assert refused.name == "execute_tool stripe.refund"
    r = attrs(refused)
    assert r["pg_labels.decision"] == "block"
    assert r["pg_labels.rule"] == "untrusted_to_irreversible"
    assert r["pg_labels.sqlstate"] == "23L02"
    assert r["error.type"] == "untrusted_to_irreversible"
    assert isinstance(r["pg_labels.step_id"], int)  # the gate_decided step
    assert refused.status.status_code == StatusCode.ERROR
    assert "untrusted_to_irreversible" in (refused.status.description or "")

    q = attrs(asked)
    assert (q["pg_labels.decision"], q["pg_labels.rule"], q["pg_labels.sqlstate"]) == (
        "ask",
        "approval_required",
        "23L03",
    )
    assert asked.status.status_code == StatusCode.ERROR
    request = q["pg_labels.request_id"]

    approver.decide_approval(request, True)
    exporter.clear()
    graph.invoke(ask("tickets.update", {"ticket": 7, "status": "closed"}, "s4"))
    (used,) = exporter.get_finished_spans()
    u = attrs(used)
    assert (u["pg_labels.decision"], u["pg_labels.rule"], u["pg_labels.request_id"]) == (
        "allow",
        "approval_required",
        request,
    )
    assert used.status.status_code == StatusCode.UNSET


def test_spans_of_failures(
    platform: Platform, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    ghost = pg_labels.Run(platform, uuid.uuid4(), "bot", pg_labels.Scope("acme"), LabelSet())
    node(GraphTools(), barrier_wrapper(ghost, tracer_provider=provider)).invoke(
        ask("kb.search", {}, "e1")
    )
    conn = connect(PLATFORM, autocommit=True)
    run = Platform(conn).open_run("support-bot", "acme/platform")
    graph = node(GraphTools(), barrier_wrapper(run, tracer_provider=provider))
    conn.close()
    graph.invoke(ask("kb.search", {}, "e2"))
    database, closed = exporter.get_finished_spans()
    d = attrs(database)
    assert (d["pg_labels.decision"], d["pg_labels.sqlstate"]) == ("error", "23503")
    assert database.status.status_code == StatusCode.ERROR
    c = attrs(closed)
    assert c["pg_labels.decision"] == "error" and "pg_labels.sqlstate" not in c
    assert closed.status.status_code == StatusCode.ERROR
    assert "OperationalError" in (closed.status.description or "")


async def test_spans_of_an_agent(
    platform: Platform, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}")
    guardrail = barrier_guardrail(run, names=catalog_name, tracer_provider=provider)
    model = ScriptedModel(
        [
            [call("kb_search", {"q": "x"}, "o1")],
            [call("stripe_refund", {"order": 1}, "o2")],
            [say("done")],
        ]
    )
    await run_agent(model, guardrail.guard(*AgentTools().all), "go")
    searched, refunded = exporter.get_finished_spans()
    assert searched.name == "execute_tool kb_search"
    s = attrs(searched)
    assert (s["gen_ai.tool.name"], s["pg_labels.tool"], s["gen_ai.tool.call.id"]) == (
        "kb_search",
        "kb.search",
        "o1",
    )
    assert s["pg_labels.decision"] == "allow" and "pg_labels.result_step_id" in s
    assert refunded.name == "execute_tool stripe_refund"
    assert attrs(refunded)["pg_labels.rule"] == "untrusted_to_irreversible"
    assert refunded.status.status_code == StatusCode.ERROR


def test_without_opentelemetry(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the otel extra: no spans, the same decisions; a tracer_provider given then is
    an ImportError that says what to install."""
    for name in list(sys.modules):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    run = platform.open_run("support-bot", "acme/platform")
    run.input("{origin:slack/T01/C02}")
    tools = GraphTools()
    wrapper = barrier_wrapper(run)
    graph = node(tools, wrapper)
    allowed = graph.invoke(ask("kb.search", {"q": "x"}, "n1"))["messages"][-1]
    refused = graph.invoke(ask("stripe.refund", {"order": 1}, "n2"))["messages"][-1]
    assert allowed.status == "success" and refused.status == "error"
    assert "untrusted_to_irreversible" in str(refused.content)
    assert tools.ran == [("kb.search", {"q": "x"})]
    with pytest.raises(ImportError, match=r"pg-labels\[otel\]"):
        barrier_wrapper(run, tracer_provider=object())
