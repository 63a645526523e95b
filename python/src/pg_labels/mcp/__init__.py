"""``pg-labels-mcp``: an MCP gateway that puts pg_labels between an MCP client and upstream MCP
servers (``pip install 'pg-labels[mcp]'``; docs/mcp.md in the repository).

The gateway connects to its upstreams (stdio commands, Streamable HTTP URLs), lists their tools
and writes them to ``pg_labels.tools`` under names prefixed by the upstream (``fs.write_file``)
with the effects their annotations give (:func:`pg_labels.tools_from_mcp`; the configuration's
overrides win). It serves the same tools downstream, over stdio or Streamable HTTP. Each
downstream connection (an MCP session) opens a run; each ``tools/call`` goes through the
guard of the SDK integrations (:class:`pg_labels.Guard`): the gate, then a
``tool_called`` step with the real arguments before the upstream is called, and a
``tool_result`` step with the labels the database gives the output after. A refusal, an
approval that waits, an unreachable database, a timeout, an unknown tool or an upstream that
does not answer comes back to the client as a tool error (``isError: true``) and the upstream
is not called.
"""

from __future__ import annotations

from collections.abc import Sequence

from .common import GatewayError
from .config import Client, Config, Upstream, load_config
from .gateway import Gateway


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pg-labels-mcp`` command (``python -m pg_labels.mcp``)."""
    from .__main__ import main as command

    return command(argv)


__all__ = ["Client", "Config", "Gateway", "GatewayError", "Upstream", "load_config", "main"]
