"""The MCP gateway's former module: it is the package :mod:`pg_labels.mcp` now."""

from __future__ import annotations

from .mcp import Client, Config, Gateway, GatewayError, Upstream, load_config, main

__all__ = ["Client", "Config", "Gateway", "GatewayError", "Upstream", "load_config", "main"]
