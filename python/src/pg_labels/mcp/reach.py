"""Where the gateway's database role may act, checked before it starts (issue 46)."""

from __future__ import annotations

import logging

import psycopg

from pg_labels import Scope

from .common import GatewayError, _quoted
from .config import Config

log = logging.getLogger("pg_labels.mcp")


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


async def check_reach(config: Config) -> None:
    """Refuse to start unless the ``--database`` role's grants reach the configured scope,
    and (without ``allow_wider_grants``) reach nothing beyond it: a leaked credential of
    this gateway then writes and reads this gateway's scope and no other (docs/mcp.md)."""
    async with await psycopg.AsyncConnection.connect(
        config.database,
        autocommit=True,
        connect_timeout=max(1, int(config.db_timeout)),
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
    scope = Scope(config.scope)
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
    if wider and not config.allow_wider_grants:
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
