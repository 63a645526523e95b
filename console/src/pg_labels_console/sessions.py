"""Server-side sessions: the cookie holds only a random id; the role's connection lives here.

The password is used once, to open the connection at sign-in, and is not kept: a session whose
connection breaks ends, and its person signs in again.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

import psycopg


@dataclass
class Session:
    id: str
    csrf: str
    last_seen: float
    role: str | None = None
    conn: psycopg.Connection[tuple[object, ...]] | None = None
    scope: str | None = None
    flash: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


class Full(Exception):
    """The console holds as many sessions (connections) as it may."""


class SessionStore:
    """Signed-in sessions in memory, keyed by a random id; idle ones expire. Each holds its
    role's connection: at most `max_connections` in all and `per_role` for one role (a role's
    least recently used session ends when it signs in once more). Anonymous visitors have
    none."""

    def __init__(self, idle_timeout: float, max_connections: int = 50, per_role: int = 5) -> None:
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.per_role = per_role
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._last_sweep = time.monotonic()
        self._expired: dict[
            str, None
        ] = {}  # ids that expired lately, oldest first: "your session expired"

    def room_for(self, role: str) -> None:
        """Make room for one more session of `role` (ending its least recently used one when
        it has `per_role`); Full when the console holds `max_connections`."""
        ended: list[Session] = []
        with self._lock:
            self._sweep(force=True)
            mine = sorted(
                (x for x in self._sessions.values() if x.role == role), key=lambda x: x.last_seen
            )
            while len(mine) >= self.per_role:
                oldest = mine.pop(0)
                del self._sessions[oldest.id]
                ended.append(oldest)
            full = len(self._sessions) >= self.max_connections
        for x in ended:
            x.close()
        if full:
            raise Full()

    def add(self, role: str, conn: psycopg.Connection[tuple[object, ...]]) -> Session:
        """A new signed-in session holding `conn` (Full, and `conn` closed, when there is no
        room: another sign-in took the last place meanwhile)."""
        s = Session(
            id=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            last_seen=time.monotonic(),
            role=role,
            conn=conn,
        )
        with self._lock:
            full = len(self._sessions) >= self.max_connections
            if not full:
                self._sessions[s.id] = s
        if full:
            s.close()
            raise Full()
        return s

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def get(self, sid: str | None) -> tuple[Session | None, bool]:
        """The live session of this id (touched), and whether an expired one was dropped."""
        if not sid:
            return None, False
        now = time.monotonic()
        with self._lock:
            self._sweep()
            s = self._sessions.get(sid)
            if s is None:
                return None, self._expired.pop(sid, 0) is None
            if now - s.last_seen > self.idle_timeout:
                del self._sessions[sid]
                expired = True
            else:
                s.last_seen = now
                return s, False
        s.close()
        return None, expired

    def drop(self, s: Session) -> None:
        with self._lock:
            self._sessions.pop(s.id, None)
        s.close()

    def sweep(self) -> None:
        """End every idle session now, closing its connection (the app calls it every 30 s)."""
        with self._lock:
            self._sweep(force=True)

    def _sweep(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_sweep < 30:
            return
        self._last_sweep = now
        dead = [s for s in self._sessions.values() if now - s.last_seen > self.idle_timeout]
        for s in dead:
            del self._sessions[s.id]
            if s.role is not None:
                self._expired[s.id] = None
            s.close()
        while len(self._expired) > 10_000:
            del self._expired[next(iter(self._expired))]

    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for s in sessions:
            s.close()
