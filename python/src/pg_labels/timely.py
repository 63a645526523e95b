"""A request must arrive whole in time: uvicorn's h11 protocol with a deadline, for the servers
of pg_labels (the MCP gateway, ``pg_labels.mcp``, and the web console, ``pg-labels-console``),
passed to uvicorn as ``http=TimelyH11``. Needs uvicorn (the ``mcp`` extra, or the console)."""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

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


__all__ = ["REQUEST_TIMEOUT", "TimelyH11"]
