"""The barrier as a tool-call wrapper of LangGraph's ``ToolNode`` (``pip install
'pg-labels[langgraph]'``).

``barrier_wrapper(run)`` wraps every tool call of a ``ToolNode``: it asks the gate of ``run``
and records the call before the tool runs, and records the result after it. A call the
barrier refuses becomes a ``ToolMessage`` with ``status="error"`` naming the rule, and the
tool's body does not run::

    node = ToolNode(tools, wrap_tool_call=barrier_wrapper(run))          # a Run (psycopg)
    node = ToolNode(tools, awrap_tool_call=barrier_wrapper(async_run))   # an AsyncRun

A call that needs a person's approval (``ask``) pauses the graph when it has a checkpointer
(``pause=None``, the default; ``True`` requires one, ``False`` never pauses): the wrapper
records the approval request and calls ``langgraph.types.interrupt()`` with it (its id, the
tool, the real arguments, why it asks), so the graph stops and is checkpointed. The app
resumes it with ``Command(resume=...)`` once a person decided (any value: it is never
trusted). The node runs again from its start, and the wrapper reads the decision from the
database: granted, the call runs once (the database's one-use approval lets it through);
denied, withdrawn or expired, the model gets a ``ToolMessage`` saying so (with the approver's
reason); still pending, the graph pauses again. Without a checkpointer (or ``pause=False``)
an ``ask`` is a ``ToolMessage`` error, and the same call made again after the grant runs.

For a :class:`~pg_labels.Run` the wrapper is a plain function (``wrap_tool_call``, which
LangGraph also uses from ``ainvoke``); for an :class:`~pg_labels.AsyncRun` a coroutine
function (``awrap_tool_call``).
"""

from __future__ import annotations

import contextvars
import datetime
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, overload

from langchain_core.messages import ToolMessage
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, interrupt
from psycopg import sql

from ._guard import Guard, OutputLabels, Verdict, _call_key
from ._platform import AsyncRun, Run
from ._platform._common import _args

__all__ = [
    "PAUSE_KIND",
    "AsyncToolCallWrapper",
    "ToolCallWrapper",
    "barrier_wrapper",
]

Result = ToolMessage | Command[Any]
ToolCallWrapper = Callable[[ToolCallRequest, Callable[[ToolCallRequest], Result]], Result]
AsyncToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable[Result]]], Awaitable[Result]
]

#: The ``kind`` of the value a paused call hands ``interrupt()``: the interrupt's ``value`` is
#: ``{"kind": PAUSE_KIND, "request": id, "run": ..., "tool": ..., "args": ..., "rule": ...,
#: "reason": ..., "expires_at": ..., "tool_call_id": ...}``.
PAUSE_KIND: Final = "pg_labels.approval"

# A paused call's request carries its LangGraph tool call's id at the end of its reason, so
# that the node run again (on resume, in this process or another) finds it instead of
# recording a second request (unless it was granted and used); a later attempt (another tool
# call id) asks anew.
_MARKER: Final = "[LangGraph tool call {}]"
_MARKER_ID_MAX: Final = 128  # a longer tool call id is marked by its SHA-256
_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "pg_labels_lg_call", default=None
)

# A request as the wrapper re-reads it (contract: pg_labels.approval_requests).
_READ: Final = sql.SQL(
    "SELECT status, expires_at, decision_reason FROM pg_labels.approval_requests "
    "WHERE id = %s AND run_id = %s"
)
_FIND: Final = sql.SQL(
    "SELECT id, status, used_by FROM pg_labels.approval_requests "
    "WHERE run_id = %s AND tool = %s AND args IS NOT DISTINCT FROM %s "
    "AND right(reason, length(%s::text)) = %s::text ORDER BY id DESC LIMIT 1"
)

#: How many times one call re-checks the gate after a grant it could not use (another call
#: used it first) before it is refused; how many completed calls of paused nodes a wrapper
#: keeps (their results are handed back, not run again, when LangGraph runs the node again).
_ATTEMPTS: Final = 3
_MEMO_SIZE: Final = 256


@dataclass(frozen=True)
class _Request:
    id: int
    status: str
    expires_at: datetime.datetime | None
    decision_reason: str | None


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


def _configurable(request: ToolCallRequest) -> Mapping[str, Any]:
    runtime = getattr(request, "runtime", None)
    config = getattr(runtime, "config", None)
    if not isinstance(config, Mapping):
        try:
            config = get_config()
        except RuntimeError:  # outside a graph: no checkpointer
            return {}
    conf = config.get("configurable")
    return conf if isinstance(conf, Mapping) else {}


