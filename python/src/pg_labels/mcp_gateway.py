"""``pg-labels-mcp``: an MCP gateway that puts pg_labels between an MCP client and upstream MCP
servers (``pip install 'pg-labels[mcp]'``; docs/mcp.md in the repository).

The gateway connects to its upstreams (stdio commands, Streamable HTTP URLs), lists their tools
and writes them to ``pg_labels.tools`` under names prefixed by the upstream (``fs.write_file``)
with the effects their annotations give (:func:`pg_labels.tools_from_mcp`; the configuration's
overrides win). It serves the same tools downstream, over stdio or Streamable HTTP. Each
downstream connection (an MCP session) opens a run; each ``tools/call`` goes through the
guard of the SDK integrations (:class:`pg_labels._guard.Guard`): the gate, then a
``tool_called`` step with the real arguments before the upstream is called, and a
``tool_result`` step with the labels the database gives the output after. A refusal, an
approval that waits, an unreachable database, a timeout, an unknown tool or an upstream that
does not answer comes back to the client as a tool error (``isError: true``) and the upstream
is not called.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import sys
import time
import unicodedata
import uuid
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import psycopg
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from psycopg.types.json import Jsonb

from ._errors import Refusal
from ._guard import Guard, Verdict, _alock, _why
from ._platform import EFFECTS, AsyncPlatform, AsyncRun, _effect_of
from ._values import LabelSet, Scope

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Config", "Gateway", "GatewayError", "Upstream", "load_config", "main"]

log = logging.getLogger("pg_labels.mcp")

ENV_PREFIX = "PG_LABELS_MCP_"
# where a sessionless call carries the run token the gateway issued
RUN_META_KEY = "pg-labels/run"


class GatewayError(Exception):
    """The gateway could not start: an upstream, or the catalog."""


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
}
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
    for key in ("call_timeout", "db_timeout", "session_idle_timeout"):
        if key in data:
            setattr(config, key, _seconds(data[key], key))
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
# The gateway
# ---------------------------------------------------------------------------------------------

# Where the gateway's database role acts: whether it acts everywhere (it owns the platform's
# tables, or is a superuser: a member of every role) and the scopes its grants give it.
# Also what lets a role read or write past its grants: BYPASSRLS (it reads every company's
# rows), CREATEROLE (it may grant itself other roles), SET on session_replication_role (its
# writes skip the triggers; PostgreSQL 15 and later).
_REACH = """
SELECT current_user::text,
       pg_has_role(current_user, c.relowner, 'MEMBER'),
       array(SELECT s::text FROM pg_labels.granted_scopes() s ORDER BY 1),
       r.rolbypassrls,
       r.rolcreaterole
  FROM pg_catalog.pg_class c, pg_catalog.pg_roles r
 WHERE c.oid = 'pg_labels.runs'::regclass AND r.rolname = current_user
