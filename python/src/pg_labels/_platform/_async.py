"""The platform's calls, written once: :class:`AsyncPlatform` and :class:`AsyncRun` here, on
psycopg's ``AsyncConnection`` or asyncpg; :class:`Platform` and :class:`Run` (psycopg's
``Connection``) in ``_sync.py``, generated from this file by python/tools/async_to_sync.py.
Docstrings are copied as written: they speak of both forms."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from psycopg import sql

from .._values import LabelSet, Scope
from ._catalog import _TOOLS_UPSERT, Tool, _catalog
from ._common import (
    _APPROVAL,
    _APPROVAL_STATE,
    _CARRIED,
    _DECIDE,
    _GATE,
    _PENDING_REQUEST,
    _REQUEST,
    _REQUEST_TTL,
    _RUN,
    _WITHDRAW,
    WAIT_TIMEOUT,
    ApprovalDecision,
    Decision,
    Shared,
    Statement,
    Step,
    _approval_decision,
    _args,
    _bool,
    _labels,
    _name,
    _open_statement,
    _opt_name,
    _request,
    _returned,
    _RunHandle,
    _share_statements,
    _step,
    _step_statement,
    _timeout,
    _translate,
    _ttl,
    _uuid,
    _Wait,
)
from ._drivers import AsyncConnection, executor_async

if TYPE_CHECKING:  # async only: a share of an AsyncRun may go to a Run
    from ._sync import Run


class AsyncPlatform:
    """The platform's calls on one connection.

    :class:`Platform` takes a psycopg 3 ``Connection`` and registers the types on it (raising
    :class:`ExtensionMissing` when the database has no pg_labels); :class:`AsyncPlatform`
    takes a psycopg 3 ``AsyncConnection`` or an asyncpg connection, with the same calls
    awaited, and registers the types on it at its first call.

    ``connect`` opens the connection a wait (:meth:`AsyncRun.wait_for_decision`) listens on,
    one per wait, closed when it ends: a function of no arguments returning a new connection
    of the same driver (awaited for :class:`AsyncPlatform`). By default it is opened with
    ``conn``'s parameters (psycopg: its conninfo and password; asyncpg: its address, user,
    password, database and SSL setting), as the role ``conn`` logged in as.
    """

    def __init__(self, conn: AsyncConnection, *, connect: Callable[[], Any] | None = None) -> None:
        if connect is not None and not callable(connect):
            raise TypeError("connect must be a function that opens a new connection")
        self._exec = executor_async(conn)
        self.conn = conn
        self._connect = connect

    async def _ready(self) -> None:
        await self._exec.ready()

    async def _one(self, query: sql.Composed | sql.SQL, params: Sequence[object]) -> Sequence[Any]:
        await self._ready()
        with _translate():
            row = await self._exec.one(query, params)
        return _returned(row)

    async def _two(
        self, first: Statement, second: Statement
    ) -> tuple[Sequence[Any], Sequence[Any]]:
        """Two statements in one transaction; the second takes the first's id first."""
        await self._ready()
        with _translate():
            async with self._exec.atomic():
                a = _returned(await self._exec.fetchone(*first))
                b = _returned(await self._exec.fetchone(second[0], [a[0], *second[1]]))
        return a, b

    async def _row(self, query: sql.SQL, params: Sequence[object]) -> Sequence[Any] | None:
        """A row read (no savepoint: a read changes nothing to undo), or ``None``."""
        await self._ready()
        with _translate():
            return await self._exec.fetchone(query, params)

    async def _wait(self, run: uuid.UUID, request: int, timeout: float) -> ApprovalDecision:
        bound = _Wait(timeout)
        with _translate():
            row = await self._exec.wait(
                self._connect, _APPROVAL_STATE, [request, run], str(request), bound.left
            )
        return _approval_decision(request, run, row, waited=True)

    async def open_run(
        self,
        agent: str | None,
        scope: Scope | str | None,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        run_id: uuid.UUID | str | None = None,
        listener: int | None = None,
    ) -> AsyncRun:
        """Open a run: ``INSERT INTO pg_labels.runs``. ``scope`` may be ``None`` for a run of a
        listener, whose scope it takes. Raises :class:`DataBarrier` when the labels or the
        listener's scope escape the scope (the run is not opened)."""
        query, params = _open_statement(agent, scope, labels, run_id, listener)
        row = await self._one(query, params)
        return AsyncRun(self, row[0], row[1], row[2], row[3])

    async def run(self, run_id: uuid.UUID | str) -> AsyncRun:
        """A handle on an existing run; ``LookupError`` when there is none."""
        rid = _uuid(run_id, "run_id")
        row = await self._row(_RUN, [rid])
        if row is None:
            raise LookupError(f"run {rid} does not exist")
        return AsyncRun(self, row[0], row[1], row[2], row[3])

    async def decide_approval(self, request: int, granted: bool, reason: str | None = None) -> int:
        """``pg_labels.decide_approval``: for the connection of a person the DBA allowed to
        decide (not the platform's writer). Returns the ``approval_decided`` step's id."""
        request = _request(request)
        row = await self._one(
            _DECIDE, [request, _bool(granted, "granted"), _opt_name(reason, "reason")]
        )
        return int(row[0])

    async def sync_tools(
        self,
        tools: Iterable[object],
        *,
        effects: Mapping[str, str] | None = None,
        trusted: Iterable[str] | Mapping[str, bool] | None = None,
    ) -> list[Tool]:
        """Fill ``pg_labels.tools`` from MCP tool descriptions, in one transaction.

        Each tool is a dict or an object with ``name`` and ``annotations`` (and optionally
        ``description``; MCP's own ``Tool`` models too). Its effect is ``read`` when
        ``readOnlyHint`` is true, else ``reversible_write`` when ``destructiveHint`` is
        explicitly false, else ``destructive`` (MCP's default for ``destructiveHint`` is
        true); ``effects`` names the effect of tools whose annotations cannot say it
        (``financial``) and overrides them. A tool's output is untrusted unless ``trusted``
        names it. Tools already in the catalog are updated when they differ; others are left
        as they are. Writing the catalog is the DBA's: run this on such a connection.
        """
        entries = _catalog(tools, effects=effects, trusted=trusted)
        await self._ready()
        with _translate():
            async with self._exec.atomic():
                await self._exec.executemany(
                    _TOOLS_UPSERT,
                    [[t.name, t.effect, t.trusted_output, d] for t, d in entries],
                )
        return [t for t, _ in entries]


