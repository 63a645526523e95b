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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import psycopg

from pg_labels import AsyncRun

from .common import _leaf, _printable
from .config import Config
from .guard import GatewayGuard

log = logging.getLogger("pg_labels.mcp")

CHANNEL = "pg_labels_approvals"
# the listening connection's application_name (pg_stat_activity)
LISTENER = "pg-labels-mcp approvals"
# an idle listening connection is checked this often (a dropped one is then opened again)
HEARTBEAT = 15.0
# how long a refused (re)connection of the listener waits before the next: doubling, at most
RECONNECT_MAX = 5.0

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
