"""What the gateway's HTTP server bounds before MCP runs: a request must arrive whole in time
(a half-sent request holds no connection), and beyond loopback every request needs a client's
bearer token."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    from .config import Client

# seconds a connection has to send a whole request (its headers and body), from when it opens
# or from the previous response
REQUEST_TIMEOUT = 10.0


class TimelyH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request is not whole within
    REQUEST_TIMEOUT: uvicorn itself bounds the time between requests (keep-alive), not the time
    a request takes to arrive, so a few hundred half-sent requests would take every slot."""

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(REQUEST_TIMEOUT, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        cycle = self.cycle
        if cycle is not None and not cycle.more_body and not cycle.response_complete:
            self._disarm()  # the request is whole: the application has it

    def on_response_complete(self) -> None:
        # armed first: a pipelined request that is already whole disarms it as it is handled
        if not self.transport.is_closing():
            self._arm()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Bearer:
    """ASGI: every HTTP request needs ``Authorization: Bearer <token>`` of a configured client
    (compared by SHA-256 in constant time); the client's name goes with the request."""

    def __init__(self, app: Any, clients: Mapping[str, Client]) -> None:
        self.app = app
        self.clients = dict(clients)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = None
        for key, value in scope.get("headers", []):
            if key == b"authorization" and value[:7].lower() == b"bearer ":
                digest = hashlib.sha256(value[7:].strip()).hexdigest()
                for known, who in self.clients.items():
                    if hmac.compare_digest(known, digest):
                        client = who
        if client is None:
            body = b'{"error": "invalid_token", "error_description": "a bearer token is needed"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="pg-labels-mcp"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        scope = {**scope, "state": {**scope.get("state", {}), "pg_labels_client": client}}
        await self.app(scope, receive, send)
