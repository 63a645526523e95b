"""Grant to resume in Python (issue 49), with the OpenAI Agents SDK and a scripted model: a
call that asks a person pauses the run (pg_labels.openai_agents, pause=True); the app waits
(resolve_approvals(state, guardrail, wait=...): Run.wait_for_decision, LISTEN
pg_labels_approvals); an approver grants on a connection of their own, from another thread;
the run resumes (Runner.run(agent, state)) and the tool's body starts. Measured: from just
before the approver's statement is sent (its COMMIT included: an upper bound of the time from
the COMMIT) to the first line of the tool's body, APPROVALS_N times (200) after
APPROVALS_WARMUP (10). Prints ``RESULT python n=N median_ms=X p95_ms=Y``.

    python bench/approvals_python.py DATABASE      (PGHOST/PGPORT/PGUSER: a superuser)

The database has pg_labels; this script makes its roles (labels_appr_bench_*) and drops them.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import sys
import threading
import time
from typing import Any

import psycopg
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import pg_labels
from pg_labels.openai_agents import barrier_guardrail, resolve_approvals

os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-no-network")
set_tracing_disabled(True)

WRITER = "labels_appr_bench_platform"
APPROVER = "labels_appr_bench_alice"
N = int(os.environ.get("APPROVALS_N", "200"))
WARMUP = int(os.environ.get("APPROVALS_WARMUP", "10"))


class Scripted(Model):
    """Asks for one ticket update, then says it is done."""

    def __init__(self) -> None:
        self.ticket = 0
        self.turn = 0

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.turn += 1
        if self.turn % 2:
            out: list[Any] = [
                ResponseFunctionToolCall(
                    id=f"fc_{self.turn}",
                    call_id=f"c{self.turn}",
                    type="function_call",
                    name="tickets_update",
                    arguments=json.dumps({"ticket": self.ticket, "status": "closed"}),
                )
            ]
        else:
            out = [
                ResponseOutputMessage(
                    id="m",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(
                            type="output_text", text="done", annotations=[], logprobs=[]
                        )
                    ],
                )
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def admin(db: str) -> psycopg.Connection:
    return psycopg.connect(dbname=db, autocommit=True)


def roles(db: str, drop: bool = False) -> None:
    q, ident = psycopg.sql.SQL, psycopg.sql.Identifier
    with admin(db) as conn:
        for role in (WRITER, APPROVER):
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
                conn.execute(q("DROP OWNED BY {}").format(ident(role)))
                conn.execute(q("DROP ROLE {}").format(ident(role)))
            conn.execute("DELETE FROM pg_labels.grants WHERE role = %s", [role])
        if drop:
            return
        conn.execute(
            "INSERT INTO pg_labels.tools (name, effect, trusted_output) "
            "VALUES ('tickets.update', 'reversible_write', false) ON CONFLICT DO NOTHING"
        )
        for role in (WRITER, APPROVER):
            conn.execute(q("CREATE ROLE {} LOGIN").format(ident(role)))
            conn.execute(q("GRANT USAGE ON SCHEMA pg_labels TO {}").format(ident(role)))
            conn.execute(
                "INSERT INTO pg_labels.grants (role, scope) VALUES (%s, 'acme')", [role]
            )
        conn.execute(
            q(
                "GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, "
                "pg_labels.shares, pg_labels.agent_versions TO {}"
            ).format(ident(WRITER))
        )
        conn.execute(
            q(
                "GRANT SELECT ON pg_labels.tools, pg_labels.listeners, pg_labels.approval_points, "
                "pg_labels.approval_requests TO {}"
            ).format(ident(WRITER))
        )
        conn.execute(
            q(
                "GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO {}"
            ).format(ident(APPROVER))
        )


async def measure(db: str) -> list[float]:
    started: list[float] = []

    @function_tool
    def tickets_update(ticket: int, status: str) -> str:
        """Update a ticket."""
        started.append(time.monotonic())
        return f"ticket {ticket} is {status}"

    writer = psycopg.connect(dbname=db, user=WRITER, autocommit=True)
    approver = psycopg.connect(dbname=db, user=APPROVER, autocommit=True)
    run = pg_labels.Platform(writer).open_run("bench", "acme/platform")
    run.input("{origin:slack}")
    guardrail = barrier_guardrail(run, names=lambda n: n.replace("_", ".", 1), pause=True)
    model = Scripted()
    agent = Agent(name="bench", model=model, tools=guardrail.guard(tickets_update))
    latencies: list[float] = []
    try:
        for i in range(WARMUP + N):
            model.ticket = i
            result = await Runner.run(agent, "close it", max_turns=4)
            (item,) = result.interruptions
            request = guardrail._asked[item.raw_item.call_id]  # type: ignore[union-attr]
            state = result.to_state()
            sent: list[float] = []

            def grant(request: int = request, sent: list[float] = sent) -> None:
                time.sleep(0.03)  # the app is waiting by then
                sent.append(time.monotonic())
                approver.execute("SELECT pg_labels.decide_approval(%s, true)", [request])

            approving = threading.Thread(target=grant)
            approving.start()
            (resolved,) = await resolve_approvals(state, guardrail, wait=30)
            assert resolved.action == "approved", resolved
            before = len(started)
            await Runner.run(agent, state, max_turns=4)
            approving.join()
            assert len(started) == before + 1
            if i >= WARMUP:
                latencies.append((started[-1] - sent[0]) * 1000)
    finally:
        writer.close()
        approver.close()
    return latencies


def main() -> None:
    db = sys.argv[1]
    roles(db)
    try:
        latencies = sorted(asyncio.run(measure(db)))
    finally:
        roles(db, drop=True)
    p95 = latencies[math.ceil(0.95 * len(latencies)) - 1]
    print(
        f"RESULT python n={len(latencies)} median_ms={statistics.median(latencies):.1f} "
        f"p95_ms={p95:.1f}"
    )


if __name__ == "__main__":
    main()
