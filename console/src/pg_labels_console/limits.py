"""What the console bounds before any page runs: request bodies (size and type, before they are
parsed), the security headers of every response (errors included), sign-in attempts per client
address and per role, and the anonymous visitor's sign-in form, which needs no server-side
state (its CSRF token is an HMAC of a nonce in a cookie)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_RAW_HEADERS = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

# a form of the console is a few fields: 64 KiB is far more than any (a decision's reason)
MAX_BODY = 64 * 1024
FORM = b"application/x-www-form-urlencoded"


async def _answer(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *_RAW_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guarded:
    """ASGI, outermost: every response gets the security headers it lacks (Starlette's own 404,
    405 and 500 pages too); a request with a body must be a urlencoded form of at most
    `max_body` bytes: 415 otherwise, 413 before the body is read when its length says so, and
    413 as soon as a streamed body passes it."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        if b"\0" in query or b"%00" in query:
            # no value of the console holds NUL (PostgreSQL's text cannot)
            await _answer(send, 400, "A NUL character is not a value of any field.")
            return
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length")
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        has_body = chunked or (length is not None and length.strip() not in (b"", b"0"))
        if scope["method"] in ("POST", "PUT", "PATCH", "DELETE") or has_body:
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if has_body and kind != FORM:
                await _answer(
                    send, 415, "Only forms (application/x-www-form-urlencoded) are accepted."
                )
                return
            if length is not None:
                try:
                    too_big = int(length) > self.max_body
                except ValueError:
                    await _answer(send, 400, "Bad Content-Length.")
                    return
                if too_big:
                    await _answer(send, 413, "The request is too large.")
                    return
        started = False
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge()
            return message

        async def headed(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in _RAW_HEADERS if k not in present
                ]
            await send(message)

        try:
            await self.app(scope, limited, headed)
        except _TooLarge:
            if not started:
                await _answer(send, 413, "The request is too large.")


class _TooLarge(Exception):
    pass


def form_fields(body: bytes) -> dict[str, str] | None:
    """A urlencoded body's fields (the first of each name); None when it is not UTF-8."""
    try:
        text = body.decode("utf-8")
        pairs = parse_qsl(
            text, keep_blank_values=True, strict_parsing=False, max_num_fields=50, errors="strict"
        )
    except (UnicodeDecodeError, ValueError):
        return None
    out: dict[str, str] = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def same(a: str, b: str) -> bool:
    """Two tokens are equal (constant time; any text compares, non-ASCII too)."""
    return secrets.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


class Signer:
    """HMACs with a key drawn when the console starts: the sign-in form's token and the cookie
    that marks a browser where a role signed in before."""

    def __init__(self) -> None:
        self.key = secrets.token_bytes(32)

    def sign(self, purpose: str, value: str) -> str:
        return hmac.new(self.key, f"{purpose}\0{value}".encode(), hashlib.sha256).hexdigest()

    def valid(self, purpose: str, value: str | None, mac: str | None) -> bool:
        if not value or not mac or len(value) > 200:
            return False
        return same(self.sign(purpose, value), mac)


class Bucket:
    """Failures allowed: `burst` at once, one more every `refill` seconds."""

    __slots__ = ("at", "tokens")

    def __init__(self, burst: float) -> None:
        self.tokens = burst
        self.at = time.monotonic()


class Throttle:
    """Failed sign-ins, counted per client address and per role (at most `kept` of each; the
    least recently seen forgotten first, but never one that is still waiting while another is
    not). An address that failed `per_address` times waits; a role that failed `per_role` times
    (from anywhere) waits too. A browser where the role signed in before (its cookie names the
    browser and the role) is counted on its own instead, as an address is: an attacker guessing
    a person's password, even from behind the same proxy, does not lock that person out, and a
    copied cookie gives no more guesses than an address. Asking whether to wait records
    nothing."""

    def __init__(
        self,
        per_address: int = 10,
        address_refill: float = 30.0,
        per_role: int = 20,
        role_refill: float = 10.0,
        kept: int = 10_000,
    ) -> None:
        self.limits = {
            "address": (per_address, address_refill),
            "role": (per_role, role_refill),
            "browser": (per_address, address_refill),
        }
        self.buckets: dict[str, OrderedDict[str, Bucket]] = {k: OrderedDict() for k in self.limits}
        self.kept = kept
        self.lock = threading.Lock()

    def _refilled(self, kind: str, b: Bucket) -> Bucket:
        burst, refill = self.limits[kind]
        now = time.monotonic()
        b.tokens = min(burst, b.tokens + (now - b.at) / refill)
        b.at = now
        return b

    def _bucket(self, kind: str, key: str) -> Bucket:
        table = self.buckets[kind]
        b = table.get(key)
        if b is not None:
            table.move_to_end(key)
            return self._refilled(kind, b)
        b = table[key] = Bucket(self.limits[kind][0])
        while len(table) > self.kept:
            # forget the least recently seen that does not wait (else the oldest)
            idle = next((k for k, v in table.items() if self._refilled(kind, v).tokens >= 1), None)
            table.pop(idle if idle is not None else next(iter(table)))
        return b

    @staticmethod
    def _keys(address: str, role: str, browser: str | None) -> tuple[tuple[str, str], ...]:
        return (("browser", browser),) if browser else (("address", address), ("role", role))

    def wait(self, address: str, role: str, browser: str | None) -> float:
        """Seconds until a sign-in may be tried from this address (or known browser) as this
        role (0: now)."""
        with self.lock:
            waits = []
            for kind, key in self._keys(address, role, browser):
                b = self.buckets[kind].get(key)
                if b is not None and self._refilled(kind, b).tokens < 1:
                    waits.append((1 - b.tokens) * self.limits[kind][1])
            return max(waits, default=0.0)

    def failed(self, address: str, role: str, browser: str | None) -> None:
        with self.lock:
            for kind, key in self._keys(address, role, browser):
                self._bucket(kind, key).tokens -= 1


class ServerTiming:
    """Adds `Server-Timing: app;dur=MS`: the time from the request to the response's headers
    (the page built and rendered), for bench/console.sh."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - start) * 1000
                message["headers"] = [
                    *message.get("headers", []),
                    (b"server-timing", f"app;dur={ms:.2f}".encode()),
                ]
            await send(message)

        await self.app(scope, receive, timed)
