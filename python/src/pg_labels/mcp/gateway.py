"""The gateway: upstream sessions, the catalog, a run per downstream conversation."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import psycopg
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from pg_labels import AsyncPlatform, AsyncRun, Guard, LabelSet, Refusal, Scope, Verdict

from .approvals import ApprovalWaits, HeldCalls, HoldingGuard
from .catalog import CatalogSync
from .common import (
    CatalogEntry,
    GatewayError,
    _error,
    _internal,
    _leaf,
    _printable,
    _Route,
    _unwrap,
)
from .config import Config, Upstream
from .guard import GatewayGuard, encoded
from .reach import check_reach
from .sessions import Conversations, _Pool, _Session
from .stdio import stdio_streams

log = logging.getLogger("pg_labels.mcp")


class Gateway(CatalogSync, Conversations, HeldCalls):
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
        self._waits = ApprovalWaits(config)
        # sessionless conversations by their run, the idlest first; their tokens' key
        self._runs: OrderedDict[str, _Session] = OrderedDict()
        self._token_key = secrets.token_bytes(32)
        self._tasks: set[asyncio.Task[None]] = set()
        # the gateway is closing its upstreams: a sync that fails then is not reported
        self._closing = False
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
                f"where the database role may act could not be read: {_printable(_leaf(err))}"
            ) from err
        async with contextlib.AsyncExitStack() as stack:
            for upstream in self.config.upstreams:
                try:
                    await self._connect(stack, upstream)
                except Exception as err:
                    raise GatewayError(
                        f"upstream {upstream.name} could not be started: {_printable(_leaf(err))}"
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
                            f"upstream {name} did not list its tools: {_printable(_leaf(err))}"
                        ) from err
                try:
                    await self.sync_catalog(listed, accept=accept)
                except GatewayError:
                    raise
                except Exception as err:
                    raise GatewayError(
                        f"the tool catalog could not be written ({_printable(_leaf(err))}): give "
                        "--catalog-database a role that may write pg_labels.tools, "
                        "tool_namespaces and tool_definitions (docs/mcp.md)"
                    ) from err
            try:
                yield self
            finally:
                # the upstreams close next: a sync an upstream's change started (server-
                # everything announces one as it starts) ends here, not as a failed sync
                self._closing = True
                tasks = list(self._tasks)
                for task in tasks:
                    task.cancel()
                with anyio.CancelScope(shield=True):
                    if tasks:
                        await asyncio.wait(tasks, timeout=self.config.db_timeout)
                    await self._waits.close()

    async def check_reach(self) -> None:
        """Refuse to start unless the role acts exactly in the gateway's scope (reach.py)."""
        await check_reach(self.config)

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

    async def _guard(self, session: _Session, platform: AsyncPlatform) -> GatewayGuard:
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
            session.guard = (
                HoldingGuard(run, self.config.approval_wait)
                if self.config.approval_wait > 0
                else GatewayGuard(run)
            )
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
        # the arguments' JSON, measured
        text = encoded(args)
        size = len(text.encode())
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
            if (
                verdict.decision == "ask"
                and verdict.request_id is not None
                and self.config.approval_wait > 0
            ):
                return await self._hold(ctx, session, verdict, route, args)
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
            async with guard.alock():
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
                else _printable(Guard.why(err))
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
        async with stdio_streams(self.config.max_request_bytes) as (read, write):
            await self.server.run(
                read,
                write,
                self.server.create_initialization_options(NotificationOptions(tools_changed=True)),
            )

    async def serve_http(self, listen: str) -> None:
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings

        from .http import Bearer, TimelyH11, is_loopback

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
