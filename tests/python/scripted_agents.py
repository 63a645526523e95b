"""A scripted model for the OpenAI Agents SDK, on its public ``Model`` interface (the SDK's own
tests have a FakeModel, which the package does not ship): each turn returns the next canned
output (function calls, or a final message) and keeps the input it was given. No network."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, FunctionTool, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-no-network")
set_tracing_disabled(True)


def call(name: str, args: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}",
        call_id=call_id,
        type="function_call",
        name=name,
        arguments=json.dumps(args),
    )


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[], logprobs=[])],
    )


class ScriptedModel(Model):
    """Returns ``turns`` one after the other; ``inputs`` holds what each turn was given."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.inputs.append([input] if isinstance(input, str) else list(input))
        output = self.turns.pop(0) if self.turns else [say("done")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")

    def tool_outputs(self) -> dict[str, str]:
        """The ``function_call_output`` items the model was last given, by call id."""
        out: dict[str, str] = {}
        for item in self.inputs[-1] if self.inputs else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                out[item["call_id"]] = str(item["output"])
        return out


class Tools:
    """The scenario's tools, as SDK function tools whose bodies note that they ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @function_tool
        def tickets_read(order: int) -> str:
            """Read the ticket of an order."""
            self.ran.append(("tickets.read", {"order": order}))
            return f"ticket of order {order}: refund requested"

        @function_tool
        def tickets_update(ticket: int, status: str) -> str:
            """Update a ticket."""
            self.ran.append(("tickets.update", {"ticket": ticket, "status": status}))
            return f"ticket {ticket} is {status}"

        @function_tool
        def stripe_refund(order: int) -> str:
            """Refund an order."""
            self.ran.append(("stripe.refund", {"order": order}))
            return f"refunded order {order}"

        @function_tool
        def company_search(q: str) -> str:
            """Search the company's documents."""
            self.ran.append(("company.search", {"q": q}))
            return "Q3 finance export: revenue 12.3M"

        @function_tool
        def kb_search(q: str) -> str:
            """Search the knowledge base."""
            self.ran.append(("kb.search", {"q": q}))
            return "refund policy: 30 days"

        self.all: list[FunctionTool] = [
            tickets_read,
            tickets_update,
            stripe_refund,
            company_search,
            kb_search,
        ]


def catalog_name(name: str) -> str:
    """The SDK's tool names (``stripe_refund``) are the catalog's with ``_`` for ``.``."""
    return name.replace("_", ".", 1)


async def run_agent(model: ScriptedModel, tools: list[FunctionTool], text: str) -> Any:
    agent = Agent(name="support-bot", instructions="Help the customer.", model=model, tools=tools)
    return await Runner.run(agent, text, max_turns=20)
