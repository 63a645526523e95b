"""A span per guarded tool call, when OpenTelemetry's API is installed (the ``otel`` extra).

The span is named as the GenAI semantic conventions name a tool's execution
(``execute_tool <name>``, ``gen_ai.operation.name`` = ``execute_tool``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``), with the barrier's attributes under ``pg_labels.``: the decision, the
rule, the SQLSTATE, the run and the step. A refused call sets the span's status to ``ERROR``.
Without OpenTelemetry every function here does nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Tracing"]

_TRACER_NAME = "pg_labels"


class Tracing:
    """Starts and ends the guard's spans on a tracer of ``tracer_provider`` (OpenTelemetry's
    global provider when ``None``); inert when OpenTelemetry is not installed."""

    def __init__(self, tracer_provider: Any = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            if tracer_provider is not None:
                raise ImportError(
                    "a tracer_provider was given, but opentelemetry-api is not installed "
                    "(pip install 'pg-labels[otel]')"
                ) from None
            self._tracer: Any = None
            return
        from . import __version__

        self._tracer = trace.get_tracer(_TRACER_NAME, __version__, tracer_provider=tracer_provider)

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    def start(self, tool: str, run_id: object, call_id: str | None) -> Any:
        """A started span for the call of ``tool`` (as the SDK names it), or ``None``."""
        if self._tracer is None:
            return None
        from opentelemetry.trace import SpanKind

        attributes: dict[str, str] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "pg_labels.run_id": str(run_id),
        }
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        return self._tracer.start_span(
            f"execute_tool {tool}", kind=SpanKind.INTERNAL, attributes=attributes
        )


def set_attributes(span: Any, attributes: dict[str, str | int | None]) -> None:
    if span is None:
        return
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(key, value)


def end(span: Any, error: str | None = None, error_type: str | None = None) -> None:
    """End the span; with ``error`` its status is ``ERROR`` with that description."""
    if span is None:
        return
    if error is not None:
        from opentelemetry.trace import Status, StatusCode

        if error_type:
            span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, error))
    span.end()
