"""The barrier as a tool guardrail of the OpenAI Agents SDK (``pip install
'pg-labels[openai-agents]'``).

``barrier_guardrail(run)`` is a ``ToolInputGuardrail``: before a function tool runs it asks
the gate of ``run`` and records the call; a call the barrier refuses (or that needs a
person's approval) is rejected with ``ToolGuardrailFunctionOutput.reject_content``, so the
tool's body does not run and the model reads why. Its ``output`` is the matching
``ToolOutputGuardrail``, which records the tool's result (a ``tool_result`` step, with the
labels ``output_labels`` gives it). ``guard(*tools)`` puts both on function tools::

    guardrail = barrier_guardrail(run, output_labels={"company.search": "{area:acme/finance}"})
    agent = Agent(name="support", tools=guardrail.guard(refund, search))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agents import FunctionTool
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from ._guard import Guard, OutputLabels, Verdict, parse_arguments
from ._platform import AsyncRun, Run

__all__ = ["BarrierGuardrail", "barrier_guardrail"]


class BarrierGuardrail(ToolInputGuardrail[Any]):
    """The input guardrail of one run; ``output`` records the results of the calls it let
    through. Use one per run (it keeps the calls it allowed until their results come)."""

    def __init__(
        self,
        run: Run | AsyncRun,
        *,
        names: Mapping[str, str] | Callable[[str], str] | None = None,
        output_labels: OutputLabels | None = None,
        tracer_provider: Any = None,
        name: str = "pg_labels_barrier",
    ) -> None:
        self.barrier = Guard(
            run, names=names, output_labels=output_labels, tracer_provider=tracer_provider
        )
        self._allowed: dict[str, Verdict] = {}
        super().__init__(guardrail_function=self._before, name=name)
        self.output: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._after, name=f"{name}_result"
        )

    async def _before(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        verdict = await self.barrier.acheck(
            context.tool_name, parse_arguments(context.tool_arguments), context.tool_call_id
        )
        if verdict.allowed:
            self._allowed[context.tool_call_id] = verdict
            return ToolGuardrailFunctionOutput.allow(output_info=verdict)
        return ToolGuardrailFunctionOutput.reject_content(
            verdict.message or "pg_labels refused the call", output_info=verdict
        )

    async def _after(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        verdict = self._allowed.pop(context.tool_call_id, None)
        if verdict is None:
            # The output of a call this guardrail did not let through (the input guardrail
            # was not on the tool): it is not on the trail, so it does not reach the model.
            return ToolGuardrailFunctionOutput.reject_content(
                f"pg_labels: no allowed call of {context.tool_name} is recorded for this "
                "result, so it is withheld (put the barrier's input guardrail on the tool)"
            )
        step, message = await self.barrier.arecord(verdict, data.output)
        if message is not None:
            return ToolGuardrailFunctionOutput.reject_content(message, output_info=verdict)
        return ToolGuardrailFunctionOutput.allow(output_info=step)

    def guard(self, *tools: FunctionTool) -> list[FunctionTool]:
        """Put this guardrail (before) and ``output`` (after) on each function tool, after any
        guardrails they have; returns the tools."""
        for tool in tools:
            if not isinstance(tool, FunctionTool):
                raise TypeError(
                    f"guard() takes function tools, not {type(tool).__name__} "
                    "(tool guardrails apply to function tools only)"
                )
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self]
            tool.tool_output_guardrails = [*(tool.tool_output_guardrails or []), self.output]
        return list(tools)


def barrier_guardrail(
    run: Run | AsyncRun,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = None,
    output_labels: OutputLabels | None = None,
    tracer_provider: Any = None,
) -> BarrierGuardrail:
    """The barrier of ``run`` as a tool input guardrail (with ``.output`` and ``.guard()``).

    ``names`` maps the SDK's tool names to the catalog's (``{"stripe_refund":
    "stripe.refund"}``; the same name when absent); ``output_labels`` gives the labels of a
    tool's output (a mapping of catalog names, or a function of the catalog name and the
    output); ``tracer_provider`` the OpenTelemetry provider of the spans (the global one by
    default; no spans without OpenTelemetry).
    """
    return BarrierGuardrail(
        run, names=names, output_labels=output_labels, tracer_provider=tracer_provider
    )
