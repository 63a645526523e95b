"""What the gateway's HTTP server bounds before MCP runs: a request must arrive whole in time
(a half-sent request holds no connection), and beyond loopback every request needs a client's
bearer token."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pg_labels.timely import REQUEST_TIMEOUT, TimelyH11

if TYPE_CHECKING:
    from .config import Client

# (a request must arrive whole within REQUEST_TIMEOUT: TimelyH11, in pg_labels.timely, shared
# with the console)
__all__ = ["REQUEST_TIMEOUT", "Bearer", "TimelyH11", "is_loopback"]


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