def _pauses(request: ToolCallRequest, pause: bool | None) -> bool:
    """Whether an ``ask`` pauses this call's graph: it has a checkpointer (``pause=None``);
    ``pause=True`` without one is an error (``interrupt()`` could never be resumed)."""
    if pause is False:
        return False
    has = _configurable(request).get(CONFIG_KEY_CHECKPOINTER) is not None
    if pause and not has:
        raise RuntimeError(
            "pg_labels.langgraph: barrier_wrapper(run, pause=True) pauses the graph for a "
            "person's approval with interrupt(), which needs a checkpointer: compile the graph "
            "with one (graph.compile(checkpointer=PostgresSaver(conn))), or pass pause=None "
            "(pause when there is one) or pause=False (an ask is a ToolMessage error)"
        )
    return has and request.tool_call.get("id") is not None


def _closed_message(catalog: str, req: _Request | str | None, request_id: int) -> str:
    """What the model is told of a request that will not let the call through (a text: the
    decision could not be read)."""
    if isinstance(req, str):
        return req
    if req is None:
        return (
            f"pg_labels refused {catalog}: approval request {request_id} cannot be read, "
            "so the call is refused"
        )
    if req.status == "denied":
        why = f": {req.decision_reason}" if req.decision_reason else " (no reason given)"
        return (
            f"pg_labels: a person denied approval request {req.id} for {catalog}{why}. "
            "The call is refused."
        )
    if req.status == "expired":
        return (
            f"pg_labels: approval request {req.id} for {catalog} expired at {req.expires_at} "
            "without a decision. The call is refused."
        )
    if req.status == "withdrawn":
        why = f" ({req.decision_reason})" if req.decision_reason else ""
        return (
            f"pg_labels: approval request {req.id} for {catalog} was withdrawn{why}. "
            "The call is refused."
        )
    return f"pg_labels refused {catalog}: approval request {req.id} is {req.status}"


class _PausingGuard(Guard):
    """The guard, with one request per LangGraph tool call while the call pauses: the node
    run again on resume finds its call's request (pending or decided) by the call's id.
    ``ttl``: the time to live of the requests it records (``None``: they never expire)."""

    def __init__(self, run: Run | AsyncRun, ttl: datetime.timedelta | None, **kw: Any) -> None:
        super().__init__(run, **kw)
        self.ttl = ttl

    def _request(self, catalog: str, args: object, reason: str | None) -> tuple[int, str | None]:
        call = _CALL.get()
        if call is None or not isinstance(self.run, Run):
            return super()._request(catalog, args, reason)
        marker = _marker(call)
        row = self.run.platform._row(_FIND, [self.run.id, catalog, _args(args), marker, marker])
        if row is not None and (row[1] != "granted" or row[2] is None):
            return int(row[0]), None
        request = self.run.request_approval(
            catalog, args, reason=_marked(reason, marker), ttl=self.ttl
        )
        return request, None

    async def _arequest(
        self, catalog: str, args: object, reason: str | None
    ) -> tuple[int, str | None]:
        call = _CALL.get()
        if call is None or isinstance(self.run, Run):
            return await super()._arequest(catalog, args, reason)
        marker = _marker(call)
        row = await self.run.platform._row(
            _FIND, [self.run.id, catalog, _args(args), marker, marker]
        )
        if row is not None and (row[1] != "granted" or row[2] is None):
            return int(row[0]), None
        request = await self.run.request_approval(
            catalog, args, reason=_marked(reason, marker), ttl=self.ttl
        )
        return request, None

    def read(self, request: int) -> _Request | None:
        """The request as the database says now (``None``: it cannot be read)."""
        if not isinstance(self.run, Run):
            raise TypeError("an AsyncRun's requests are awaited (aread)")
        with self.lock():
            row = self.run.platform._row(_READ, [request, self.run.id])
        return None if row is None else _Request(request, str(row[0]), row[1], row[2])

    async def aread(self, request: int) -> _Request | None:
        if isinstance(self.run, Run):
            return self.read(request)
        async with self.alock():
            row = await self.run.platform._row(_READ, [request, self.run.id])
        return None if row is None else _Request(request, str(row[0]), row[1], row[2])


def _marked(reason: str | None, marker: str) -> str:
    return f"{reason} {marker}" if reason else marker


