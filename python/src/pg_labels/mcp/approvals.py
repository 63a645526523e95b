"""Calls that wait for a person: the gateway holds a call the gate answers ``ask`` until the
approval request is decided, expires, or the client stops waiting (docs/mcp.md, Approvals).

One ``LISTEN pg_labels_approvals`` connection per gateway process (not one per waiting call)
hears every request's decision as its id; it wakes the calls waiting on that id, which re-read
the request in ``pg_labels.approval_requests`` as the sessions' role (the payload is never
trusted: it is only a reason to read). The calls waiting at once are bounded
(``max_approval_waits``). When the listening connection drops, it is opened again and every
waiting call re-reads its request (what was decided meanwhile is not missed)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import psycopg
from mcp.server.context import ServerRequestContext

from pg_labels import AsyncPlatform, AsyncRun, Refusal, Verdict

from .common import _error, _internal, _leaf, _printable, _Route
from .config import Config
from .guard import GatewayGuard
from .sessions import _Pool, _Session

log = logging.getLogger("pg_labels.mcp")

CHANNEL = "pg_labels_approvals"
# the listening connection's application_name (pg_stat_activity)
LISTENER = "pg-labels-mcp approvals"
# an idle listening connection is checked this often (a dropped one is then opened again)
HEARTBEAT = 15.0
# how long a refused (re)connection of the listener waits before the next: doubling, at most
RECONNECT_MAX = 5.0
# how often a held call reads its request at most, when notifications of its id keep coming
READ_BURST = 5.0
READ_RATE = 10.0


def _withdrawn(withdrawn: bool | None) -> str:
    """What became of a request the gateway withdrew (``_withdraw``'s answer), said as it is."""
    if withdrawn:
        return "was withdrawn"
    if withdrawn is False:
        return "was decided meanwhile, but its decision could not be read"
    return "could not be withdrawn (it expires undecided when the gateway's wait ends)"


_READ = (
    "SELECT status, decision_reason, expires_at, "
    "extract(epoch FROM expires_at - clock_timestamp())::float8 "
    "FROM pg_labels.approval_requests WHERE id = %s"
)
_WITHDRAW = "SELECT pg_labels.withdraw_approval(%s, %s)"


class Busy(Exception):
    """The gateway holds ``max_approval_waits`` calls already."""


@dataclass(frozen=True)
class Request:
    """One approval request as the sessions' role reads it."""

    status: str
    reason: str | None
    expires_at: datetime.datetime | None
    # seconds until it expires, by the database's clock (None: never)
    remaining: float | None


class HoldingGuard(GatewayGuard):
    """The session's guard when the gateway holds asked calls: each ``ask`` records a request
    of its own (two identical calls held at once wait for one each; a grant lets one through)
    that expires when the gateway stops waiting for it (``ttl`` = approval_wait)."""

    def __init__(self, run: AsyncRun, wait: float) -> None:
        super().__init__(run, approval_ttl=datetime.timedelta(seconds=wait))

    async def _arequest(
        self, catalog: str, args: object, reason: str | None
    ) -> tuple[int, str | None]:
        run = self.run
        if not isinstance(run, AsyncRun):  # pragma: no cover - the gateway's runs are async
            return await super()._arequest(catalog, args, reason)
        request = await run.request_approval(catalog, args, reason=reason, ttl=self.approval_ttl)
        return request, None


class ApprovalWaits:
    """The calls waiting for a decision, and the one connection that listens for them."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._waiting: dict[int, set[asyncio.Event]] = {}
        self._count = 0
        self._listening = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # how many times the listening connection was opened (tests read it)
        self.connections = 0

    @property
    def waiting(self) -> int:
        return self._count

    @contextlib.contextmanager
    def slot(self, request: int) -> Iterator[asyncio.Event]:
        """A place among the waiting calls: the event set whenever ``request`` may have been
        decided. :class:`Busy` when ``max_approval_waits`` calls wait already."""
        if self._count >= self.config.max_approval_waits:
            raise Busy
        self._count += 1
        event = asyncio.Event()
        self._waiting.setdefault(request, set()).add(event)
        try:
            yield event
        finally:
            self._count -= 1
            events = self._waiting.get(request)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiting[request]

    async def listening(self) -> bool:
        """Whether the listening connection listens (started with the first waiting call),
        within the database timeout."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen())
        with anyio.move_on_after(self.config.db_timeout):
            await self._listening.wait()
            return True
        return False

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def _wake(self, request: int | None) -> None:
        if request is None:
            for events in self._waiting.values():
                for event in events:
                    event.set()
            return
        for event in self._waiting.get(request, ()):
            event.set()

    def _heard(self, payload: str) -> None:
        # the payload is a request's id in decimal, nothing else: anything else wakes nobody
        if payload.isascii() and payload.isdigit() and len(payload) <= 19 and payload[0] != "0":
            self._wake(int(payload))

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            conn: psycopg.AsyncConnection[Any] | None = None
            try:
                with anyio.fail_after(self.config.db_timeout):
                    conn = await psycopg.AsyncConnection.connect(
                        self.config.database,
                        autocommit=True,
                        connect_timeout=max(1, int(self.config.db_timeout)),
                        application_name=LISTENER,
                    )
                    await conn.execute(f"LISTEN {CHANNEL}")
                self.connections += 1
                self._listening.set()
                delay = 0.1
                # what was decided while nobody listened: every waiting call reads again
                self._wake(None)
                while True:
                    async for note in conn.notifies(timeout=HEARTBEAT):
                        self._heard(note.payload)
                    with anyio.fail_after(self.config.db_timeout):
                        await conn.execute("SELECT 1")
            except Exception as err:
                log.warning(
                    "approvals: the listening connection: %s; opening it again",
                    _printable(_leaf(err)),
                )
            finally:
                self._listening.clear()
                if conn is not None:
                    with contextlib.suppress(Exception), anyio.move_on_after(1):
                        await conn.close()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX)


