"""The barrier as a tool-call wrapper of LangGraph's ``ToolNode`` (``pip install
'pg-labels[langgraph]'``).

``barrier_wrapper(run)`` wraps every tool call of a ``ToolNode``: it asks the gate of ``run``
and records the call before the tool runs, and records the result after it. A call the
barrier refuses (or that needs a person's approval) becomes a ``ToolMessage`` with
``status="error"`` naming the rule, and the tool's body does not run::

    node = ToolNode(tools, wrap_tool_call=barrier_wrapper(run))          # a Run (psycopg)
    node = ToolNode(tools, awrap_tool_call=barrier_wrapper(async_run))   # an AsyncRun

For a :class:`~pg_labels.Run` the wrapper is a plain function (``wrap_tool_call``, which
LangGraph also uses from ``ainvoke``); for an :class:`~pg_labels.AsyncRun` a coroutine
function (``awrap_tool_call``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, overload

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ._guard import Guard, OutputLabels
from ._platform import AsyncRun, Run

__all__ = ["AsyncToolCallWrapper", "ToolCallWrapper", "barrier_wrapper"]

Result = ToolMessage | Command[Any]
ToolCallWrapper = Callable[[ToolCallRequest, Callable[[ToolCallRequest], Result]], Result]
AsyncToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable[Result]]], Awaitable[Result]
]


def _refused(request: ToolCallRequest, message: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(
        content=message, name=call["name"], tool_call_id=call["id"] or "", status="error"
    )


def _call(request: ToolCallRequest) -> tuple[str, object, str | None]:
    call = request.tool_call
    return call["name"], call.get("args"), call.get("id")


def _output(result: Result) -> object:
    return result.content if isinstance(result, ToolMessage) else result


@overload
def barrier_wrapper(
    run: Run,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = ...,
    output_labels: OutputLabels | None = ...,
    tracer_provider: Any = ...,
) -> ToolCallWrapper: ...


@overload
def barrier_wrapper(
    run: AsyncRun,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = ...,
    output_labels: OutputLabels | None = ...,
    tracer_provider: Any = ...,
) -> AsyncToolCallWrapper: ...


def barrier_wrapper(
    run: Run | AsyncRun,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = None,
    output_labels: OutputLabels | None = None,
    tracer_provider: Any = None,
) -> ToolCallWrapper | AsyncToolCallWrapper:
    """The barrier of ``run`` around a ``ToolNode``'s calls.

    ``names`` maps the tools' names to the catalog's (the same name when absent);
    ``output_labels`` gives the labels of a tool's output (a mapping of catalog names, or a
    function of the catalog name and the output: the ``ToolMessage``'s content, or the
    ``Command`` a tool returned); ``tracer_provider`` the OpenTelemetry provider of the
    spans (the global one by default; no spans without OpenTelemetry).
    """
    guard = Guard(run, names=names, output_labels=output_labels, tracer_provider=tracer_provider)

    def finish(
        request: ToolCallRequest, result: Result, recorded: tuple[Any, str | None]
    ) -> Result:
        # the tool ran, but its result could not be recorded: it does not reach the model
        message = recorded[1]
        return result if message is None else _refused(request, message)

    if isinstance(run, Run):

        def wrap(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Result]) -> Result:
            verdict = guard.check(*_call(request))
            if not verdict.allowed:
                return _refused(request, verdict.message or "pg_labels refused the call")
            try:
                result = execute(request)
            except BaseException as err:
                guard.failed_tool(verdict, err)
                raise
            return finish(request, result, guard.record(verdict, _output(result)))

        return wrap

    async def awrap(
        request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        verdict = await guard.acheck(*_call(request))
        if not verdict.allowed:
            return _refused(request, verdict.message or "pg_labels refused the call")
        try:
            result = await execute(request)
        except BaseException as err:
            guard.failed_tool(verdict, err)
            raise
        return finish(request, result, await guard.arecord(verdict, _output(result)))

    return awrap
