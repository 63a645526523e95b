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

from pg_labels import AsyncRun, Guard


def encoded(args: object) -> str:
    """The arguments as the JSON text the gateway measures (max_argument_bytes)."""
    return json.dumps(args, ensure_ascii=False)


class GatewayGuard(Guard):
    """The session's guard: the base guard, whose allowed call is the gate and the
    ``tool_called`` step in one transaction (:meth:`AsyncRun.gate_and_call`) and whose result
    is one statement: two commits per allowed call."""

    run: AsyncRun