"""
_REPLICA = "SELECT has_parameter_privilege('session_replication_role', 'SET')"


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _unwrap(err: BaseException) -> BaseException:
    """The first error inside exception groups (a task group's)."""
    inner = getattr(err, "exceptions", None)
    while isinstance(inner, (list, tuple)) and inner and isinstance(inner[0], BaseException):
        err = inner[0]
        inner = getattr(err, "exceptions", None)
    return err


def _leaf(err: BaseException) -> str:
    """The first error inside exception groups, as ``_why`` says it."""
    err = _unwrap(err)
    if isinstance(err, TimeoutError):
        return "it did not answer in time"
    return _why(err)


def _internal(err: BaseException) -> str:
    """What an MCP client is told of a database error: its SQLSTATE, nothing of the server
    (its address, socket, FATAL messages are logged, not sent)."""
    err = _unwrap(err)
    if isinstance(err, TimeoutError):
        return "it did not answer in time"
    state = getattr(err, "sqlstate", None)
    if isinstance(state, str):
        return f"SQLSTATE {state}"
    if isinstance(err, psycopg.OperationalError):
        return "the connection failed"
    return type(err).__name__


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@dataclass
class _Route:
    upstream: str
    tool: types.Tool
    definition: dict[str, Any]
    digest: str


@dataclass(frozen=True)
class CatalogEntry:
    """A tool as the gateway enforces it: its effect, whether its output is trusted, who set
    the effect, and why its definition is not the accepted one (``None``: it is; the tool is
    refused otherwise)."""

    name: str
    effect: str
    trusted_output: bool
    set_by: str
    change: str | None


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_DEFINITION = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def _definition(tool: types.Tool) -> tuple[dict[str, Any], str]:
    """What the model is shown of a tool, and its SHA-256 (canonical JSON)."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    definition = {k: dumped[k] for k in _DEFINITION if k in dumped}
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return definition, hashlib.sha256(canonical.encode()).hexdigest()


def _changed_fields(accepted: object, definition: Mapping[str, Any]) -> str:
    """Which parts of a definition differ from the accepted one."""
    if not isinstance(accepted, Mapping):
        return "the accepted definition is not on the record"
    fields = [k for k in _DEFINITION if accepted.get(k) != definition.get(k)]
    return ", ".join(fields) or "its definition"


def _printable(text: object) -> str:
    """A name or text from outside, safe to print or send: control characters (ESC, CR, LF,
    ...) and other invisible ones escaped, cut at 200 characters."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append("\\\\")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    text = "".join(out)
    return text if len(text) <= 200 else text[:200] + "..."


class _Session:
    """A downstream conversation: an MCP session (a stdio client, a Streamable HTTP
    ``Mcp-Session-Id``) or the run token of sessionless calls. Its run is opened with its first
    call; it holds no database connection between calls (the gateway's pool serves them)."""

    def __init__(self, client: Client | None, agent: str, run: AsyncRun | None = None) -> None:
        self.lock = asyncio.Lock()
        self.client = client
        self.agent = agent
        self.guard: Guard | None = None
        # the run's id, agent, scope and labels as opened
        self.run: tuple[Any, str | None, Scope, LabelSet] | None = None
        if run is not None:
            self.run = (run.id, run.agent, run.scope, run.opened_labels)
        self.used = time.monotonic()


class _Pool:
    """The gateway's database connections as its ``--database`` role: at most ``size``, each
    lent to one call's statements at a time, opened again after one broke."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.idle: list[AsyncPlatform] = []
        self.slots = asyncio.Semaphore(config.pool_size)

    async def _connect(self) -> AsyncPlatform:
        timeout = self.config.db_timeout
        conn = await psycopg.AsyncConnection.connect(
            self.config.database, autocommit=True, connect_timeout=max(1, int(timeout))
        )
        try:
            # every statement ends within the database timeout (the URL's own options, or
            # PGOPTIONS, are kept)
            await conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", [f"{int(timeout * 1000)}ms"]
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        return AsyncPlatform(conn)

    @contextlib.asynccontextmanager
    async def platform(self) -> AsyncIterator[AsyncPlatform]:
        """A connection of the pool for the statements of one call (waiting for a free one
        within the database timeout)."""
        with anyio.fail_after(self.config.db_timeout):
            await self.slots.acquire()
        platform: AsyncPlatform | None = None
        try:
            while self.idle and platform is None:
                candidate = self.idle.pop()
                if candidate.conn.closed or candidate.conn.broken:
                    await _close(candidate.conn)
                else:
                    platform = candidate
            if platform is None:
                with anyio.fail_after(self.config.db_timeout):
                    platform = await self._connect()
            yield platform
        finally:
            if platform is not None:
                conn = platform.conn
                if conn.closed or conn.broken or conn.info.transaction_status != 0:
                    await _close(conn)
                else:
                    self.idle.append(platform)
            self.slots.release()

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for platform in idle:
            await _close(platform.conn)


async def _close(conn: psycopg.AsyncConnection[Any]) -> None:
    with contextlib.suppress(Exception):
        with anyio.move_on_after(1):
            await conn.close()


class Gateway:
    """The gateway: upstream sessions, the catalog, a run per downstream session."""

    def __init__(self, config: Config) -> None:
        if not config.database:
            raise ValueError("the gateway needs --database (PG_LABELS_MCP_DATABASE)")
        if not config.scope:
            raise ValueError("the gateway needs the scope of its runs (scope, --scope)")
        if not config.upstreams:
            raise ValueError("the gateway needs at least one upstream ([upstreams.NAME])")
        # the run's values, checked before anything starts (as the database parses them)
        Scope(config.scope)
        LabelSet(config.labels)
        self.config = config
        self.upstreams: dict[str, ClientSession] = {}
        self.listed: dict[str, list[types.Tool]] = {}
        self.routes: dict[str, _Route] = {}
        self.catalog: list[CatalogEntry] = []
        # tools whose definition changed since it was accepted: what changed
        self.pending: dict[str, str] = {}
        self._sessions: weakref.WeakKeyDictionary[Connection, _Session] = (
            weakref.WeakKeyDictionary()
        )
        self._resync: asyncio.Lock = asyncio.Lock()
        self._pool = _Pool(config)
        # sessionless conversations by their run, the idlest first; their tokens' key
        self._runs: OrderedDict[str, _Session] = OrderedDict()
        self._token_key = secrets.token_bytes(32)
        self._tasks: set[asyncio.Task[None]] = set()
        self.server: Server[Any] = Server(
            "pg-labels-mcp",
            version="0.3.0",
            instructions="Tools of upstream MCP servers; pg_labels judges and records each call.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- upstreams and the catalog -----------------------------------------------------------

    @contextlib.asynccontextmanager
    async def connected(self, *, accept: bool = False) -> AsyncIterator[Gateway]:
        """Check where the database role acts, connect to every upstream, list their tools and
        sync the catalog."""
        try:
            with anyio.fail_after(self.config.db_timeout * 3):
                await self.check_reach()
        except psycopg.Error as err:
            raise GatewayError(
                f"where the database role may act could not be read: {_leaf(err)}"
            ) from err
        async with contextlib.AsyncExitStack() as stack:
            for upstream in self.config.upstreams:
                try:
                    await self._connect(stack, upstream)
                except Exception as err:
                    raise GatewayError(
                        f"upstream {upstream.name} could not be started: {_leaf(err)}"
                    ) from err
            # an upstream may announce a change as soon as it is initialized (server-everything
            # does): that resync waits for this one
            async with self._resync:
                listed: dict[str, list[types.Tool]] = {}
                for name in self.upstreams:
                    try:
                        listed[name] = await self._list_upstream(name)
                    except Exception as err:
                        raise GatewayError(
                            f"upstream {name} did not list its tools: {_leaf(err)}"
                        ) from err
                try:
                    await self.sync_catalog(listed, accept=accept)
                except GatewayError:
                    raise
                except Exception as err:
                    raise GatewayError(
                        f"the tool catalog could not be written ({_leaf(err)}): give "
                        "--catalog-database a role that may write pg_labels.tools, "
                        "tool_namespaces and tool_definitions (docs/mcp.md)"
                    ) from err
            yield self

    async def check_reach(self) -> None:
        """Refuse to start unless the ``--database`` role's grants reach the configured scope,
        and (without ``allow_wider_grants``) reach nothing beyond it: a leaked credential of
        this gateway then writes and reads this gateway's scope and no other (docs/mcp.md)."""
        async with await psycopg.AsyncConnection.connect(
            self.config.database,
            autocommit=True,
            connect_timeout=max(1, int(self.config.db_timeout)),
        ) as conn:
            cur = await conn.execute(_REACH)
            row = await cur.fetchone()
            replica = None
            if conn.info.server_version >= 150000:
                cur = await conn.execute(_REPLICA)
                replica = await cur.fetchone()
        assert row is not None
        role, everywhere, granted = row[0], bool(row[1]), [Scope(s) for s in row[2]]
        powers = [
            what
            for what, held in (
                ("BYPASSRLS: it reads every company's rows", row[3]),
                ("CREATEROLE: it may grant itself other roles", row[4]),
                (
                    "SET on session_replication_role: its writes may skip the triggers",
                    bool(replica and replica[0]),
                ),
            )
            if held
        ]
        scope = Scope(self.config.scope)
        if not everywhere and not any(g.reaches(scope) for g in granted):
            raise GatewayError(
                f"the database role {role} may not act in {scope}, the gateway's scope: no "
                f"grant of it reaches there (the DBA grants it: INSERT INTO pg_labels.grants "
                f"(role, scope) VALUES ('{_quoted(role)}', '{scope}'))"
            )
        outside = [str(g) for g in granted if not scope.reaches(g)]
        wider = (
            ["it acts everywhere (it owns the platform's tables or is a superuser)"]
            if everywhere
            else ([f"its grants reach {', '.join(outside)}"] if outside else []) + powers
        )
        if wider and not self.config.allow_wider_grants:
            raise GatewayError(
                f"the database role {role} acts beyond the gateway's scope {scope}: "
                f"{'; '.join(wider)}. A leaked credential of this gateway would read and write "
                f"there too. Give the gateway a role granted exactly {scope}, with none of "
                "these (docs/mcp.md), or start it with --allow-wider-grants"
            )
        if wider:
            log.warning(
                "the database role %s acts beyond the gateway's scope %s: %s (allowed by "
                "allow_wider_grants)",
                role,
                scope,
                "; ".join(wider),
            )

    async def _connect(self, stack: contextlib.AsyncExitStack, upstream: Upstream) -> None:
        if upstream.url is not None:
            streams = await stack.enter_async_context(streamable_http_client(upstream.url))
        else:
            assert upstream.command is not None
            params = StdioServerParameters(
                command=upstream.command,
                args=list(upstream.args),
                env=dict(upstream.env) if upstream.env else None,
                cwd=upstream.cwd,
            )
            streams = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(
            ClientSession(streams[0], streams[1], message_handler=self._on_upstream(upstream.name))
        )
        with anyio.fail_after(self.config.call_timeout):
            await session.initialize()
        self.upstreams[upstream.name] = session

    async def _list_upstream(self, name: str) -> list[types.Tool]:
        session = self.upstreams[name]
        tools: list[types.Tool] = []
        cursor: str | None = None
        with anyio.fail_after(self.config.call_timeout):
            while True:
                result = await session.list_tools(
                    params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
                )
                tools.extend(result.tools)
                cursor = result.next_cursor
                if not cursor:
                    break
        seen: set[str] = set()
        offered: list[types.Tool] = []
        for tool in tools:
            if not _TOOL_NAME.fullmatch(f"{name}.{tool.name}"):
                # MCP's tool names: 1 to 128 of A-Z a-z 0-9 _ - . (nothing to forge a line with)
                log.warning(
                    "upstream %s offers a tool named %s, not a tool name MCP allows: not offered",
                    name,
                    _printable(tool.name),
                )
                continue
            if tool.name in seen:
                raise GatewayError(f"upstream {name} lists tool {tool.name} twice")
            seen.add(tool.name)
            offered.append(tool)
        return offered

    def _routes(self, listed: Mapping[str, list[types.Tool]]) -> dict[str, _Route]:
        return {
            f"{upstream}.{tool.name}": _Route(upstream, tool, *_definition(tool))
            for upstream, tools in listed.items()
            for tool in tools
        }

    def _effect(self, name: str, route: _Route) -> tuple[str, str]:
        """The effect the gateway gives a tool and where it comes from: the configuration's
        override, else the annotations of an upstream the configuration trusts, else
        ``destructive`` (an upstream's annotations are its claims about itself)."""
        effect = self.config.effects.get(name)
        if effect is not None:
            return effect, "the configuration"
        upstream = next(u for u in self.config.upstreams if u.name == route.upstream)
        if upstream.trust_annotations:
            return _effect_of(route.tool.annotations), "its annotations (trusted upstream)"
        return "destructive", "no override, untrusted annotations"

    @property
    def owner(self) -> str:
        """The gateway's name: the owner of its namespaces and of the tools it writes."""
        return self.config.name or self.config.agent

    async def sync_catalog(
        self, listed: Mapping[str, list[types.Tool]] | None = None, *, accept: bool = False
    ) -> list[CatalogEntry]:
        """Claim the upstreams' namespaces and write their tools to ``pg_labels.tools`` (on the
        catalog database's connection, in one transaction): a tool not in the catalog is
        added with its definition accepted; a row the gateway owns is updated to the
        configuration's effect while its definition is the one accepted; a row the DBA or
        another gateway owns is left as it is and enforced as it is. A changed definition
        waits for an operator (``accept`` takes it). Nothing changes (the routes neither)
        unless all of it is written."""
        listed = dict(self.listed if listed is None else listed)
        routes = self._routes(listed)
        unknown = sorted((set(self.config.effects) | set(self.config.trusted)) - set(routes))
        if unknown:
            log.warning(
                "overrides for tools no upstream offers: %s",
                ", ".join(_printable(n) for n in unknown),
            )
        dsn = self.config.catalog_database or self.config.database
        for attempt in range(3):
            try:
                with anyio.fail_after(self.config.db_timeout * 3):
                    async with await psycopg.AsyncConnection.connect(
                        dsn, autocommit=True, connect_timeout=max(1, int(self.config.db_timeout))
                    ) as conn:
                        async with conn.transaction():
                            catalog = await self._write_catalog(conn, listed, routes, accept)
                break
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                # two changes of the catalog at once (another gateway's): one ends with a
                # deadlock (docs/platform.md); the upsert only writes what differs, so again
                if attempt == 2:
                    raise
                await anyio.sleep(0.1 * (attempt + 1))
        self.listed, self.routes, self.catalog = listed, routes, catalog
        self.pending = {e.name: e.change for e in catalog if e.change is not None}
        return catalog

    async def _claim(self, conn: psycopg.AsyncConnection[Any], namespace: str) -> None:
        """The DBA gave this upstream's namespace to this gateway (its name, its catalog role)."""
        cur = await conn.execute(
            "SELECT n.owner, n.role::text, EXISTS (SELECT 1 FROM pg_catalog.pg_roles r "
            "WHERE r.rolname = n.role AND pg_catalog.pg_has_role(r.oid, 'MEMBER')), "
            "current_user::text FROM pg_labels.tool_namespaces n WHERE n.namespace = %s",
            [namespace],
        )
        row = await cur.fetchone()
        if row is None:
            cur = await conn.execute("SELECT current_user::text")
            me = await cur.fetchone()
            role = me[0] if me else "the catalog role"
            raise GatewayError(
                f"the DBA has not given namespace {namespace} to this gateway: its tools "
                f"(upstream {namespace}) may not be written. As the DBA: INSERT INTO "
                "pg_labels.tool_namespaces (namespace, owner, role) VALUES "
                f"('{_quoted(namespace)}', '{_quoted(self.owner)}', '{_quoted(role)}') "
                "(docs/mcp.md)"
            )
        if row[0] != self.owner or not row[2]:
            raise GatewayError(
                f"the tools of upstream {_printable(namespace)} are another gateway's: "
                f"namespace {_printable(namespace)} is claimed by gateway "
                f"{_printable(row[0])} for role {_printable(row[1])}. Name the upstream "
                "differently, or have the DBA give it to this gateway (docs/mcp.md)"
            )

    async def _write_catalog(
        self,
        conn: psycopg.AsyncConnection[Any],
        listed: Mapping[str, list[types.Tool]],
        routes: Mapping[str, _Route],
        accept: bool,
    ) -> list[CatalogEntry]:
        for namespace in listed:
            await self._claim(conn, namespace)
        cur = await conn.execute(
            "SELECT t.name, t.effect, t.trusted_output, t.owner, t.definition_digest, d.definition "
            "FROM pg_labels.tools t LEFT JOIN pg_labels.tool_definitions d "
            "ON d.name = t.name AND d.digest = t.definition_digest WHERE t.name = ANY(%s)",
            [list(routes)],
        )
        rows = {r[0]: r for r in await cur.fetchall()}
        catalog: list[CatalogEntry] = []
        for name, route in routes.items():
            effect, source = self._effect(name, route)
            trusted = bool(self.config.trusted.get(name, False))
            row = rows.get(name)
            if row is None:
                await conn.execute(
                    "INSERT INTO pg_labels.tools (name, effect, trusted_output, description, "
                    "owner, definition_digest) VALUES (%s, %s, %s, %s, %s, %s)",
                    [name, effect, trusted, route.tool.description, self.owner, route.digest],
                )
                await self._seen(conn, name, route, accepted=True)
                catalog.append(CatalogEntry(name, effect, trusted, source, None))
                continue
            _, row_effect, row_trusted, row_owner, row_digest, accepted = row
            change = None
            if row_digest is not None and row_digest != route.digest:
                change = (
                    "its definition changed since it was accepted "
                    f"({_changed_fields(accepted, route.definition)})"
                )
            if row_owner != self.owner:
                # the DBA's row, or another gateway's: enforced as it is, its definition pinned
                # by its owner: what this gateway is offered waits on the record until the
                # owner accepts it (a DBA's row after the update from 0.3.0 has none yet)
                by = "the DBA" if row_owner is None else f"gateway {row_owner}"
                if row_digest is None:
                    change = f"no definition of it was accepted by its owner ({by})"
                await self._seen(conn, name, route, accepted=False)
                catalog.append(CatalogEntry(name, row_effect, row_trusted, by, change))
                continue
            if change is not None and accept:
                await self._seen(conn, name, route, accepted=False)
                await conn.execute("SELECT pg_labels.accept_tool_definition(%s)", [name])
                change = None
            elif change is not None:
                await self._seen(conn, name, route, accepted=False)
                log.warning(
                    "upstream %s offers %s: %s; refused until an operator accepts it (docs/mcp.md)",
                    _printable(route.upstream),
                    _printable(name),
                    change,
                )
                catalog.append(CatalogEntry(name, row_effect, row_trusted, source, change))
                continue
            if (row_effect, row_trusted, row_digest) != (effect, trusted, route.digest):
                await conn.execute(
                    "UPDATE pg_labels.tools SET effect = %s, trusted_output = %s, "
                    "description = %s, definition_digest = %s WHERE name = %s",
                    [effect, trusted, route.tool.description, route.digest, name],
                )
                if row_digest is None:
                    await self._seen(conn, name, route, accepted=True)
            catalog.append(CatalogEntry(name, effect, trusted, source, None))
        return catalog

    async def _seen(
        self, conn: psycopg.AsyncConnection[Any], name: str, route: _Route, *, accepted: bool
    ) -> None:
        """A definition the gateway was offered, on the record (accepted, or waiting)."""
        await conn.execute(
            "INSERT INTO pg_labels.tool_definitions (name, owner, digest, definition, "
            "accepted_at, accepted_by) VALUES (%s, %s, %s, %s, "
            "CASE WHEN %s THEN now() END, CASE WHEN %s THEN CURRENT_USER END) "
            "ON CONFLICT (name, digest) DO NOTHING",
            [
                name,
                self.owner,
                route.digest,
                Jsonb(route.definition),
                accepted,
                accepted,
            ],
        )

    def _on_upstream(self, name: str) -> Any:
        async def handler(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                # Not awaited here: listing the tools is a request on the session whose
                # receive loop calls this handler.
                task = asyncio.get_running_loop().create_task(self._changed(name))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif isinstance(message, Exception):
                log.warning("upstream %s: %s", _printable(name), _printable(str(message)))

        return handler

    async def _changed(self, name: str) -> None:
        """An upstream's ``notifications/tools/list_changed``: list and sync again, then tell
        the downstream sessions. All or nothing: if the catalog cannot be written, the
        sessions keep the tools as they were."""
        async with self._resync:
            try:
                tools = await self._list_upstream(name)
                await self.sync_catalog({**self.listed, name: tools})
            except Exception as err:
                log.error(
                    "upstream %s changed its tools; syncing failed, the tools stay as they "
                    "were: %s",
                    _printable(name),
                    _printable(_leaf(err)),
                )
                return
        for connection in list(self._sessions):
            with contextlib.suppress(Exception):
                await connection.send_tool_list_changed()

    # -- downstream ----------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # a tool whose definition changed is not shown until an operator accepts the change
        # and only what is pinned: no _meta, icons or execution hints of the upstream's
        tools = [
            types.Tool.model_validate({**route.definition, "name": name})
            for name, route in self.routes.items()
            if name not in self.pending
        ]
        return types.ListToolsResult(tools=tools)

    def _client(self, ctx: ServerRequestContext[Any]) -> Client | None:
        """The client a bearer token named (HTTP with [clients]), else None."""
        request = ctx.request
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        client = state.get("pg_labels_client") if isinstance(state, Mapping) else None
        return client if isinstance(client, Client) else None

    def _new_session(self, client: Client | None, run: AsyncRun | None = None) -> _Session:
        agent = (client.agent if client is not None else None) or self.config.agent
        return _Session(client, agent, run)

    def _connection_session(self, ctx: ServerRequestContext[Any]) -> _Session:
        # The connection of the request (one per stdio client, per Streamable HTTP session):
        # ServerSession is built per request, its connection lives as long as the session.
        connection = ctx.session._connection
        session = self._sessions.get(connection)
        if session is None:
            session = self._sessions[connection] = self._new_session(self._client(ctx))
        session.used = time.monotonic()
        return session

    def _token(self, run_id: str, client: Client | None) -> str:
        """A run token: the run's id and an HMAC of it with the client's name and the
        gateway's name and scope (a token is only its client's, at this gateway)."""
        what = "\0".join((run_id, client.name if client else "", self.owner, self.config.scope))
        mac = hmac.new(self._token_key, what.encode(), hashlib.sha256).hexdigest()
        return f"{run_id}.{mac[:32]}"

    def _token_run(self, token: object, client: Client | None) -> str | None:
        """The run a token this gateway issued to this client names (None for any other)."""
        if not isinstance(token, str) or len(token) > 100 or "." not in token:
            return None
        run_id, _, _ = token.partition(".")
        try:
            run_id = str(uuid.UUID(run_id))
        except ValueError:
            return None
        return run_id if hmac.compare_digest(self._token(run_id, client), token) else None

    async def _sessionless(
        self, ctx: ServerRequestContext[Any], name: str
    ) -> _Session | types.CallToolResult:
        """A call of MCP's sessionless revision: its conversation's run, named by the run token
        the gateway issued in ``_meta`` (``pg-labels/run``); without one, the call is answered
        with a new conversation's token, not made (the run is opened by the first call that
        carries it: a call without a token writes nothing)."""
        mode = self.config.sessionless
        client = self._client(ctx)
        if mode == "per_call":
            return self._new_session(client)
        if mode == "refuse":
            return _error(
                f"pg_labels refused {name}: this gateway keeps the calls of one conversation in "
                "one run, and a call without an MCP session (protocol revision "
                f"{ctx.protocol_version}) has none; nothing was called. Connect with a session "
                "(an earlier protocol revision)"
            )
        meta = ctx.meta or {}
        token = meta.get(RUN_META_KEY) if isinstance(meta, Mapping) else None
        if token is None:
            issued = self._token(str(uuid.uuid4()), client)
            result = _error(
                f"pg_labels: {name} was not called. A call without an MCP session needs its "
                f"conversation's run: send this call, and every later call of the conversation, "
                f'with _meta {{"{RUN_META_KEY}": "{issued}"}}'
            )
            result.meta = {RUN_META_KEY: issued}
            return result
        run_id = self._token_run(token, client)
        if run_id is None:
            return _error(
                f"pg_labels refused {name}: _meta {RUN_META_KEY} is not a run token this "
                "gateway issued to this client (it issues one to a call that comes without); "
                "nothing was called"
            )
        known = self._runs.get(run_id)
        if known is None:
            known = self._new_session(client)
            known.run = (run_id, None, Scope(self.config.scope), LabelSet([]))
            self._remember(run_id, known)
        known.used = time.monotonic()
        return known

    def _remember(self, run_id: str, session: _Session) -> None:
        """The sessionless conversations kept: at most max_sessions, the idlest forgotten
        first (a forgotten one's next call finds its run again)."""
        self._runs[run_id] = session
        self._runs.move_to_end(run_id)
        cutoff = time.monotonic() - self.config.session_idle_timeout
        while self._runs and (
            len(self._runs) > self.config.max_sessions
            or next(iter(self._runs.values())).used < cutoff
        ):
            self._runs.popitem(last=False)

    async def _guard(self, session: _Session, platform: AsyncPlatform) -> Guard:
        """The session's guard, its run on this call's connection: opened with the first call,
        found again after that."""
        if session.run is None:
            run = await platform.open_run(
                session.agent, self.config.scope, labels=self.config.labels or None
            )
            session.run = (run.id, run.agent, run.scope, run.opened_labels)
            log.info("session opened run %s", run.id)
        elif session.run[1] is None:
            # a run named by a token: as the database has it, opened by its first call
            try:
                run = await platform.run(session.run[0])
            except LookupError:
                run = await platform.open_run(
                    session.agent,
                    self.config.scope,
                    labels=self.config.labels or None,
                    run_id=session.run[0],
                )
            session.run = (run.id, run.agent, run.scope, run.opened_labels)
        else:
            run = AsyncRun(platform, *session.run)
        if session.guard is None:
            session.guard = Guard(run)
        else:
            session.guard.run = run
        return session.guard

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        args: dict[str, Any] = dict(params.arguments or {})
        route = self.routes.get(name)
        if route is None:
            offered = sorted(n for n in self.routes if n not in self.pending)
            return _error(
                f"pg_labels refused {_printable(name)}: unknown tool (the gateway offers "
                f"{', '.join(offered) or 'no tools'}); nothing was called"
            )
        size = len(json.dumps(args, ensure_ascii=False).encode())
        if size > self.config.max_argument_bytes:
            return _error(
                f"pg_labels refused {name}: its arguments are {size} bytes, more than the "
                f"gateway's max_argument_bytes ({self.config.max_argument_bytes}); nothing "
                "was called"
            )
        if name in self.pending and not await self._accepted(name, route):
            return _error(
                f"pg_labels refused {name}: {self.pending.get(name)}; nothing was called. "
                "What the upstream offers is on the record (pg_labels.tool_definitions) until "
                "an operator accepts it"
            )
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            found = await self._sessionless(ctx, name)
            if isinstance(found, types.CallToolResult):
                return found
            session = found
        else:
            session = self._connection_session(ctx)
        if session.client != self._client(ctx):
            # a session (or run token) is its client's: another client's token does not use it
            return _error(
                f"pg_labels refused {name}: this session belongs to another client; nothing "
                "was called"
            )
        timeout = self.config.db_timeout
        try:
            async with session.lock, self._pool.platform() as platform:
                try:
                    with anyio.fail_after(timeout * 2):
                        guard = await self._guard(session, platform)
                except Exception as err:
                    log.warning("session: the database: %s", _printable(_leaf(err)))
                    what = (
                        "the database could not be reached"
                        if isinstance(_unwrap(err), (TimeoutError, psycopg.OperationalError))
                        else "the session's run could not be opened"
                    )
                    return _error(
                        f"pg_labels refused {name}: {what} ({_internal(err)}), so the call is "
                        "refused and was not forwarded"
                    )
                with anyio.fail_after(timeout):
                    verdict = await guard.acheck(name, args, str(ctx.request_id))
                    if verdict.decision == "block":
                        verdict = await self._explain(guard, name, args, verdict)
        except TimeoutError:
            return _error(
                f"pg_labels refused {name}: the database did not answer within {timeout:g}s, "
                "so the call is refused and was not forwarded"
            )
        except Exception as err:
            log.warning("session: the database: %s", _printable(_leaf(err)))
            return _error(
                f"pg_labels refused {name}: the database could not be reached "
                f"({_internal(err)}), so the call is refused and was not forwarded"
            )
        if not verdict.allowed:
            if verdict.decision == "error":
                # the database failed, it did not refuse: the client reads no more than the
                # SQLSTATE (the server's log and the gateway's have the rest)
                log.warning("%s: %s", name, _printable(verdict.message))
                state = f"SQLSTATE {verdict.sqlstate}" if verdict.sqlstate else "no SQLSTATE"
                return _error(
                    f"pg_labels refused {name}: the barrier could not be checked ({state}), "
                    "so the call is refused and was not forwarded"
                )
            return _error(verdict.message or f"pg_labels refused {name}")
        return await self._forward(session, verdict, route, args)

    async def _accepted(self, name: str, route: _Route) -> bool:
        """Whether an operator accepted the tool's changed definition since the last sync
        (``pg_labels.accept_tool_definition()``): then it is offered again."""
        try:
            async with self._pool.platform() as platform:
                with anyio.fail_after(self.config.db_timeout):
                    cur = await platform.conn.execute(
                        "SELECT definition_digest FROM pg_labels.tools WHERE name = %s", [name]
                    )
                    row = await cur.fetchone()
        except Exception:
            return False
        if row is None or row[0] != route.digest:
            return False
        self.pending.pop(name, None)
        return True

    async def _explain(self, guard: Guard, name: str, args: object, verdict: Verdict) -> Verdict:
        """A call the gate blocked, as the database refuses it: the ``tool_called`` step is
        written and refused by its trigger, whose error names the rule, the labels (DETAIL)
        and what to do (HINT); the refusal is recorded in ``pg_labels.refused_writes``.
        Should the write go through (the catalog changed since the gate), the database
        accepted the call and it is forwarded like an allowed one."""
        run = guard.run
        if not isinstance(run, AsyncRun):
            return verdict
        try:
            async with _alock(run.platform.conn):
                step = await run.call(name, args)
        except Refusal as refusal:
            return Verdict(
                name,
                "block",
                refusal.rule or verdict.rule,
                refusal.sqlstate,
                verdict.reason,
                verdict.step_id,
                message=f"pg_labels refused {name}: {refusal}",
            )
        except Exception:
            return verdict
        return Verdict(name, "allow", verdict.rule, None, verdict.reason, step.id)

    async def _forward(
        self,
        session: _Session,
        verdict: Verdict,
        route: _Route,
        args: dict[str, Any],
    ) -> types.CallToolResult:
        upstream = self.upstreams[route.upstream]
        try:
            with anyio.fail_after(self.config.call_timeout):
                result = await upstream.call_tool(
                    route.tool.name, args, read_timeout_seconds=self.config.call_timeout
                )
        except Exception as err:
            why = (
                f"it did not answer within {self.config.call_timeout:g}s"
                if isinstance(err, TimeoutError)
                else _printable(_why(err))
            )
            text = f"upstream {route.upstream} failed: {why}"
            Guard.failed_tool(verdict, err)
            # what the upstream said reaches the model only once it is the call's tool_result
            if await self._record(session, verdict, text) is not None:
                return _error(
                    f"pg_labels: {verdict.tool} was called and failed; the failure could not be "
                    "recorded, so what the upstream said is withheld"
                )
            return _error(f"pg_labels: {verdict.tool} was called, but {text}")
        if not isinstance(result, types.CallToolResult):
            result = types.CallToolResult(
                content=[types.TextContent(text=json.dumps(result.model_dump(mode="json")))]
            )
        output = result.model_dump(mode="json")
        size = len(json.dumps(output, ensure_ascii=False).encode())
        if size > self.config.max_result_bytes:
            text = (
                f"upstream {route.upstream} answered {size} bytes, more than the gateway's "
                f"max_result_bytes ({self.config.max_result_bytes})"
            )
            if await self._record(session, verdict, text) is not None:
                return _error(
                    f"pg_labels: the result of {verdict.tool} could not be recorded, so it is "
                    "withheld"
                )
            return _error(f"pg_labels: {verdict.tool} was called, but {text}: it is withheld")
        if await self._record(session, verdict, output) is not None:
            return _error(
                f"pg_labels: the result of {verdict.tool} could not be recorded, so it is withheld"
            )
        return result

    async def _record(self, session: _Session, verdict: Verdict, output: object) -> str | None:
        """The call's ``tool_result`` step; why it could not be written (logged: the client
        is told nothing of it), else None."""
        message: str | None
        try:
            async with session.lock, self._pool.platform() as platform:
                with anyio.fail_after(self.config.db_timeout):
                    guard = await self._guard(session, platform)
                    _, message = await guard.arecord(verdict, output)
        except Exception as err:
            message = f"the database: {_leaf(err)}"
        if message is not None:
            log.warning("%s: %s", verdict.tool, _printable(message))
        return message

    # -- serving -------------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        async with stdio_server() as (read, write):
            await self.server.run(
                read,
                write,
                self.server.create_initialization_options(NotificationOptions(tools_changed=True)),
            )

    async def serve_http(self, listen: str) -> None:
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings

        from ._http import Bearer, TimelyH11, is_loopback

        host, _, port = listen.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        loopback = is_loopback(host)
        if not loopback and not self.config.clients:
            raise GatewayError(
                f"--listen {listen} is not a loopback address: the gateway then needs its "
                "clients' bearer tokens ([clients.NAME] token_sha256 = ...; docs/mcp.md)"
            )
        hosts = self.config.allowed_hosts or (
            ["127.0.0.1:*", "localhost:*", "[::1]:*"] if loopback else []
        )
        if not hosts:
            raise GatewayError(
                f"--listen {listen}: name the host names clients reach the gateway by "
                '(allowed_hosts = ["mcp.example.com:8808"]), so that DNS rebinding is refused'
            )
        origins = self.config.allowed_origins or (
            ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] if loopback else []
        )
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )
        app: Any = self.server.streamable_http_app(
            host=host,
            session_idle_timeout=self.config.session_idle_timeout,
            max_sessions=self.config.max_sessions,
            max_request_body_size=self.config.max_request_bytes,
            transport_security=security,
        )
        if self.config.clients:
            app = Bearer(app, self.config.clients)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=int(port),
                log_level="warning",
                lifespan="on",
                server_header=False,
                limit_concurrency=self.config.max_sessions + self.config.pool_size + 16,
                timeout_keep_alive=5,
                http=TimelyH11,
            )
        )
        await server.serve()


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
    p.add_argument("--max-sessions", help="HTTP sessions kept at once (100)")
    p.add_argument("--pool-size", help="database connections the sessions share (10)")
    p.add_argument("--max-argument-bytes", help="a call's arguments, as JSON (1000000)")
    p.add_argument("--max-result-bytes", help="an upstream's result, as JSON (4000000)")
    p.add_argument("--max-request-bytes", help="an HTTP request's body (4000000)")
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
    for key in ("call_timeout", "db_timeout", "session_idle_timeout"):
        value = getattr(ns, key) or env.get(ENV_PREFIX + key.upper())
        if value:
            setattr(config, key, _seconds(value, key))
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


