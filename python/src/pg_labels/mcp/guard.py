"""The gateway's guard: an allowed call is two commits. The gate and the call's ``tool_called``
step are one transaction, committed before the upstream runs; the ``tool_result`` step is one
statement, committed before the client reads the result.

The gate's transaction goes in two round trips on the session's pooled connection (psycopg's
pipeline mode, libpq 14 or later, else a round trip per statement; every value a parameter):
``BEGIN`` and the gate, whose decision is read; then,
for ``allow``, the ``tool_called`` step in a savepoint and ``COMMIT``, else ``COMMIT`` alone (a
block or an ask is on the record as the gate's ``gate_decided`` step, as before). Should the
``tool_called`` step be refused (the run or the catalog changed between the two statements),
the savepoint is rolled back and the gate's decision committed: the trail holds what it held
when the two were transactions of their own, and the refusal is in
``pg_labels.refused_writes`` (the database records it whatever becomes of the transaction).
What an ask does next (its approval request) is the base guard's, unchanged."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.pq import PipelineStatus, TransactionStatus
from psycopg.types.json import Jsonb

from pg_labels import AsyncRun, Guard, LabelSet, Verdict
from pg_labels._platform._common import (
    _GATE,
    Decision,
    Step,
    _labels,
    _name,
    _returned,
    _step,
    _step_statement,
    _translate,
)

# libpq 14 or later pipelines (two round trips for the gate's transaction); else each statement
# is a round trip of its own
PIPELINE: Final = psycopg.AsyncPipeline.is_supported()
_BEGIN: Final = sql.SQL("BEGIN")
_COMMIT: Final = sql.SQL("COMMIT")
_ROLLBACK: Final = sql.SQL("ROLLBACK")
_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_mcp_call")
_ROLLBACK_TO: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_mcp_call")


def encoded(args: object) -> str:
    """The arguments as the JSON text the gateway measures (max_argument_bytes) and records:
    encoded once per call."""
    return json.dumps(args, ensure_ascii=False)


def _jsonb(args: object, text: str | None) -> Jsonb | None:
    """``args`` as a jsonb parameter: ``text`` is its JSON, already encoded."""
    if args is None:
        return None
    if text is None:
        text = encoded(args)
    return Jsonb(args, dumps=lambda _: text)


# the statements as text, rendered once (psycopg renders a composed statement at each call)
_RENDERED: dict[tuple[str, ...], str] = {}


def _statement(
    conn: psycopg.AsyncConnection[Any], run: AsyncRun, kind: str, **columns: object
) -> tuple[str, list[object]]:
    """AsyncRun's statement of a step of ``kind`` (``_step_statement``), and its values."""
    query, params = _step_statement(run.id, kind, **columns)
    key = (kind, *(name for name, value in columns.items() if value is not None))
    text = _RENDERED.get(key)
    if text is None:
        text = _RENDERED[key] = query.as_string(conn)
    return text, list(params)


def _conn(run: AsyncRun) -> psycopg.AsyncConnection[Any]:
    conn = run.platform.conn
    if not isinstance(conn, psycopg.AsyncConnection):  # pragma: no cover - the pool's are
        raise TypeError("the gateway's runs are on psycopg connections")
    return conn


