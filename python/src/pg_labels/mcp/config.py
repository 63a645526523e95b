"""The gateway's settings: gateway.toml, flags and PG_LABELS_MCP_* variables."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pg_labels import EFFECTS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

log = logging.getLogger("pg_labels.mcp")


ENV_PREFIX = "PG_LABELS_MCP_"


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    """An upstream MCP server: a stdio ``command`` (with ``args``, ``env``, ``cwd``) or a
    Streamable HTTP ``url``."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    trust_annotations: bool = False


@dataclass(frozen=True)
class Client:
    """A client of a gateway that listens beyond loopback: its name, and the agent its runs
    are of (the gateway's ``agent`` by default)."""

    name: str
    agent: str | None = None


@dataclass
class Config:
    """The gateway's settings (a TOML file, flags, ``PG_LABELS_MCP_*`` variables)."""

    database: str = ""
    catalog_database: str | None = None
    name: str = ""
    agent: str = "mcp-gateway"
    scope: str = ""
    labels: list[str] = field(default_factory=list)
    upstreams: list[Upstream] = field(default_factory=list)
    effects: dict[str, str] = field(default_factory=dict)
    trusted: dict[str, bool] = field(default_factory=dict)
    listen: str | None = None
    call_timeout: float = 60.0
    db_timeout: float = 10.0
    allow_wider_grants: bool = False
    pool_size: int = 10
    max_sessions: int = 100
    session_idle_timeout: float = 1800.0
    max_argument_bytes: int = 1_000_000
    max_result_bytes: int = 4_000_000
    max_request_bytes: int = 4_000_000
    sessionless: str = "token"
    # seconds an asked call is held for a person's decision (0: refused at once, as before)
    approval_wait: float = 120.0
    # seconds between progress notifications to a client waiting for a decision
    approval_progress: float = 10.0
    max_approval_waits: int = 100
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    # the bearer tokens of clients (HTTP): SHA-256 (hex) of the token -> the client's name
    clients: dict[str, Client] = field(default_factory=dict)


# the settings that are counts, with their bounds
_COUNTS = {
    "pool_size": (1, 1000),
    "max_sessions": (1, 1_000_000),
    "max_argument_bytes": (1, 1 << 30),
    "max_result_bytes": (1, 1 << 30),
    "max_request_bytes": (1024, 1 << 30),
    "max_approval_waits": (1, 100_000),
}
# the longest an asked call may be held (a day), the shortest time between its progress
# notifications
MAX_APPROVAL_WAIT = 86_400.0
MIN_APPROVAL_PROGRESS = 0.1
SESSIONLESS = ("token", "refuse", "per_call")


