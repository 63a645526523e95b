"""The catalog: who owns each tool, the effects, the pinned definitions (issue 47)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import psycopg
from mcp.client.session import ClientSession, IncomingMessage
from mcp.server.connection import Connection
from psycopg.types.json import Jsonb

from pg_labels import effect_of

from .common import (
    _TOOL_NAME,
    CatalogEntry,
    GatewayError,
    Named,
    _changed_fields,
    _definition,
    _leaf,
    _printable,
    _quoted,
    _Route,
)
from .config import Config
from .sessions import _Session

log = logging.getLogger("pg_labels.mcp")


class _NotTheCatalogRole(Exception):
    """The namespace is this gateway's, but the connection's role is not the one it was given
    to: the catalog may not be written as this role."""


class CatalogSync(Named):
    """The upstreams' tools and the catalog the gateway writes for them (a part of
    :class:`~pg_labels.mcp.gateway.Gateway`)."""

    config: Config
    upstreams: dict[str, ClientSession]
    listed: dict[str, list[types.Tool]]
    routes: dict[str, _Route]
    catalog: list[CatalogEntry]
    pending: dict[str, str]
    _sessions: weakref.WeakKeyDictionary[Connection, _Session]
    _resync: asyncio.Lock
    _tasks: set[asyncio.Task[None]]
    _closing: bool

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
            return effect_of(route.tool.annotations), "its annotations (trusted upstream)"
        return "destructive", "no override, untrusted annotations"

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
        if row[0] == self.owner and not row[2]:
            # this gateway's namespace, but its tools are written by another role than this one
            raise _NotTheCatalogRole(
                f"namespace {_printable(namespace)} is written by role {_printable(row[1])}"
            )
        if row[0] != self.owner:
            raise GatewayError(
                f"the tools of upstream {_printable(namespace)} are another gateway's: "
                f"namespace {_printable(namespace)} is claimed by gateway "
                f"{_printable(row[0])} for role {_printable(row[1])}. Name the upstream "
                "differently, or have the DBA give it to this gateway (docs/mcp.md)"
            )

    async def _namespaces_given(
        self, conn: psycopg.AsyncConnection[Any], listed: Mapping[str, list[types.Tool]]
    ) -> bool:
        """Every upstream's namespace is still given to this gateway (a row of
        pg_labels.tool_namespaces naming it): read as the connection's role when it may read
        them; false otherwise (the catalog is then written, and its namespaces checked in full,
        as the catalog role). A namespace the DBA took back stops the gateway at its start."""
        cur = await conn.execute(
            "SELECT pg_catalog.has_table_privilege('pg_labels.tool_namespaces', 'SELECT')"
        )
        may = await cur.fetchone()
        if not may or not may[0]:
            return False
        cur = await conn.execute(
            "SELECT namespace, owner FROM pg_labels.tool_namespaces WHERE namespace = ANY(%s)",
            [list(listed)],
        )
        given = {r[0]: r[1] for r in await cur.fetchall()}
        return all(given.get(namespace) == self.owner for namespace in listed)

    async def _write_catalog(
        self,
        conn: psycopg.AsyncConnection[Any],
        listed: Mapping[str, list[types.Tool]],
        routes: Mapping[str, _Route],
        accept: bool,
    ) -> list[CatalogEntry]:
        # compare first: a catalog that holds every tool as this gateway would write it needs
        # no write, so a role that only reads pg_labels.tools (the sessions') starts the gateway
        cur = await conn.execute(
            "SELECT name, effect, trusted_output, owner, definition_digest "
            "FROM pg_labels.tools WHERE name = ANY(%s)",
            [list(routes)],
        )
        current: dict[str, tuple[Any, ...]] = {r[0]: r for r in await cur.fetchall()}
        catalog: list[CatalogEntry] = []
        differ: list[str] = []
        for name, route in routes.items():
            effect, source = self._effect(name, route)
            trusted = bool(self.config.trusted.get(name, False))
            if current.get(name) == (name, effect, trusted, self.owner, route.digest):
                catalog.append(CatalogEntry(name, effect, trusted, source, None))
            else:
                differ.append(name)
        if not differ and await self._namespaces_given(conn, listed):
            return catalog
        try:
            return await self._write(conn, listed, routes, accept)
        except (psycopg.errors.InsufficientPrivilege, _NotTheCatalogRole) as err:
            role = conn.info.user
            shown = ", ".join(_printable(n) for n in differ[:3])
            more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
            given = self.config.catalog_database is not None
            raise GatewayError(
                f"the tool catalog must be written ({shown}{more} not as this gateway "
                f"offers them) and role {_printable(role)} may not write it "
                f"({_printable(_leaf(err))}): "
                + (
                    f"grant role {_printable(role)} what docs/mcp.md#roles-and-grants grants "
                    "the catalog role"
                    if given
                    else "name the gateway's catalog role with --catalog-database or "
                    "catalog_database, granted as docs/mcp.md#roles-and-grants shows"
                )
            ) from err

    async def _write(
        self,
        conn: psycopg.AsyncConnection[Any],
        listed: Mapping[str, list[types.Tool]],
        routes: Mapping[str, _Route],
        accept: bool,
    ) -> list[CatalogEntry]:
        """The catalog's writes (a tool of this gateway's new or changed): its namespaces
        checked first."""
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
                if self._closing:
                    # the gateway closed the upstream while it listed its tools: no failure
                    log.info(
                        "upstream %s changed its tools as the gateway closed", _printable(name)
                    )
                    return
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