async def gate_and_call(
    run: AsyncRun, tool: str, args: object, text: str | None = None
) -> tuple[Decision, Step | None]:
    """The gate's decision and, when it allows, the ``tool_called`` step, in one transaction
    (committed when this returns). A refused ``tool_called`` step raises its
    :class:`~pg_labels.Refusal` after the gate's decision was committed; anything else that
    fails rolls everything back and raises. (Cancelled mid-way, by a timeout or the client,
    the connection is left as it is: not idle, the pool closes it, which rolls back what was
    not committed.)"""
    conn = _conn(run)
    await run.platform._ready()
    tool = _name(tool, "tool")
    value = _jsonb(args, text)
    # the statements and values of AsyncRun.gate and AsyncRun.call
    gate_params = [run.id, tool, value, LabelSet()]
    insert, params = _statement(conn, run, "tool_called", tool=tool, args=value, labels=LabelSet())
    decided: Decision | None = None
    called = conn.cursor()
    try:
        with _translate():
            async with conn.pipeline() if PIPELINE else contextlib.nullcontext():
                await conn.execute(_BEGIN)
                gate = conn.cursor()
                await gate.execute(_GATE, gate_params)
                row = _returned(await gate.fetchone())
                decided = decision = Decision(row[0], row[1], row[2], row[3])
                if decision.allowed:
                    await conn.execute(_SAVEPOINT)
                    await called.execute(insert, params)
                await conn.execute(_COMMIT)
            if not decision.allowed:
                return decision, None
            return decision, _step(_returned(await called.fetchone()))
    except Exception:
        await _after_failure(conn, gate_decided=decided is not None)
        raise


async def _after_failure(conn: psycopg.AsyncConnection[Any], *, gate_decided: bool) -> None:
    """After a statement of the gate's transaction failed: when it was the ``tool_called``
    step (the gate decided; the transaction is open and failed), commit the gate's decision
    alone; otherwise roll back. Whatever fails here leaves the connection not idle, and the
    pool closes it."""
    if conn.closed or conn.broken or conn.pgconn.pipeline_status != PipelineStatus.OFF:
        return
    status = conn.info.transaction_status
    if status == TransactionStatus.IDLE:
        return  # COMMIT itself failed: nothing was committed
    try:
        if gate_decided and status == TransactionStatus.INERROR:
            await conn.execute(_ROLLBACK_TO)
            await conn.execute(_COMMIT)
        else:
            await conn.execute(_ROLLBACK)
    except psycopg.Error:
        pass


async def record_result(run: AsyncRun, tool: str, labels: LabelSet) -> Step:
    """The call's ``tool_result`` step (the statement of AsyncRun.result): one statement,
    committed when this returns."""
    conn = _conn(run)
    await run.platform._ready()
    insert, params = _statement(conn, run, "tool_result", tool=_name(tool, "tool"), labels=labels)
    with _translate():
        cur = await conn.execute(insert, params)
        return _step(_returned(await cur.fetchone()))


class GatewayGuard(Guard):
    """The session's guard: the base guard's decisions, verdicts and spans, with an allowed
    call's gate and ``tool_called`` step in one transaction and its ``tool_result`` step one
    statement (two commits per allowed call)."""

    run: AsyncRun

    async def acheck(
        self, tool: str, args: object, call_id: str | None = None, *, text: str | None = None
    ) -> Verdict:
        """Ask the gate and record the call (``allow``, in the gate's transaction) or an
        approval request (``ask``, after the gate's decision was committed); ``text`` is
        ``args`` as JSON, when the caller encoded it already."""
        span = self.tracing.start(tool, self.run.id, call_id)
        catalog = tool
        try:
            catalog = self._begin(tool, span)
            async with self.alock():
                decision, step = await gate_and_call(self.run, catalog, args, text)
                request, state = (
                    await self._arequest(catalog, args, decision.reason)
                    if decision.decision == "ask"
                    else (None, None)
                )
            verdict = self._verdict(tool, catalog, decision, step, request, state)
        except Exception as err:
            verdict = self._failed(tool, catalog, err)
        return self._decided(verdict, span)

    async def arecord(self, verdict: Verdict, output: object) -> tuple[Step | None, str | None]:
        """Record the result of an allowed call: ``(step, None)``, or ``(None, message)`` when
        it could not be recorded (the output is then withheld)."""
        try:
            catalog = self.catalog_name(verdict.tool)
            labels = _labels(self._labels(catalog, output))
            async with self.alock():
                step = await record_result(self.run, catalog, labels)
        except Exception as err:
            return None, self._not_recorded(verdict, err)
        return self._recorded(verdict, step), None