def _str(table: Mapping[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} must be a string")
    return value


def _strings(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of strings")
    return list(value)


def _seconds(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{where} must be a number of seconds")
    seconds = float(value)
    if not seconds > 0:
        raise ValueError(f"{where} must be positive")
    if where == "approval_progress" and not seconds >= MIN_APPROVAL_PROGRESS:
        raise ValueError(f"approval_progress must be at least {MIN_APPROVAL_PROGRESS:g} seconds")
    return seconds


def _wait(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError("approval_wait must be a number of seconds")
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError("approval_wait must be a number of seconds") from None
    if not 0 <= seconds <= MAX_APPROVAL_WAIT:
        raise ValueError(f"approval_wait must be from 0 to {MAX_APPROVAL_WAIT:g} seconds")
    return seconds


def _count(value: object, where: str) -> int:
    low, high = _COUNTS[where]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where} must be a whole number from {low} to {high}")
    return value


def _sessionless(value: object) -> str:
    if value not in SESSIONLESS:
        raise ValueError(f"sessionless must be one of {', '.join(SESSIONLESS)}")
    return str(value)


def load_config(path: str | None, config: Config | None = None) -> Config:
    """Read a gateway.toml into ``config`` (a new :class:`Config` by default)::

    agent = "desktop-assistant"
    scope = "acme/platform"
    labels = ["origin:event/mcp-client"]  # what each session's run carries from the start
    call_timeout = 60                   # seconds an upstream has to answer a call
    db_timeout = 10                     # seconds the database has for each statement
    approval_wait = 120                 # seconds an asked call waits for a person (0: no wait)
    allow_wider_grants = false          # start although the role's grants reach beyond scope

    [upstreams.fs]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/files"]

    [upstreams.web]
    url = "http://127.0.0.1:3001/mcp"

    [tools."fs.read_text_file"]
    trusted = true                      # its output is trusted (default: untrusted)
    [tools."web.fetch"]
    effect = "read"                     # instead of what its annotations say
    """
    config = config or Config()
    if path is None:
        return config
    with open(path, "rb") as f:
        data = tomllib.load(f)
    for key in ("database", "catalog_database", "name", "agent", "scope", "listen"):
        value = _str(data, key, "gateway.toml")
        if value is not None:
            setattr(config, key, value)
    if "labels" in data:
        config.labels = _strings(data["labels"], "labels")
    for key in ("call_timeout", "db_timeout", "session_idle_timeout", "approval_progress"):
        if key in data:
            setattr(config, key, _seconds(data[key], key))
    if "approval_wait" in data:
        config.approval_wait = _wait(data["approval_wait"])
    for key in _COUNTS:
        if key in data:
            setattr(config, key, _count(data[key], key))
    if "sessionless" in data:
        config.sessionless = _sessionless(data["sessionless"])
    for key in ("allowed_hosts", "allowed_origins"):
        if key in data:
            setattr(config, key, _strings(data[key], key))
    clients = data.get("clients", {})
    if not isinstance(clients, dict):
        raise ValueError("[clients] must be a table of clients")
    for name, table in clients.items():
        where = f"clients.{name}"
        if not isinstance(table, dict):
            raise ValueError(f"[{where}] must be a table")
        digest = _str(table, "token_sha256", where)
        if digest is None or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueError(
                f"{where}.token_sha256 must be the SHA-256 of its token (64 hex digits)"
            )
        config.clients[digest] = Client(name, _str(table, "agent", where))
    if "allow_wider_grants" in data:
        if not isinstance(data["allow_wider_grants"], bool):
            raise ValueError("allow_wider_grants must be true or false")
        config.allow_wider_grants = data["allow_wider_grants"]
    upstreams = data.get("upstreams", {})
    if not isinstance(upstreams, dict):
        raise ValueError("[upstreams] must be a table of upstream servers")
    for name, table in upstreams.items():
        where = f"upstreams.{name}"
        if not isinstance(table, dict):
            raise ValueError(f"[{where}] must be a table")
        if not name or "." in name:
            raise ValueError(f"upstream name {name!r} must be non-empty and without a dot")
        command, url = _str(table, "command", where), _str(table, "url", where)
        if (command is None) == (url is None):
            raise ValueError(f"[{where}] needs either command or url")
        env = table.get("env")
        if env is not None and not (
            isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
        ):
            raise ValueError(f"{where}.env must be a table of strings")
        trust = table.get("trust_annotations", False)
        if not isinstance(trust, bool):
            raise ValueError(f"{where}.trust_annotations must be true or false")
        config.upstreams.append(
            Upstream(
                name,
                command=command,
                args=tuple(_strings(table.get("args"), f"{where}.args")),
                env=env,
                cwd=_str(table, "cwd", where),
                url=url,
                trust_annotations=trust,
            )
        )
    tools = data.get("tools", {})
    if not isinstance(tools, dict):
        raise ValueError("[tools] must be a table of per-tool overrides")
    for name, table in tools.items():
        if not isinstance(table, dict):
            raise ValueError(f'[tools."{name}"] must be a table')
        effect = _str(table, "effect", f'tools."{name}"')
        if effect is not None:
            if effect not in EFFECTS:
                raise ValueError(f'tools."{name}".effect must be one of {", ".join(EFFECTS)}')
            config.effects[name] = effect
        if "trusted" in table:
            if not isinstance(table["trusted"], bool):
                raise ValueError(f'tools."{name}".trusted must be true or false')
            config.trusted[name] = table["trusted"]
    return config


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pg-labels-mcp",
        description="An MCP gateway: the tools of upstream MCP servers, each call judged and "
        "recorded by pg_labels. Every flag may be given as PG_LABELS_MCP_<FLAG> (e.g. "
        "PG_LABELS_MCP_DATABASE); flags win over the variables, which win over the file.",
    )
    p.add_argument("--database", help="libpq URL of the platform role's connection")
    p.add_argument(
        "--catalog-database",
        help="libpq URL of a role that may write pg_labels.tools (default: --database)",
    )
    p.add_argument("--config", help="gateway.toml: upstreams, run, per-tool overrides")
    p.add_argument(
        "--name",
        help="the gateway's name: the owner of its upstreams' namespaces (default: --agent)",
    )
    p.add_argument("--agent", help="the runs' agent name")
    p.add_argument("--scope", help="the runs' scope")
    p.add_argument(
        "--label",
        action="append",
        dest="labels",
        help="a label every session's run carries from the start (repeat; the variable "
        "takes a comma-separated list)",
    )
    p.add_argument("--listen", help="host:port: serve Streamable HTTP at /mcp instead of stdio")
    p.add_argument("--call-timeout", type=float, help="seconds an upstream has for a call")
    p.add_argument("--db-timeout", type=float, help="seconds the database has for a statement")
    p.add_argument(
        "--session-idle-timeout",
        type=float,
        help="seconds an HTTP session (or a sessionless run token) is kept unused (1800)",
    )
    p.add_argument(
        "--approval-wait",
        help="seconds an asked call is held for a person's decision (120; 0: refused at once)",
    )
    p.add_argument(
        "--approval-progress",
        type=float,
        help="seconds between progress notifications while a call waits (10)",
    )
    p.add_argument("--max-approval-waits", help="calls held for a decision at once (100)")
    p.add_argument("--max-sessions", help="HTTP sessions kept at once (100)")
    p.add_argument("--pool-size", help="database connections the sessions share (10)")
    p.add_argument("--max-argument-bytes", help="a call's arguments, as JSON (1000000)")
    p.add_argument("--max-result-bytes", help="an upstream's result, as JSON (4000000)")
    p.add_argument(
        "--max-request-bytes", help="an HTTP request's body, a message over stdio (4000000)"
    )
    p.add_argument(
        "--sessionless",
        choices=SESSIONLESS,
        help="calls without an MCP session (protocol 2026-07-28): token (a run token in "
        "_meta, issued by the gateway; the default), refuse, or per_call (each its own run)",
    )
    p.add_argument(
        "--allow-wider-grants",
        action="store_true",
        help="start although the --database role's grants reach beyond --scope",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="connect to everything, sync and print the catalog it would enforce, and exit",
    )
    p.add_argument(
        "--accept",
        action="store_true",
        help="with --check: accept the changed definitions of the gateway's own tools",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO to stderr")
    return p


def _flag(value: str | None) -> bool:
    return (value or "") not in ("", "0", "false")


def _settings(argv: Sequence[str] | None) -> tuple[Config, bool, bool, bool]:
    ns = _parser().parse_args(argv)
    env = os.environ
    config_path = ns.config or env.get(ENV_PREFIX + "CONFIG")
    config = load_config(config_path)
    for key in ("database", "catalog_database", "name", "agent", "scope", "listen"):
        value = getattr(ns, key) or env.get(ENV_PREFIX + key.upper())
        if value:
            setattr(config, key, value)
    labels = ns.labels or [
        s.strip() for s in env.get(ENV_PREFIX + "LABELS", "").split(",") if s.strip()
    ]
    if labels:
        config.labels = labels
    for key in ("call_timeout", "db_timeout", "session_idle_timeout", "approval_progress"):
        value = getattr(ns, key) or env.get(ENV_PREFIX + key.upper())
        if value:
            setattr(config, key, _seconds(value, key))
    wait = ns.approval_wait
    if wait is None:
        wait = env.get(ENV_PREFIX + "APPROVAL_WAIT")
    if wait:
        config.approval_wait = _wait(wait)
    for key in _COUNTS:
        value = getattr(ns, key) or env.get(ENV_PREFIX + key.upper())
        if value:
            setattr(config, key, _count(value, key))
    sessionless = ns.sessionless or env.get(ENV_PREFIX + "SESSIONLESS")
    if sessionless:
        config.sessionless = _sessionless(sessionless)
    if ns.allow_wider_grants or _flag(env.get(ENV_PREFIX + "ALLOW_WIDER_GRANTS")):
        config.allow_wider_grants = True
    check = ns.check or _flag(env.get(ENV_PREFIX + "CHECK"))
    if ns.accept and not check:
        raise ValueError("--accept goes with --check")
    return config, check, ns.verbose, ns.accept
