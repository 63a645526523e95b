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

With ``pause=True`` a call the gate answers ``ask`` pauses the run instead (the SDK's own
approval: the tool's ``needs_approval`` asks the gate and records the approval request): the
result's ``interruptions`` hold it, ``resolve_approvals(state, guardrail)`` approves or
rejects each one by the person's decision in the database (waiting for it when asked to), and
``Runner.run(agent, state)`` resumes; the granted call then runs once, the database's
approval letting it through::

    guardrail = barrier_guardrail(run, pause=True)
    agent = Agent(name="support", tools=guardrail.guard(update))
    result = await Runner.run(agent, "close ticket 77")
    if result.interruptions:
        state = result.to_state()          # or RunState.from_json(agent, saved) elsewhere
        await resolve_approvals(state, guardrail, wait=600)
        result = await Runner.run(agent, state)
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from agents import FunctionTool, RunContextWrapper, RunState, ToolApprovalItem
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from ._guard import Guard, OutputLabels, Verdict, parse_arguments
from ._platform import ApprovalDecision, AsyncRun, Run

__all__ = ["BarrierGuardrail", "Resolution", "barrier_guardrail", "resolve_approvals"]

#: How many gate verdicts taken by ``needs_approval`` wait for their input guardrail (a call
#: whose guardrail never ran, another guardrail having rejected it first, leaves one).
_CHECKED_MAX: Final = 4096


@dataclass(frozen=True)
class Resolution:
    """What :func:`resolve_approvals` did with one interruption of a paused run.

    ``action`` is ``approved`` (a person granted the request), ``rejected`` (denied,
    withdrawn or expired, or refused by the gate: the model reads ``message``), ``waiting``
    (no decision yet: the interruption is left as it is), ``allowed`` (a call the SDK paused
    without asking ``needs_approval``, arguments it could not hand over as they were, and the
    gate, asked then, allows: approved, no person needed) or ``unknown`` (a tool this
    guardrail does not guard: left as it is).
    """

    item: ToolApprovalItem
    action: str
    request_id: int | None = None
    decision: ApprovalDecision | None = None
    message: str | None = None


def _raw(item: ToolApprovalItem, name: str) -> Any:
    raw = item.raw_item
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


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
        pause: bool = False,
        approval_ttl: datetime.timedelta | float | None = None,
        name: str = "pg_labels_barrier",
    ) -> None:
        self.barrier = Guard(
            run,
            names=names,
            output_labels=output_labels,
            tracer_provider=tracer_provider,
            approval_ttl=approval_ttl,
        )
        self.pause = bool(pause)
        self._allowed: dict[str, Verdict] = {}
        # pause=True: the verdicts needs_approval took (by call id) that did not pause, for
        # the input guardrail; the requests of the calls that paused
        self._checked: OrderedDict[str, tuple[str, Verdict]] = OrderedDict()
        self._asked: dict[str, int] = {}  # (insertion order: the oldest go past _CHECKED_MAX)
        self._guarded: set[str] = set()
        super().__init__(guardrail_function=self._before, name=name)
        self.output: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._after, name=f"{name}_result"
        )

    async def _before(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        args = parse_arguments(context.tool_arguments)
        checked = self._checked.pop(context.tool_call_id, None)
        # the verdict needs_approval took for this very call (same call id and arguments);
        # else (not checked, or resumed after an approval) the gate is asked now
        if checked is not None and checked[0] == _key(args):
            verdict = checked[1]
        else:
            verdict = await self.barrier.acheck(context.tool_name, args, context.tool_call_id)
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

    def needs_approval(
        self, tool: str
    ) -> Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]:
        """The ``needs_approval`` of the SDK's tool ``tool`` (``guard()`` sets it with
        ``pause=True``): asks the gate and records the call (``allow``), the refusal
        (``block``) or an approval request (``ask``), and pauses the run for an ``ask``
        waiting for a person; the input guardrail then uses the verdict."""

        async def needs(_ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
            verdict = await self.barrier.acheck(tool, params, call_id)
            if (
                verdict.decision == "ask"
                and verdict.approval is None
                and verdict.request_id is not None
            ):
                self._asked[call_id] = verdict.request_id
                while len(self._asked) > _CHECKED_MAX:
                    del self._asked[next(iter(self._asked))]
                return True
            self._remember(call_id, params, verdict)
            return False

        return needs

    def _remember(self, call_id: str, args: object, verdict: Verdict) -> None:
        """Keep a verdict for the call's input guardrail (the oldest go past _CHECKED_MAX)."""
        self._checked[call_id] = (_key(args), verdict)
        while len(self._checked) > _CHECKED_MAX:
            self._checked.popitem(last=False)

    def guard(self, *tools: FunctionTool) -> list[FunctionTool]:
        """Put this guardrail (before) and ``output`` (after) on each function tool, after any
        guardrails they have, and with ``pause=True`` the tool's ``needs_approval`` (a tool
        that has its own is refused: the app's approvals and the database's would mix);
        returns the tools."""
        for tool in tools:
            if not isinstance(tool, FunctionTool):
                raise TypeError(
                    f"guard() takes function tools, not {type(tool).__name__} "
                    "(tool guardrails apply to function tools only)"
                )
            if self.pause and tool.needs_approval is not False:
                raise TypeError(
                    f"{tool.name} has a needs_approval of its own: with pause=True the "
                    "barrier decides which calls wait for a person"
                )
        for tool in tools:
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self]
            tool.tool_output_guardrails = [*(tool.tool_output_guardrails or []), self.output]
            if self.pause:
                tool.needs_approval = self.needs_approval(tool.name)
                self._guarded.add(tool.name)
        return list(tools)

    # -- a paused run ------------------------------------------------------------------------

    async def _request_of(self, item: ToolApprovalItem) -> tuple[str, int | None]:
        """The catalog name of the interrupted call and its approval request: the one
        ``needs_approval`` recorded in this process, else the run's newest unused request
        for the same call (a state resumed in another process)."""
        catalog = self.barrier.catalog_name(item.tool_name or "")
        call_id = _raw(item, "call_id")
        request = self._asked.get(call_id) if isinstance(call_id, str) else None
        if request is None:
            args = parse_arguments(_raw(item, "arguments"))
            run = self.barrier.run
            if isinstance(run, Run):
                with self.barrier.lock():
                    request = run.pending_request(catalog, args)
            else:
                async with self.barrier.alock():
                    request = await run.pending_request(catalog, args)
        return catalog, request

    async def request_of(self, item: ToolApprovalItem) -> int | None:
        """The approval request of an interruption (``None`` when it is not one of this
        guardrail's)."""
        if item.tool_name not in self._guarded:
            return None
        return (await self._request_of(item))[1]

    async def _decision(self, request: int, wait: float | None) -> ApprovalDecision:
        run = self.barrier.run
        if wait is not None:
            if isinstance(run, Run):
                # the wait has its own connection; the thread keeps the event loop going
                return await asyncio.to_thread(run.wait_for_decision, request, wait)
            return await run.wait_for_decision(request, wait)
        if isinstance(run, Run):
            with self.barrier.lock():
                return run.approval_status(request)
        async with self.barrier.alock():
            return await run.approval_status(request)

    async def resolve(
        self, state: RunState[Any, Any], *, wait: float | None = None
    ) -> list[Resolution]:
        """:func:`resolve_approvals` of this guardrail's run."""
        deadline = None if wait is None else time.monotonic() + _seconds(wait)
        resolutions: list[Resolution] = []
        for item in state.get_interruptions():
            if item.tool_name not in self._guarded:
                resolutions.append(Resolution(item, "unknown"))
                continue
            catalog, request = await self._request_of(item)
            if request is None:
                # the SDK paused the call without asking needs_approval (arguments it could
                # not hand over as they are, such as defaults to fill): the gate is asked now
                checked = await self._check_now(state, item)
                if isinstance(checked, Resolution):
                    resolutions.append(checked)
                    continue
                request = checked
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            decision = await self._decision(request, left)
            message = _told(catalog, decision)
            if decision.granted:
                state.approve(item)
                action = "approved"
            elif message is not None:
                state.reject(item, rejection_message=message)
                action = "rejected"
            else:
                action = "waiting"
            if action != "waiting":
                self._asked.pop(str(_raw(item, "call_id")), None)
            resolutions.append(Resolution(item, action, request, decision, message))
        return resolutions

    async def _check_now(
        self, state: RunState[Any, Any], item: ToolApprovalItem
    ) -> Resolution | int:
        """The gate's verdict on a paused call it was not asked about: the request an ``ask``
        recorded, else the call approved (the gate allows it: the SDK paused it only because
        it could not ask) or rejected with the refusal."""
        call_id = str(_raw(item, "call_id"))
        args = parse_arguments(_raw(item, "arguments"))
        verdict = await self.barrier.acheck(item.tool_name or "", args, call_id)
        if verdict.decision == "ask" and verdict.approval is None and verdict.request_id:
            self._asked[call_id] = verdict.request_id
            return verdict.request_id
        if verdict.allowed:
            self._remember(call_id, args, verdict)
            state.approve(item)
            return Resolution(item, "allowed", verdict.request_id)
        message = verdict.message or "pg_labels refused the call"
        state.reject(item, rejection_message=message)
        return Resolution(item, "rejected", verdict.request_id, None, message)


