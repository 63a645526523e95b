"""The gateway's guard: an allowed call is two commits. The gate and the call's ``tool_called``
step are one transaction (:meth:`AsyncRun.gate_and_call`: pipelined on the session's pooled
connection, two round trips), committed before the upstream runs; the ``tool_result`` step is
one statement (:meth:`AsyncRun.result`, in autocommit mode its own transaction), committed before
the client reads the result. Should the ``tool_called`` step be refused after the gate allowed
(the run or the catalog changed between the two statements), the gate's decision is committed
alone: the trail holds what it held when the two were transactions of their own, and the refusal
is in ``pg_labels.refused_writes``. What an ask does next (its approval request) is the base
guard's, unchanged."""

from __future__ import annotations

import json

from pg_labels import AsyncRun, Guard, LabelSet, Verdict


def encoded(args: object) -> str:
    """The arguments as the JSON text the gateway measures (max_argument_bytes)."""
    return json.dumps(args, ensure_ascii=False)


class GatewayGuard(Guard):
    """The session's guard: the base guard's decisions, verdicts, spans and results, with an
    allowed call's gate and ``tool_called`` step in one transaction (two commits per allowed
    call, the result's being the base guard's one statement)."""

    run: AsyncRun

    async def acheck(self, tool: str, args: object, call_id: str | None = None) -> Verdict:
        """Ask the gate and record the call (``allow``, in the gate's transaction) or an
        approval request (``ask``, after the gate's decision was committed)."""
        span = self.tracing.start(tool, self.run.id, call_id)
        catalog = tool
        try:
            catalog = self._begin(tool, span)
            async with self.alock():
                decision, step = await self.run.gate_and_call(catalog, args, LabelSet())
                request, state = (
                    await self._arequest(catalog, args, decision.reason)
                    if decision.decision == "ask"
                    else (None, None)
                )
            verdict = self._verdict(tool, catalog, decision, step, request, state)
        except Exception as err:
            verdict = self._failed(tool, catalog, err)
        return self._decided(verdict, span)