class AsyncRun(_RunHandle):
    """An open run and the steps a platform writes for it (an :class:`AsyncRun`'s calls are
    awaited)."""

    def __init__(
        self,
        platform: AsyncPlatform,
        run_id: uuid.UUID,
        agent: str | None,
        scope: Scope,
        labels: LabelSet,
    ) -> None:
        self.platform = platform
        self.id = run_id
        self.agent = agent
        self.scope = scope
        self.opened_labels = labels

    def __repr__(self) -> str:
        return f"<AsyncRun {self.id} {self.agent} in {self.scope}>"

    async def _step(self, kind: str, **columns: object) -> Step:
        query, params = _step_statement(self.id, kind, **columns)
        return _step(await self.platform._one(query, params))

    async def input(
        self,
        labels: LabelSet | str | Iterable[str],
        args: object = None,
        *,
        reason: str | None = None,
    ) -> Step:
        """Record data entering the run (an ``input`` step with its labels)."""
        return await self._step(
            "input", labels=_labels(labels), args=_args(args), reason=_opt_name(reason, "reason")
        )

    async def gate(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> Decision:
        """Ask the gate (``pg_labels.gate``): recorded as a ``gate_decided`` step, never
        raising for a decision."""
        row = await self.platform._one(
            _GATE, [self.id, _name(tool, "tool"), _args(args), _labels(labels)]
        )
        return Decision(row[0], row[1], row[2], row[3])

    async def call(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> Step:
        """Record a ``tool_called`` step, or raise the :class:`Refusal` the database raised
        (:class:`DataBarrier`, :class:`UntrustedToIrreversible`, :class:`ApprovalRequired`,
        :class:`UnknownTool`)."""
        return await self._step(
            "tool_called", tool=_name(tool, "tool"), args=_args(args), labels=_labels(labels)
        )

    async def gate_and_call(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> tuple[Decision, Step | None]:
        """Ask the gate and, when it allows, record the ``tool_called`` step, as one call: in
        autocommit mode one transaction (one commit: the call is on the record when this
        returns, before the tool runs; pipelined on psycopg, two round trips). Returns the
        decision and the step (``None`` unless the gate allowed). A ``tool_called`` step the
        database refuses after the gate allowed (the run or the catalog changed in between)
        raises its :class:`Refusal`, the gate's decision recorded."""
        tool = _name(tool, "tool")
        value = _args(args)
        lab = _labels(labels)
        await self.platform._ready()
        step = _step_statement(self.id, "tool_called", tool=tool, args=value, labels=lab)
        with _translate():
            gate, called = await self.platform._exec.gate_then(
                (_GATE, [self.id, tool, value, lab]),
                step,
                lambda row: Decision(row[0], row[1], row[2], row[3]).allowed,
            )
        row = _returned(gate)
        decision = Decision(row[0], row[1], row[2], row[3])
        return decision, (_step(called) if called is not None else None)

    async def result(
        self,
        tool: str,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        args: object = None,
    ) -> Step:
        """Record a tool's result (``tool_result``); its labels gain ``origin:tool`` when the
        tool's output is untrusted."""
        return await self._step(
            "tool_result", tool=_name(tool, "tool"), labels=_labels(labels), args=_args(args)
        )

    async def request_approval(
        self,
        tool: str,
        args: object = None,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        reason: str | None = None,
        ttl: datetime.timedelta | float | None = None,
    ) -> int:
        """``pg_labels.request_approval``: returns the request's step id, which a person
        decides with ``decide_approval``. ``ttl`` (a ``timedelta`` or seconds) makes the
        request expire then, undecided (``None``: never)."""
        params = [
            self.id,
            _name(tool, "tool"),
            _args(args),
            _labels(labels),
            _opt_name(reason, "reason"),
        ]
        if ttl is None:
            row = await self.platform._one(_REQUEST, params)
        else:
            row = await self.platform._one(_REQUEST_TTL, [*params, _ttl(ttl)])
        return int(row[0])

    async def share(
        self,
        content: str | bytes,
        *,
        to_scope: Scope | str | None = None,
        to_run: AsyncRun | Run | uuid.UUID | str | None = None,
        labels: LabelSet | str | Iterable[str] | None = None,
        description: str | None = None,
    ) -> Shared:
        """Record an artifact of this run (its SHA-256 digest; at least the run's labels) and
        share it with a scope or one run, in one transaction. Raises :class:`DataBarrier` when
        the target cannot carry the artifact's labels and no crossing covers them."""
        artifact, share = _share_statements(self.id, content, to_scope, to_run, labels, description)
        arow, srow = await self.platform._two(artifact, share)
        return Shared(arow[0], srow[0], arow[1], arow[2], srow[1])

    async def read_context(self, artifact_id: uuid.UUID | str) -> Step:
        """Record a ``context_read`` of a shared artifact; the run then carries its labels.
        Raises :class:`DataBarrier` when no share offers it to this run."""
        return await self._step("context_read", artifact_id=_uuid(artifact_id, "artifact_id"))

    async def approval(self, request: int) -> str | None:
        """The decision of one of this run's approval requests: ``granted``, ``denied``, or
        ``None`` while it waits (read from the ``approval_decided`` step)."""
        request = _request(request)
        row = await self.platform._row(_APPROVAL, [self.id, request])
        return None if row is None else str(row[0])

    async def approval_status(self, request: int) -> ApprovalDecision:
        """One of this run's approval requests as ``pg_labels.approval_requests`` reads now
        (``pending`` while it waits), without waiting; ``LookupError`` when this role cannot
        read it."""
        request = _request(request)
        row = await self.platform._row(_APPROVAL_STATE, [request, self.id])
        return _approval_decision(request, self.id, row)

    async def wait_for_decision(
        self, request: int, timeout: float = WAIT_TIMEOUT
    ) -> ApprovalDecision:
        """Wait for a person's decision on one of this run's approval requests, on
        ``LISTEN pg_labels_approvals`` (no polling): the request is read after ``LISTEN`` (a
        decision made before is not missed) and again on each notification of its id. Ends
        at the decision (``granted``, ``denied`` with the approver's reason, ``withdrawn``),
        at the request's ``expires_at`` (``expired``) or after ``timeout`` seconds
        (``timeout``), whichever comes first.

        The wait uses a connection of its own (see ``connect`` of the platform), never the
        run's connection or its transaction: one per wait, closed when the wait ends however
        it ends (a cancelled task too). ``LookupError`` when the request is not this run's or
        this role cannot read it."""
        return await self.platform._wait(self.id, _request(request), _timeout(timeout))

    async def withdraw_approval(self, request: int, reason: str | None = None) -> int:
        """``pg_labels.withdraw_approval``: the requester stops waiting for one of its
        requests (recorded as denied, reason ``withdrawn: ...``); returns the
        ``approval_decided`` step's id. Only the role that requested it may."""
        row = await self.platform._one(_WITHDRAW, [_request(request), _opt_name(reason, "reason")])
        return int(row[0])

    async def pending_request(self, tool: str, args: object = None) -> int | None:
        """The newest approval request of this run for this call (tool and arguments, compared
        as ``jsonb``) that no call used yet, whatever its status; ``None`` when there is none."""
        row = await self.platform._row(
            _PENDING_REQUEST, [self.id, _name(tool, "tool"), _args(args)]
        )
        return None if row is None else int(row[0])

    async def carried(self) -> LabelSet:
        """What the run carries now (``runs.labels``)."""
        row = await self.platform._row(_CARRIED, [self.id])
        if row is None:
            raise LookupError(f"run {self.id} does not exist")
        labels: LabelSet = row[0]
        return labels