def _key(args: object) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


def _seconds(wait: object) -> float:
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not wait >= 0:
        raise ValueError(f"wait must be a number of seconds, 0 or more, not {wait!r}")
    return float(wait)


def _told(catalog: str, decision: ApprovalDecision) -> str | None:
    """What the model reads of a request that is not granted (``None`` while it waits)."""
    request = decision.request_id
    if decision.status == "denied":
        why = decision.reason or "no reason given"
        return f"pg_labels: a person denied approval request {request} for {catalog}: {why}"
    if decision.status == "withdrawn":
        return (
            f"pg_labels: approval request {request} for {catalog} was withdrawn "
            f"({decision.reason}): the call is refused"
        )
    if decision.status == "expired":
        return (
            f"pg_labels: approval request {request} for {catalog} expired at "
            f"{decision.expires_at} without a decision: the call is refused"
        )
    return None


async def resolve_approvals(
    state: RunState[Any, Any], guardrail: BarrierGuardrail, *, wait: float | None = None
) -> list[Resolution]:
    """Answer the interruptions of a paused run by the database's decisions, never by
    itself: ``state.approve()`` for a request a person granted, ``state.reject()`` with the
    approver's reason for a denial (with the expiry for an expired request, for a withdrawn
    one too); a request without a decision is left pending. With ``wait`` (seconds), waits
    for the decisions (``wait_for_decision``: one connection at a time, ``wait`` seconds in
    all) instead of reading them once. Then ``Runner.run(agent, state)`` resumes the run.

    The request of each interruption is the one ``needs_approval`` recorded in this process,
    else (a ``RunState`` restored in another process) the run's newest request for the same
    tool and arguments that no call used. An approval in the state that the database did not
    grant lets nothing through: the input guardrail asks the gate again when the call runs.
    """
    return await guardrail.resolve(state, wait=wait)


def barrier_guardrail(
    run: Run | AsyncRun,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = None,
    output_labels: OutputLabels | None = None,
    tracer_provider: Any = None,
    pause: bool = False,
    approval_ttl: datetime.timedelta | float | None = None,
) -> BarrierGuardrail:
    """The barrier of ``run`` as a tool input guardrail (with ``.output`` and ``.guard()``).

    ``names`` maps the SDK's tool names to the catalog's (``{"stripe_refund":
    "stripe.refund"}``; the same name when absent); ``output_labels`` gives the labels of a
    tool's output (a mapping of catalog names, or a function of the catalog name and the
    output); ``tracer_provider`` the OpenTelemetry provider of the spans (the global one by
    default; no spans without OpenTelemetry); ``pause`` makes a call that asks a person
    pause the run (the SDK's interruption, see :func:`resolve_approvals`) instead of being
    refused with a message; ``approval_ttl`` (a ``timedelta`` or seconds) the time to live
    of the approval requests it records (the agent version's ``approval_ttl`` when shorter).
    """
    return BarrierGuardrail(
        run,
        names=names,
        output_labels=output_labels,
        tracer_provider=tracer_provider,
        pause=pause,
        approval_ttl=approval_ttl,
    )
