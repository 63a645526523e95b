"""The guards' common part: before a tool runs, ask the gate and record the call (or an
approval request); after it ran, record its result with its labels. Anything that goes wrong
on the way refuses the call (fail closed), with a message that says why.

Before the tool:

* ``allow``: a ``tool_called`` step is written (the trigger judges it again; a refusal there,
  should the run have changed in between, refuses the call). A granted approval of the same
  run, tool and arguments is used by that step, once.
* ``ask``: an approval request is recorded (``request_approval``) and the call is refused
  until a person grants it; the same call made after the grant goes through, once.
* ``block``: the call is refused, the ``gate_decided`` step records the rule.
* the gate or the write failed (a closed connection, a database error): refused.

After the tool: a ``tool_result`` step with the output's labels (``output_labels``); when it
cannot be written, the output is withheld from the model.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeAlias

from ._errors import _BY_SQLSTATE, Refusal
from ._otel import Tracing, end, set_attributes
from ._platform import AsyncRun, Decision, Run, Step
from ._values import LabelSet

__all__ = ["Guard", "OutputLabels", "Verdict"]

_LabelsLike: TypeAlias = LabelSet | str | Iterable[str]
#: The labels of a tool's output: a mapping of catalog names to labels, or a function of the
#: catalog name and the output (``None`` for no labels of its own).
OutputLabels: TypeAlias = Mapping[str, _LabelsLike] | Callable[[str, Any], _LabelsLike | None]

_SQLSTATE_OF_RULE: Final = {c.RULE: c.SQLSTATE for c in _BY_SQLSTATE.values()}

# An SDK runs a turn's tool calls at once (LangGraph's ToolNode in threads, or as tasks):
# the guards' statements on one connection take turns, each check (gate, then call or
# request) and each result whole. One lock per connection, for every guard on it.
_LOCKS_GUARD: Final = threading.Lock()
_LOCKS: weakref.WeakKeyDictionary[object, threading.Lock] = weakref.WeakKeyDictionary()
_ALOCKS: weakref.WeakKeyDictionary[object, asyncio.Lock] = weakref.WeakKeyDictionary()


def _lock(conn: object) -> threading.Lock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(conn)
        if lock is None:
            lock = _LOCKS[conn] = threading.Lock()
        return lock


def _alock(conn: object) -> asyncio.Lock:
    with _LOCKS_GUARD:
        lock = _ALOCKS.get(conn)
        if lock is None:
            lock = _ALOCKS[conn] = asyncio.Lock()
        return lock


@dataclass(frozen=True)
class Verdict:
    """What a guard decided for one tool call.

    ``decision`` is the gate's (``allow``, ``ask``, ``block``), or ``error`` when the barrier
    could not be checked; ``rule`` and ``sqlstate`` the rule that asked or refused (the
    SQLSTATE of the database error for ``error``); ``step_id`` the ``tool_called`` step of an
    allowed call, else the ``gate_decided`` step (``None`` when there is none);
    ``request_id`` the approval request an ``ask`` recorded, or the granted one an allowed
    call used; ``message`` what the model is told instead of the tool's output;
    ``approval`` is ``denied`` for an ``ask`` whose request a person denied (the call is
    refused), ``None`` while it waits.
    """

    tool: str
    decision: str
    rule: str | None = None
    sqlstate: str | None = None
    reason: str | None = None
    step_id: int | None = None
    request_id: int | None = None
    message: str | None = None
    approval: str | None = None
    span: Any = field(default=None, repr=False, compare=False)

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


def parse_arguments(arguments: object) -> object:
    """A tool's arguments as JSON values: a JSON text is decoded (the OpenAI tool call's
    ``arguments``); anything else is taken as it is."""
    if isinstance(arguments, (str, bytes)):
        try:
            return json.loads(arguments) if arguments else None
        except ValueError:
            return arguments if isinstance(arguments, str) else arguments.decode(errors="replace")
    return arguments


def _call_key(catalog: str, args: object) -> tuple[str, str]:
    """A call as the database compares approvals: the tool and its arguments as JSON."""
    return catalog, json.dumps(args, sort_keys=True, separators=(",", ":"))


def _reused(status: str) -> str | None:
    """What an ``ask`` does with the request it recorded for the same call, by the request's
    status: points at it while it waits (``None``), tells the denial (``denied``), or
    records a new one (``new``: granted and used, expired, withdrawn)."""
    if status == "pending":
        return None
    return "denied" if status == "denied" else "new"


def _why(err: BaseException) -> str:
    """The error's class, first line and SQLSTATE, for the model and the span."""
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    why = f"{type(err).__name__}: {first}" if first else type(err).__name__
    sqlstate = _sqlstate(err)
    return f"{why}; SQLSTATE {sqlstate}" if sqlstate else why


