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
import json
import logging
import os
import sys
import weakref
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

from ._errors import Refusal
from ._guard import Guard, Verdict, _alock, _why
from ._platform import EFFECTS, AsyncPlatform, AsyncRun, Tool, tools_from_mcp
from ._values import LabelSet, Scope

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Config", "Gateway", "GatewayError", "Upstream", "load_config", "main"]

log = logging.getLogger("pg_labels.mcp")

ENV_PREFIX = "PG_LABELS_MCP_"


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


@dataclass
class Config:
    """The gateway's settings (a TOML file, flags, ``PG_LABELS_MCP_*`` variables)."""

    database: str = ""
    catalog_database: str | None = None
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
    for key in ("database", "catalog_database", "agent", "scope", "listen"):
        value = _str(data, key, "gateway.toml")
        if value is not None:
            setattr(config, key, value)
    if "labels" in data:
        config.labels = _strings(data["labels"], "labels")
    for key in ("call_timeout", "db_timeout"):
        if key in data:
            setattr(config, key, _seconds(data[key], key))
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
        config.upstreams.append(
            Upstream(
                name,
                command=command,
                args=tuple(_strings(table.get("args"), f"{where}.args")),
                env=env,
                cwd=_str(table, "cwd", where),
                url=url,
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


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@dataclass
class _Route:
    upstream: str
    tool: types.Tool


class _Session:
    """A downstream MCP session: its run (opened with its first call) and the database
    connection its steps are written on, opened again after it broke."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.conn: psycopg.AsyncConnection[Any] | None = None
        self.guard: Guard | None = None
        self.run_id: Any = None

    def broken(self) -> bool:
        return self.conn is None or self.conn.closed or self.conn.broken

    async def drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
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
        self.catalog: list[Tool] = []
        self._sessions: weakref.WeakKeyDictionary[Connection, _Session] = (
            weakref.WeakKeyDictionary()
        )
        self._resync: asyncio.Lock = asyncio.Lock()
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
    async def connected(self) -> AsyncIterator[Gateway]:
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
                for name in self.upstreams:
                    try:
                        await self._list_upstream(name)
                    except Exception as err:
                        raise GatewayError(
                            f"upstream {name} did not list its tools: {_leaf(err)}"
                        ) from err
                self._build_routes()
                try:
                    await self.sync_catalog()
                except Exception as err:
                    raise GatewayError(
                        f"the tool catalog could not be written ({_leaf(err)}): give "
                        "--catalog-database a role that may insert and update pg_labels.tools"
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

    async def _list_upstream(self, name: str) -> None:
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
        self.listed[name] = tools

    def _build_routes(self) -> None:
        routes: dict[str, _Route] = {}
        for upstream, tools in self.listed.items():
            for tool in tools:
                routes[f"{upstream}.{tool.name}"] = _Route(upstream, tool)
        self.routes = routes

    def describe(self) -> list[dict[str, Any]]:
        """The gateway's tools as MCP tool descriptions under their prefixed names (what
        :func:`pg_labels.tools_from_mcp` maps)."""
        return [
            {
                "name": name,
                "annotations": route.tool.annotations,
                "description": route.tool.description,
            }
            for name, route in self.routes.items()
        ]

    def overrides(self) -> tuple[dict[str, str], dict[str, bool]]:
        """The configuration's effects and trusted outputs of the tools the upstreams offer
        (an override of any other tool is logged and ignored)."""
        names = set(self.routes)
        unknown = sorted((set(self.config.effects) | set(self.config.trusted)) - names)
        if unknown:
            log.warning("overrides for tools no upstream offers: %s", ", ".join(unknown))
        return (
            {n: e for n, e in self.config.effects.items() if n in names},
            {n: t for n, t in self.config.trusted.items() if n in names},
        )

    def entries(self) -> list[Tool]:
        """The catalog entries of the gateway's tools (annotations, then the overrides),
        without a database."""
        effects, trusted = self.overrides()
        return tools_from_mcp(self.describe(), effects=effects, trusted=trusted)

    async def sync_catalog(self) -> list[Tool]:
        """Write the tools to ``pg_labels.tools`` (on the catalog database's connection)."""
        dsn = self.config.catalog_database or self.config.database
        for attempt in range(3):
            try:
                with anyio.fail_after(self.config.db_timeout * 3):
                    async with await psycopg.AsyncConnection.connect(
                        dsn, autocommit=True, connect_timeout=max(1, int(self.config.db_timeout))
                    ) as conn:
                        effects, trusted = self.overrides()
                        self.catalog = await AsyncPlatform(conn).sync_tools(
                            self.describe(), effects=effects, trusted=trusted
                        )
                return self.catalog
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                # two changes of the catalog at once (another gateway's): one ends with a
                # deadlock (docs/platform.md); the upsert only writes what differs, so again
                if attempt == 2:
                    raise
                await anyio.sleep(0.1 * (attempt + 1))
        raise AssertionError("unreachable")

    def _on_upstream(self, name: str) -> Any:
        async def handler(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                # Not awaited here: listing the tools is a request on the session whose
                # receive loop calls this handler.
                task = asyncio.get_running_loop().create_task(self._changed(name))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif isinstance(message, Exception):
                log.warning("upstream %s: %s", name, message)

        return handler

    async def _changed(self, name: str) -> None:
        """An upstream's ``notifications/tools/list_changed``: list and sync again, then tell
        the downstream sessions."""
        async with self._resync:
            try:
                await self._list_upstream(name)
                self._build_routes()
                await self.sync_catalog()
            except Exception as err:
                log.error("upstream %s changed its tools; syncing failed: %s", name, _why(err))
                return
        for connection in list(self._sessions):
            with contextlib.suppress(Exception):
                await connection.send_tool_list_changed()

    # -- downstream ----------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._session(ctx)
        tools = [
            route.tool.model_copy(update={"name": name}) for name, route in self.routes.items()
        ]
        return types.ListToolsResult(tools=tools)

    def _session(self, ctx: ServerRequestContext[Any]) -> _Session:
        # The connection of the request (one per stdio client, per Streamable HTTP session):
        # ServerSession is built per request, its connection lives as long as the session.
        connection = ctx.session._connection
        session = self._sessions.get(connection)
        if session is None:
            session = self._sessions[connection] = _Session()
            connection.exit_stack.push_async_callback(session.drop)
        return session

    async def _ready(self, session: _Session) -> Guard:
        """The session's guard on a live connection: connect (again) and open the run (or
        find it again after a reconnect)."""
        if session.broken() or session.guard is None:
            await session.drop()
            timeout = self.config.db_timeout
            conn = await psycopg.AsyncConnection.connect(
                self.config.database, autocommit=True, connect_timeout=max(1, int(timeout))
            )
            try:
                # every statement ends within the database timeout (the URL's own options, or
                # PGOPTIONS, are kept)
                await conn.execute(
                    "SELECT set_config('statement_timeout', %s, false)",
                    [f"{int(timeout * 1000)}ms"],
                )
                platform = AsyncPlatform(conn)
                if session.run_id is None:
                    run = await platform.open_run(
                        self.config.agent, self.config.scope, labels=self.config.labels or None
                    )
                    session.run_id = run.id
                    log.info("session opened run %s", run.id)
                else:
                    run = await platform.run(session.run_id)
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.close()
                raise
            session.conn = conn
            if session.guard is None:
                session.guard = Guard(run)
            else:
                session.guard.run = run
        assert session.guard is not None
        return session.guard

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        args: dict[str, Any] = dict(params.arguments or {})
        route = self.routes.get(name)
        if route is None:
            return _error(
                f"pg_labels refused {name}: unknown tool (the gateway offers "
                f"{', '.join(sorted(self.routes)) or 'no tools'}); nothing was called"
            )
        session = self._session(ctx)
        timeout = self.config.db_timeout
        try:
            async with session.lock:
                with anyio.fail_after(timeout * 2):
                    guard = await self._ready(session)
        except Exception as err:
            await session.drop()
            why = "it did not answer in time" if isinstance(err, TimeoutError) else _why(err)
            what = (
                "the database could not be reached"
                if isinstance(err, (TimeoutError, psycopg.OperationalError))
                else "the session's run could not be opened"
            )
            return _error(
                f"pg_labels refused {name}: {what} ({why}), so the call is refused and was "
                "not forwarded"
            )
        try:
            with anyio.fail_after(timeout):
                verdict = await guard.acheck(name, args, str(ctx.request_id))
                if verdict.decision == "block":
                    verdict = await self._explain(guard, name, args, verdict)
        except TimeoutError:
            await session.drop()
            return _error(
                f"pg_labels refused {name}: the database did not answer within {timeout:g}s, "
                "so the call is refused and was not forwarded"
            )
        if not verdict.allowed:
            if session.broken():
                await session.drop()
            return _error(verdict.message or f"pg_labels refused {name}")
        return await self._forward(session, guard, verdict, route, args)

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
        guard: Guard,
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
                else _why(err)
            )
            text = f"upstream {route.upstream} failed: {why}"
            Guard.failed_tool(verdict, err)
            with anyio.move_on_after(self.config.db_timeout):
                await guard.arecord(verdict, text)
            return _error(f"pg_labels: {verdict.tool} was called, but {text}")
        if not isinstance(result, types.CallToolResult):
            result = types.CallToolResult(
                content=[types.TextContent(text=json.dumps(result.model_dump(mode="json")))]
            )
        message: str | None = None
        try:
            with anyio.fail_after(self.config.db_timeout):
                _, message = await guard.arecord(verdict, result.model_dump(mode="json"))
        except TimeoutError:
            await session.drop()
            message = (
                f"pg_labels: the result of {verdict.tool} could not be recorded (the database "
                "did not answer in time), so it is withheld"
            )
        if message is not None:
            if session.broken():
                await session.drop()
            return _error(message)
        return result

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

        host, _, port = listen.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        app = self.server.streamable_http_app(host=host, session_idle_timeout=None)
        server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=int(port), log_level="warning", lifespan="on")
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
        "--allow-wider-grants",
        action="store_true",
        help="start although the --database role's grants reach beyond --scope",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="connect to everything, sync and print the catalog it would enforce, and exit",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO to stderr")
    return p


def _flag(value: str | None) -> bool:
    return (value or "") not in ("", "0", "false")


def _settings(argv: Sequence[str] | None) -> tuple[Config, bool, bool]:
    ns = _parser().parse_args(argv)
    env = os.environ
    config_path = ns.config or env.get(ENV_PREFIX + "CONFIG")
    config = load_config(config_path)
    for key in ("database", "catalog_database", "agent", "scope", "listen"):
        value = getattr(ns, key) or env.get(ENV_PREFIX + key.upper())
        if value:
            setattr(config, key, value)
    labels = ns.labels or [
        s.strip() for s in env.get(ENV_PREFIX + "LABELS", "").split(",") if s.strip()
    ]
    if labels:
        config.labels = labels
    for key in ("call_timeout", "db_timeout"):
        value = getattr(ns, key) or env.get(ENV_PREFIX + key.upper())
        if value:
            setattr(config, key, _seconds(value, key))
    if ns.allow_wider_grants or _flag(env.get(ENV_PREFIX + "ALLOW_WIDER_GRANTS")):
        config.allow_wider_grants = True
    check = ns.check or _flag(env.get(ENV_PREFIX + "CHECK"))
    return config, check, ns.verbose


async def _main(config: Config, check: bool) -> int:
    gateway = Gateway(config)
    async with gateway.connected():
        if check:
            print(f"pg-labels-mcp: runs of agent {config.agent} in scope {config.scope}", end="")
            print(f" carrying {LabelSet(config.labels)}" if config.labels else "")
            width = max((len(t.name) for t in gateway.catalog), default=4)
            for tool in gateway.catalog:
                trust = "trusted output" if tool.trusted_output else "untrusted output"
                print(f"{tool.name:<{width}}  {tool.effect:<16}  {trust}")
            return 0
        if config.listen:
            await gateway.serve_http(config.listen)
        else:
            await gateway.serve_stdio()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pg-labels-mcp`` command."""
    try:
        config, check, verbose = _settings(argv)
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.INFO if verbose else logging.WARNING,
            format="pg-labels-mcp: %(message)s",
        )
        return anyio.run(_main, config, check)
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