async def _main(config: Config, check: bool, accept: bool = False) -> int:
    gateway = Gateway(config)
    async with gateway.connected(accept=accept):
        if check:
            print(f"pg-labels-mcp: runs of agent {config.agent} in scope {config.scope}", end="")
            print(f" carrying {LabelSet(config.labels)}" if config.labels else "")
            width = max((len(t.name) for t in gateway.catalog), default=4)
            for tool in gateway.catalog:
                trust = "trusted output" if tool.trusted_output else "untrusted output"
                line = f"{tool.name:<{width}}  {tool.effect:<16}  {trust:<16}  set by {tool.set_by}"
                if tool.change is not None:
                    line += f"; REFUSED: {tool.change}"
                print(line)
            return 0
        if config.listen:
            await gateway.serve_http(config.listen)
        else:
            await gateway.serve_stdio()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pg-labels-mcp`` command."""
    try:
        config, check, verbose, accept = _settings(argv)
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.INFO if verbose else logging.WARNING,
            format="pg-labels-mcp: %(message)s",
        )
        return anyio.run(_main, config, check, accept)
    except (ValueError, OSError, psycopg.Error) as err:
        print(f"pg-labels-mcp: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        leaf = _unwrap(err)
        if isinstance(leaf, (GatewayError, ValueError, OSError, psycopg.Error)):
            print(f"pg-labels-mcp: {leaf}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