def _sqlstate(err: BaseException) -> str | None:
    if isinstance(err, Refusal):
        return err.sqlstate
    state = getattr(err, "sqlstate", None)
    return state if isinstance(state, str) else None


class Guard:
    """One run's guard; the SDK modules call :meth:`check` / :meth:`acheck` before a tool and
    :meth:`record` / :meth:`arecord` after it."""

    def __init__(
        self,
        run: Run | AsyncRun,
        *,
        names: Mapping[str, str] | Callable[[str], str] | None = None,
        output_labels: OutputLabels | None = None,
        tracer_provider: Any = None,
        approval_ttl: datetime.timedelta | float | None = None,
    ) -> None:
        if not isinstance(run, (Run, AsyncRun)):
            raise TypeError(f"a guard takes a Run or an AsyncRun, not {type(run).__name__}")
        if names is not None and not (isinstance(names, Mapping) or callable(names)):
            raise TypeError("names must be a mapping or a function of the SDK's tool name")
        if output_labels is not None and not (
            isinstance(output_labels, Mapping) or callable(output_labels)
        ):
            raise TypeError("output_labels must be a mapping or a function (tool, output)")
        self.run = run
        self._requests: dict[tuple[str, str], int] = {}
        self._names = names
        self._output_labels = output_labels
        #: the time to live of the approval requests an ``ask`` records (``None``: the
        #: agent version's ``approval_ttl``, else none)
        self.approval_ttl = approval_ttl
        self.tracing = Tracing(tracer_provider)

    def catalog_name(self, tool: str) -> str:
        """The name of the SDK's tool in ``pg_labels.tools``."""
        if self._names is None:
            return tool
        if isinstance(self._names, Mapping):
            return self._names.get(tool, tool)
        return self._names(tool)

    def lock(self) -> threading.Lock:
        """The lock by which the statements of every guard on this run's connection take turns
        (a :class:`Run`'s); hold it to write on the connection between a guard's checks."""
        return _lock(self.run.platform.conn)

    def alock(self) -> asyncio.Lock:
        """:meth:`lock` for an :class:`AsyncRun`'s connection."""
        return _alock(self.run.platform.conn)

    @staticmethod
    def why(err: BaseException) -> str:
        """What a guard says of an error, to the model and on the span: its class, its first
        line and its SQLSTATE (``OperationalError: the connection is closed``)."""
        return _why(err)

    def labels_of(self, tool: str, output: object) -> object:
        if self._output_labels is None:
            return None
        if isinstance(self._output_labels, Mapping):
            return self._output_labels.get(tool)
        return self._output_labels(tool, output)

    # -- before the tool ---------------------------------------------------------------------

    def _begin(self, tool: str, span: Any) -> str:
        catalog = self.catalog_name(tool)
        set_attributes(span, {"pg_labels.tool": catalog})
        return catalog

    def check(self, tool: str, args: object, call_id: str | None = None) -> Verdict:
        """Ask the gate and record the call (``allow``) or an approval request (``ask``)."""
        if not isinstance(self.run, Run):
            raise TypeError("check() needs a Run; an AsyncRun's guard is awaited (acheck)")
        span = self.tracing.start(tool, self.run.id, call_id)
        catalog = tool
        try:
            catalog = self._begin(tool, span)
            with self.lock():
                # the gate and, when it allows, the call: one transaction
                decision, step = self.run.gate_and_call(catalog, args)
                request, state = (
                    self._request(catalog, args, decision.reason)
                    if decision.decision == "ask"
                    else (None, None)
                )
            verdict = self._verdict(tool, catalog, decision, step, request, state)
        except Exception as err:
            verdict = self._failed(tool, catalog, err)
        return self._decided(verdict, span)

    async def acheck(self, tool: str, args: object, call_id: str | None = None) -> Verdict:
        """:meth:`check` for async code: awaited on an :class:`AsyncRun`; a :class:`Run`'s
        statements run in the calling thread."""
        if isinstance(self.run, Run):
            return self.check(tool, args, call_id)
        span = self.tracing.start(tool, self.run.id, call_id)
        catalog = tool
        try:
            catalog = self._begin(tool, span)
            async with self.alock():
                decision, step = await self.run.gate_and_call(catalog, args)
                request, state = (
                    await self._arequest(catalog, args, decision.reason)
                    if decision.decision == "ask"
                    else (None, None)
                )
            verdict = self._verdict(tool, catalog, decision, step, request, state)
        except Exception as err:
            verdict = self._failed(tool, catalog, err)
        return self._decided(verdict, span)

    def _verdict(
        self,
        tool: str,
        catalog: str,
        decision: Decision,
        step: Step | None,
        request: int | None,
        state: str | None,
    ) -> Verdict:
        """What the gate's decision and what was recorded for it say to the caller."""
        if step is not None:
            return self._allowed(tool, decision, step)
        if request is not None:
            return self._asked(
                tool, catalog, decision.rule, decision.reason, request, decision.step_id, state
            )
        return self._blocked(tool, catalog, decision.rule, decision.reason, decision.step_id)

    # An ``ask`` records one request per call (tool and arguments): while it waits, the same
    # call asked again points at it instead of recording another; once it is denied the
    # model is told so (and the next attempt asks anew); once granted and used, expired or
    # withdrawn, the next identical call asks again.

    def _request(self, catalog: str, args: object, reason: str | None) -> tuple[int, str | None]:
        if not isinstance(self.run, Run):
            raise TypeError("an AsyncRun's requests are awaited")
        key = _call_key(catalog, args)
        pending = self._requests.get(key)
        if pending is not None:
            state = _reused(self.run.approval_status(pending).status)
            if state != "new":
                if state == "denied":
                    del self._requests[key]
                return pending, state
        request = self.run.request_approval(catalog, args, reason=reason, ttl=self.approval_ttl)
        self._requests[key] = request
        return request, None

    async def _arequest(
        self, catalog: str, args: object, reason: str | None
    ) -> tuple[int, str | None]:
        if isinstance(self.run, Run):
            return self._request(catalog, args, reason)
        key = _call_key(catalog, args)
        pending = self._requests.get(key)
        if pending is not None:
            state = _reused((await self.run.approval_status(pending)).status)
            if state != "new":
                if state == "denied":
                    del self._requests[key]
                return pending, state
        request = await self.run.request_approval(
            catalog, args, reason=reason, ttl=self.approval_ttl
        )
        self._requests[key] = request
        return request, None

    @staticmethod
    def _allowed(tool: str, decision: Decision, step: Step) -> Verdict:
        # rule: approval_required when a granted approval let the call through
        return Verdict(
            tool,
            "allow",
            rule=decision.rule,
            reason=decision.reason,
            step_id=step.id,
            request_id=step.request_id,
        )

    @staticmethod
    def _asked(
        tool: str,
        catalog: str,
        rule: str | None,
        reason: str | None,
        request: int,
        step: int,
        state: str | None = None,
    ) -> Verdict:
        if state == "denied":
            message = (
                f"pg_labels: {catalog} needs a person's approval ({rule}: {reason}), and a "
                f"person denied approval request {request} for this call: it is refused."
            )
        else:
            message = (
                f"pg_labels: {catalog} needs a person's approval ({rule}: {reason}). Approval "
                f"request {request} waits for a decision; the same call goes through once it "
                "is granted."
            )
        return Verdict(
            tool,
            "ask",
            rule,
            _SQLSTATE_OF_RULE.get(rule),
            reason,
            step,
            request,
            message,
            approval=state,
        )

    @staticmethod
    def _blocked(
        tool: str, catalog: str, rule: str | None, reason: str | None, step: int | None
    ) -> Verdict:
        message = f"pg_labels refused {catalog}: {rule}: {reason}"
        return Verdict(
            tool, "block", rule, _SQLSTATE_OF_RULE.get(rule), reason, step, None, message
        )

    @staticmethod
    def _failed(tool: str, catalog: str, err: Exception) -> Verdict:
        if isinstance(err, Refusal) and err.rule is not None:
            # the call's own write was refused (the run changed since the gate's decision)
            return Verdict(
                tool,
                "block",
                err.rule,
                err.sqlstate,
                err.message,
                None,
                None,
                f"pg_labels refused {catalog}: {err.rule}: {err.message}",
            )
        message = (
            f"pg_labels refused {catalog}: the barrier could not be checked ({_why(err)}), "
            "so the call is refused"
        )
        return Verdict(tool, "error", None, _sqlstate(err), _why(err), message=message)

    def _decided(self, verdict: Verdict, span: Any) -> Verdict:
        set_attributes(
            span,
            {
                "pg_labels.decision": verdict.decision,
                "pg_labels.rule": verdict.rule,
                "pg_labels.sqlstate": verdict.sqlstate,
                "pg_labels.step_id": verdict.step_id,
                "pg_labels.request_id": verdict.request_id,
            },
        )
        if verdict.allowed:
            return replace(verdict, span=span)
        end(span, verdict.message, verdict.rule or verdict.sqlstate or "pg_labels.error")
        return verdict

    # -- after the tool ----------------------------------------------------------------------

    def record(self, verdict: Verdict, output: object) -> tuple[Step | None, str | None]:
        """Record the result of an allowed call: ``(step, None)``, or ``(None, message)``
        when it could not be recorded (the output is then withheld)."""
        if not isinstance(self.run, Run):
            raise TypeError("record() needs a Run; an AsyncRun's guard is awaited (arecord)")
        try:
            catalog = self.catalog_name(verdict.tool)
            labels = self._labels(catalog, output)
            with self.lock():
                step = self.run.result(catalog, labels=labels)
        except Exception as err:
            return None, self._not_recorded(verdict, err)
        return self._recorded(verdict, step), None

    async def arecord(self, verdict: Verdict, output: object) -> tuple[Step | None, str | None]:
        """:meth:`record` for async code."""
        if isinstance(self.run, Run):
            return self.record(verdict, output)
        try:
            catalog = self.catalog_name(verdict.tool)
            labels = self._labels(catalog, output)
            async with self.alock():
                step = await self.run.result(catalog, labels=labels)
        except Exception as err:
            return None, self._not_recorded(verdict, err)
        return self._recorded(verdict, step), None

    def _labels(self, catalog: str, output: object) -> Any:
        return self.labels_of(catalog, output)

    @staticmethod
    def _recorded(verdict: Verdict, step: Step) -> Step:
        set_attributes(verdict.span, {"pg_labels.result_step_id": step.id})
        end(verdict.span)
        return step

    @staticmethod
    def _not_recorded(verdict: Verdict, err: Exception) -> str:
        message = (
            f"pg_labels: the result of {verdict.tool} could not be recorded ({_why(err)}), "
            "so it is withheld"
        )
        set_attributes(verdict.span, {"pg_labels.sqlstate": _sqlstate(err)})
        end(verdict.span, message, _sqlstate(err) or "pg_labels.error")
        return message

    @staticmethod
    def failed_tool(verdict: Verdict, err: BaseException) -> None:
        """End the span of an allowed call whose tool raised."""
        end(verdict.span, _why(err), type(err).__qualname__)