class HeldCalls:
    """The calls the gateway holds for a person's decision (a part of
    :class:`~pg_labels.mcp.gateway.Gateway`)."""

    config: Config
    _waits: ApprovalWaits
    _pool: _Pool

    async def _guard(self, session: _Session, platform: AsyncPlatform) -> GatewayGuard:
        raise NotImplementedError  # the gateway's

    async def _forward(
        self, session: _Session, verdict: Verdict, route: _Route, args: dict[str, Any]
    ) -> types.CallToolResult:
        raise NotImplementedError  # the gateway's

    async def _hold(
        self,
        ctx: ServerRequestContext[Any],
        session: _Session,
        verdict: Verdict,
        route: _Route,
        args: dict[str, Any],
    ) -> types.CallToolResult:
        """An asked call, held until a person decides its request (granted: forwarded, once),
        the request expires, or the client cancels the call (the request is withdrawn)."""
        name, request = verdict.tool, verdict.request_id
        assert request is not None
        asked = f"{name} needs a person's approval ({verdict.rule}: {verdict.reason})"
        try:
            with self._waits.slot(request) as event:
                state = await self._decision(ctx, request, event)
        except Busy:
            withdrawn = await self._withdraw(
                request, "the gateway holds max_approval_waits calls already"
            )
            return _error(
                f"pg_labels: {asked}, and the gateway holds "
                f"{self.config.max_approval_waits} calls waiting for a decision already "
                f"(max_approval_waits): approval request {request} {_withdrawn(withdrawn)} "
                "and nothing was called. Try again later"
            )
        except anyio.get_cancelled_exc_class():
            # the client stopped waiting: nobody is asked to decide a call nobody waits for
            with anyio.CancelScope(shield=True):
                await self._withdraw(request, "the client cancelled the call")
            raise
        if isinstance(state, str):
            withdrawn = await self._withdraw(request, "the gateway could not wait for the decision")
            if withdrawn is False:
                # decided first: the decision is the answer, if it can be read now
                again = await self._read(request)
                if not isinstance(again, str) and again.status != "pending":
                    state = again
        if isinstance(state, str):
            return _error(
                f"pg_labels: {asked}; {state}, so approval request {request} "
                f"{_withdrawn(withdrawn)} and the call was not forwarded"
            )
        if state.status == "granted":
            return await self._granted(session, verdict, route, args)
        if state.status == "denied":
            return _error(
                f"pg_labels: {asked}, and a person denied approval request {request}: "
                f"{_printable(state.reason or 'no reason given')}. Nothing was called."
            )
        if state.status == "expired":
            return _error(
                f"pg_labels: {asked}; approval request {request} expired at "
                f"{state.expires_at} without a decision. Nothing was called."
            )
        if state.status == "timeout":
            return _error(
                f"pg_labels: {asked}; nobody decided approval request {request} within "
                f"{self.config.approval_wait:g}s (the gateway's approval_wait): it was "
                "withdrawn and nothing was called."
            )
        return _error(
            f"pg_labels: {asked}; approval request {request} was {_printable(state.status)}"
            f" ({_printable(state.reason or 'no reason given')}). Nothing was called."
        )

    async def _decision(
        self, ctx: ServerRequestContext[Any], request: int, event: asyncio.Event
    ) -> Request | str:
        """Wait for the request's decision: read it again whenever the listener hears of it
        (and once listening), tell the client how long it has waited, and stop when the
        request expires (it expires when the gateway stops waiting: its ttl is the wait)."""
        wait = self.config.approval_wait
        start = time.monotonic()
        # past this the gateway waits no more, whatever the database's clock says
        hard = start + wait + self.config.db_timeout
        if not await self._waits.listening():
            return "the gateway could not listen for the decision"
        progress = start
        # anyone may NOTIFY the channel: a flood of a waiting request's id reads it at most
        # READ_RATE times a second (after a burst of READ_BURST), not once per notification
        tokens, refilled = READ_BURST, start
        failures = 0
        while True:
            now = time.monotonic()
            tokens = min(READ_BURST, tokens + (now - refilled) * READ_RATE)
            refilled = now
            if tokens < 1:
                await anyio.sleep((1 - tokens) / READ_RATE)
                continue
            tokens -= 1
            event.clear()
            state = await self._read(request)
            if isinstance(state, str):
                # a read that failed (its connection dropped: a restart, a failover, a
                # terminated backend) is tried again on another, until the wait ends
                failures += 1
                if time.monotonic() >= hard:
                    return state
                await anyio.sleep(min(0.1 * 2 ** (failures - 1), 2.0))
                continue
            failures = 0
            if state.status != "pending":
                return state
            now = time.monotonic()
            if now >= hard:
                withdrawn = await self._withdraw(request, "nobody waits for it any more")
                if withdrawn is None:
                    return "its request could not be withdrawn"
                if withdrawn:
                    return Request("timeout", None, state.expires_at, 0.0)
                continue  # decided first: read the decision
            if now >= progress:
                await self._progress(ctx, now - start, wait, request)
                progress = now + self.config.approval_progress
            until = min(hard, progress)
            if state.remaining is not None:
                until = min(until, now + max(state.remaining, 0.0) + 0.05)
            with anyio.move_on_after(max(until - time.monotonic(), 0.0)):
                await event.wait()

    async def _read(self, request: int) -> Request | str:
        """The request as the sessions' role reads it now, or why it could not be read."""
        try:
            async with self._pool.platform() as platform:
                with anyio.fail_after(self.config.db_timeout):
                    state = await read_request(platform.conn, request)
        except Exception as err:
            log.warning("approval request %s: %s", request, _printable(_leaf(err)))
            return f"its decision could not be read ({_internal(err)})"
        return state if state is not None else "its decision could not be read"

    async def _withdraw(self, request: int, reason: str) -> bool | None:
        """Withdraw the request: True, or False when it was decided first, or None when it
        could not be (logged; it expires when the gateway's wait would have ended)."""
        try:
            async with self._pool.platform() as platform:
                with anyio.fail_after(self.config.db_timeout):
                    return await withdraw(platform.conn, request, reason)
        except Exception as err:
            log.warning(
                "approval request %s could not be withdrawn: %s", request, _printable(_leaf(err))
            )
            return None

    async def _progress(
        self, ctx: ServerRequestContext[Any], elapsed: float, wait: float, request: int
    ) -> None:
        """A progress notification, when the client gave a progressToken (else nothing)."""
        message = f"waiting for a person's decision on approval request {request}"
        with contextlib.suppress(Exception), anyio.move_on_after(self.config.db_timeout):
            await ctx.session.report_progress(round(elapsed, 3), wait, message)

    async def _granted(
        self, session: _Session, verdict: Verdict, route: _Route, args: dict[str, Any]
    ) -> types.CallToolResult:
        """A granted call: its ``tool_called`` step uses the grant (the database lets exactly
        one identical call through), then the upstream is called."""
        name = verdict.tool
        timeout = self.config.db_timeout
        try:
            async with session.lock, self._pool.platform() as platform:
                with anyio.fail_after(timeout * 2):
                    guard = await self._guard(session, platform)
                    run = guard.run
                    assert isinstance(run, AsyncRun)
                    async with guard.alock():
                        step = await run.call(guard.catalog_name(name), args)
        except Refusal as refusal:
            return _error(f"pg_labels refused {name}: {refusal}")
        except Exception as err:
            log.warning("%s: the database: %s", name, _printable(_leaf(err)))
            return _error(
                f"pg_labels refused {name}: its approval was granted, but the database could "
                f"not record the call ({_internal(err)}), so it was not forwarded"
            )
        allowed = Verdict(
            name, "allow", verdict.rule, None, verdict.reason, step.id, step.request_id
        )
        return await self._forward(session, allowed, route, args)


async def read_request(conn: psycopg.AsyncConnection[Any], request: int) -> Request | None:
    """The request as the connection's role reads it; None when it may not."""
    cur = await conn.execute(_READ, [request])
    row = await cur.fetchone()
    if row is None:
        return None
    return Request(str(row[0]), row[1], row[2], None if row[3] is None else float(row[3]))


async def withdraw(conn: psycopg.AsyncConnection[Any], request: int, reason: str) -> bool:
    """Withdraw the request; False when it was decided first (23505)."""
    try:
        await conn.execute(_WITHDRAW, [request, reason])
    except psycopg.errors.UniqueViolation:
        return False
    return True