def _marker(call_id: str) -> str:
    if len(call_id) > _MARKER_ID_MAX:
        call_id = "sha256:" + hashlib.sha256(call_id.encode()).hexdigest()
    return _MARKER.format(call_id)


class _Memo:
    """The results of the calls that ran in a node that may pause (by the node's task and the
    call's id): LangGraph runs the whole node again on resume (or on a retry), and a call that
    ran is handed its result instead of running again. Bounded (``_MEMO_SIZE``, oldest out
    first); held in this process only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: OrderedDict[tuple[str, str, str, str], Result] = OrderedDict()

    @staticmethod
    def key(request: ToolCallRequest, catalog: str) -> tuple[str, str, str, str]:
        ns = str(_configurable(request).get("checkpoint_ns", ""))
        _, args, call_id = _call(request)
        return (ns, str(call_id), *_call_key(catalog, args))

    def get(self, key: tuple[str, str, str, str]) -> Result | None:
        with self._lock:
            return self._results.get(key)

    def put(self, key: tuple[str, str, str, str], result: Result) -> None:
        with self._lock:
            self._results[key] = result
            self._results.move_to_end(key)
            while len(self._results) > _MEMO_SIZE:
                self._results.popitem(last=False)


def _payload(guard: Guard, verdict: Verdict, args: object, call_id: str, req: _Request) -> Any:
    """The value the graph pauses with: what a person needs to decide, and the request."""
    expires = req.expires_at.isoformat() if req.expires_at is not None else None
    reason = verdict.reason
    return {
        "kind": PAUSE_KIND,
        "request": req.id,
        "run": str(guard.run.id),
        "tool": guard.catalog_name(verdict.tool),
        "args": args,
        "rule": verdict.rule,
        "reason": reason,
        "expires_at": expires,
        "tool_call_id": call_id,
    }


@overload
def barrier_wrapper(
    run: Run,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = ...,
    output_labels: OutputLabels | None = ...,
    tracer_provider: Any = ...,
    pause: bool | None = ...,
    approval_ttl: datetime.timedelta | None = ...,
) -> ToolCallWrapper: ...


@overload
def barrier_wrapper(
    run: AsyncRun,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = ...,
    output_labels: OutputLabels | None = ...,
    tracer_provider: Any = ...,
    pause: bool | None = ...,
    approval_ttl: datetime.timedelta | None = ...,
) -> AsyncToolCallWrapper: ...


def barrier_wrapper(
    run: Run | AsyncRun,
    *,
    names: Mapping[str, str] | Callable[[str], str] | None = None,
    output_labels: OutputLabels | None = None,
    tracer_provider: Any = None,
    pause: bool | None = None,
    approval_ttl: datetime.timedelta | None = None,
) -> ToolCallWrapper | AsyncToolCallWrapper:
    """The barrier of ``run`` around a ``ToolNode``'s calls.

    ``names`` maps the tools' names to the catalog's (the same name when absent);
    ``output_labels`` gives the labels of a tool's output (a mapping of catalog names, or a
    function of the catalog name and the output: the ``ToolMessage``'s content, or the
    ``Command`` a tool returned); ``tracer_provider`` the OpenTelemetry provider of the
    spans (the global one by default; no spans without OpenTelemetry); ``pause`` whether a
    call that needs a person's approval pauses the graph (``interrupt()``) until a person
    decided: ``None`` when the graph has a checkpointer, ``True`` always (an error without
    one), ``False`` never (the call is a ``ToolMessage`` error); ``approval_ttl`` the time
    to live of the requests a paused call records (past it the request expires and the model
    is told so; ``None``: they never expire).
    """
    if pause is not None and not isinstance(pause, bool):
        raise TypeError("pause must be True, False or None")
    if approval_ttl is not None and (
        not isinstance(approval_ttl, datetime.timedelta) or approval_ttl <= datetime.timedelta(0)
    ):
        raise ValueError("approval_ttl must be a positive datetime.timedelta, or None")
    guard = _PausingGuard(
        run,
        approval_ttl,
        names=names,
        output_labels=output_labels,
        tracer_provider=tracer_provider,
    )
    memo = _Memo()

    def finish(
        request: ToolCallRequest, result: Result, recorded: tuple[Any, str | None]
    ) -> Result:
        # the tool ran, but its result could not be recorded: it does not reach the model
        message = recorded[1]
        return result if message is None else _refused(request, message)

    def refused(request: ToolCallRequest, verdict: Verdict) -> ToolMessage:
        return _refused(request, verdict.message or "pg_labels refused the call")

    if isinstance(run, Run):

        def ran(
            request: ToolCallRequest,
            execute: Callable[[ToolCallRequest], Result],
            verdict: Verdict,
        ) -> Result:
            try:
                result = execute(request)
            except BaseException as err:
                guard.failed_tool(verdict, err)
                raise
            return finish(request, result, guard.record(verdict, _output(result)))

        def read(catalog: str, request_id: int) -> _Request | str | None:
            try:
                return guard.read(request_id)
            except Exception as err:
                return _unreadable(catalog, request_id, err)

        def paused(
            request: ToolCallRequest,
            execute: Callable[[ToolCallRequest], Result],
            key: tuple[str, str, str, str],
        ) -> Result:
            name, args, call_id = _call(request)
            catalog = guard.catalog_name(name)
            for _ in range(_ATTEMPTS):
                verdict = guard.check(name, args, call_id)
                if verdict.allowed:
                    result = ran(request, execute, verdict)
                    memo.put(key, result)
                    return result
                if verdict.decision != "ask" or verdict.request_id is None:
                    return refused(request, verdict)
                req = read(catalog, verdict.request_id)
                while isinstance(req, _Request) and req.status == "pending":
                    interrupt(_payload(guard, verdict, args, str(call_id), req))
                    req = read(catalog, verdict.request_id)  # the resume value is not trusted
                if not isinstance(req, _Request) or req.status != "granted":
                    return _refused(request, _closed_message(catalog, req, verdict.request_id))
            return _refused(request, _unused(catalog))

        def wrap(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Result]) -> Result:
            if not _pauses(request, pause):
                verdict = guard.check(*_call(request))
                if not verdict.allowed:
                    return refused(request, verdict)
                return ran(request, execute, verdict)
            key = memo.key(request, guard.catalog_name(request.tool_call["name"]))
            done = memo.get(key)
            if done is not None:
                return done
            token = _CALL.set(str(request.tool_call["id"]))
            try:
                return paused(request, execute, key)
            finally:
                _CALL.reset(token)

        return wrap

    async def aran(
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], Awaitable[Result]],
        verdict: Verdict,
    ) -> Result:
        try:
            result = await execute(request)
        except BaseException as err:
            guard.failed_tool(verdict, err)
            raise
        return finish(request, result, await guard.arecord(verdict, _output(result)))

    async def aread(catalog: str, request_id: int) -> _Request | str | None:
        try:
            return await guard.aread(request_id)
        except Exception as err:
            return _unreadable(catalog, request_id, err)

    async def apaused(
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], Awaitable[Result]],
        key: tuple[str, str, str, str],
    ) -> Result:
        name, args, call_id = _call(request)
        catalog = guard.catalog_name(name)
        for _ in range(_ATTEMPTS):
            verdict = await guard.acheck(name, args, call_id)
            if verdict.allowed:
                result = await aran(request, execute, verdict)
                memo.put(key, result)
                return result
            if verdict.decision != "ask" or verdict.request_id is None:
                return refused(request, verdict)
            req = await aread(catalog, verdict.request_id)
            while isinstance(req, _Request) and req.status == "pending":
                interrupt(_payload(guard, verdict, args, str(call_id), req))
                req = await aread(catalog, verdict.request_id)  # the resume value: not trusted
            if not isinstance(req, _Request) or req.status != "granted":
                return _refused(request, _closed_message(catalog, req, verdict.request_id))
        return _refused(request, _unused(catalog))

    async def awrap(
        request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        if not _pauses(request, pause):
            verdict = await guard.acheck(*_call(request))
            if not verdict.allowed:
                return refused(request, verdict)
            return await aran(request, execute, verdict)
        key = memo.key(request, guard.catalog_name(request.tool_call["name"]))
        done = memo.get(key)
        if done is not None:
            return done
        token = _CALL.set(str(request.tool_call["id"]))
        try:
            return await apaused(request, execute, key)
        finally:
            _CALL.reset(token)

    return awrap


def _unreadable(catalog: str, request: int, err: Exception) -> str:
    return (
        f"pg_labels refused {catalog}: the decision on approval request {request} could not "
        f"be read ({Guard.why(err)}), so the call is refused"
    )


def _unused(catalog: str) -> str:
    return (
        f"pg_labels refused {catalog}: a person granted the call, but another identical call "
        "used the approval first"
    )
