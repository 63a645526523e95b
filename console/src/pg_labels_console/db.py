"""Every query the console runs: as the signed-in role, values only as parameters."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Row = dict[str, Any]
Conn = psycopg.Connection[Any]


class SignInFailed(Exception):
    """A wrong password, an unknown role or a role without LOGIN: one message for all."""


class DatabaseUnreachable(Exception):
    """The server could not be reached at all."""


def connect(database_url: str, role: str, password: str, **options: str) -> Conn:
    """A connection as the role, with its own password; nothing else is tried (no password file).
    `options`: more libpq parameters (the notifier's name and keepalives)."""
    params = {"application_name": "pg-labels-console", "connect_timeout": "10", **options}
    conninfo = make_conninfo(
        database_url,
        user=role,
        password=password,
        passfile="/nonexistent/pg_labels_console",
        **params,
    )
    try:
        conn = psycopg.connect(
            conninfo, autocommit=True, row_factory=dict_row, prepare_threshold=None
        )
    except psycopg.OperationalError as e:
        if (
            (e.sqlstate is not None and e.sqlstate.startswith("28"))
            or "authentication" in str(e)
            or "not permitted to log in" in str(e)
            or "does not exist" in str(e)
        ):
            raise SignInFailed() from None
        raise DatabaseUnreachable() from None
    return conn


def list_scopes(conn: Conn) -> list[str]:
    """The scopes the role's grants (its own and its roles') name, as the role reads them."""
    try:
        with conn.transaction():
            rows = conn.execute(
                "SELECT DISTINCT scope::text AS scope FROM pg_labels.grants ORDER BY 1"
            ).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return []
    return [r["scope"] for r in rows]


def enter(conn: Conn, scope: str) -> None:
    """Enter the scope for the current transaction (refused, 42501, without a grant)."""
    conn.execute("SELECT pg_labels.enter_scope(%s)", [scope])


@dataclass
class RunFilter:
    agent: str | None = None
    label: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    after: tuple[datetime, uuid.UUID] | None = (
        None  # keyset cursor: the last row of the page before
    )


def runs(conn: Conn, f: RunFilter, limit: int) -> list[Row]:
    """A page of runs, newest first, by keyset (opened_at, id): no OFFSET, no count of the trail."""
    where: list[sql.Composable] = [sql.SQL("true")]
    params: dict[str, Any] = {"limit": limit}
    for name, condition in (
        ("agent", "r.agent = %(agent)s"),
        ("label", "r.labels ? %(label)s::text"),
        ("since", "r.opened_at >= %(since)s"),
        ("until", "r.opened_at < %(until)s"),
    ):
        if value := getattr(f, name):
            where.append(sql.SQL(condition))
            params[name] = value
    if f.after:
        where.append(sql.SQL("(r.opened_at, r.id) < (%(c_at)s, %(c_id)s)"))
        params["c_at"], params["c_id"] = f.after
    q = sql.SQL(
        """SELECT r.id, r.agent, r.agent_version, r.scope::text AS scope,
                  r.labels::text[] AS labels, r.opened_at, st.steps, st.last_at
           FROM (SELECT * FROM pg_labels.runs r WHERE {where}
                 ORDER BY r.opened_at DESC, r.id DESC LIMIT %(limit)s) r
           LEFT JOIN LATERAL (SELECT count(*) AS steps, max(s.created_at) AS last_at
                              FROM pg_labels.steps s WHERE s.run_id = r.id) st ON true
           ORDER BY r.opened_at DESC, r.id DESC"""
    ).format(where=sql.SQL(" AND ").join(where))
    return conn.execute(q, params).fetchall()


def run(conn: Conn, run_id: uuid.UUID) -> Row | None:
    return conn.execute(
        """SELECT id, agent, agent_version, scope::text AS scope, labels::text[] AS labels,
                  opened_at, listener_id
           FROM pg_labels.runs WHERE id = %s""",
        [run_id],
    ).fetchone()


def steps(conn: Conn, run_id: uuid.UUID) -> list[Row]:
    return conn.execute(
        """SELECT id, kind, tool, labels::text[] AS labels, args, decision, rule, reason,
                  request_id, origin_run, artifact_id, digest, share_id, crossing_ids, actor,
                  created_at
           FROM pg_labels.steps WHERE run_id = %s ORDER BY id""",
        [run_id],
    ).fetchall()


def verify(conn: Conn, run_id: uuid.UUID) -> Row | None:
    return conn.execute(
        "SELECT intact, steps, step, how, detail FROM pg_labels.verify(%s)", [run_id]
    ).fetchone()


def lineage(conn: Conn, run_id: uuid.UUID) -> list[Row]:
    return conn.execute(
        """SELECT depth, run_id, scope::text AS scope, agent, artifact_id, digest,
                  labels::text[] AS labels, read_by, read_step, read_at
           FROM pg_labels.lineage(%s) ORDER BY depth, read_step""",
        [run_id],
    ).fetchall()


# one approval request as pg_labels.approval_requests reads it (as the caller: row-level security
# and the caller's grants decide which it reads), with its tool's effect from the catalog
REQUEST_COLUMNS = """q.id, q.run_id, q.run_scope::text AS run_scope, q.agent, q.agent_version,
                     q.tool, q.args, q.labels::text[] AS labels, q.reason, q.requested_by,
                     q.requested_at, q.expires_at, q.status, q.decided_by, q.decided_at,
                     q.decision_reason, q.decision_id, q.used_by"""


# The requests no decision answers yet, as the caller reads them, from steps_request_idx alone
# (issue 50): the approval requests (an approval_requested step has no request_id: the trigger
# refuses one) but for those whose expires_at has passed, less the (request, run) of every
# approval_decided step. Every request the view calls pending is among them (its status also
# reads the clock, which only moves on): the queue reads the view's rows of these ids only,
# instead of the state of every request ever made, two searches in each partition of the ring
# per request. A set difference: no plan can make it a search per request. Row-level security
# reads the same rows here as in the view.
UNDECIDED_IDS = """ARRAY(SELECT u.id FROM (
                       SELECT s.id, s.run_id FROM pg_labels.steps s
                        WHERE s.kind = 'approval_requested' AND s.request_id IS NULL
                          AND (s.expires_at IS NULL OR s.expires_at > pg_catalog.now())
                       EXCEPT
                       SELECT d.request_id, d.run_id FROM pg_labels.steps d
                        WHERE d.kind = 'approval_decided' AND d.request_id IS NOT NULL) u)"""


def pending_requests(conn: Conn, limit: int = 100) -> list[Row]:
    """Pending requests (pg_labels.approval_requests: not decided, withdrawn or expired),
    oldest first, with the tool's effect and the run's labels."""
    return conn.execute(
        f"""SELECT {REQUEST_COLUMNS}, q.requested_by AS actor, q.requested_at AS created_at,
                   r.scope::text AS scope, r.labels::text[] AS run_labels, t.effect
            FROM pg_labels.approval_requests q
            LEFT JOIN pg_labels.runs r ON r.id = q.run_id
            LEFT JOIN pg_labels.tools t ON t.name = q.tool
            WHERE q.status = 'pending' AND q.id = ANY ({UNDECIDED_IDS})
            ORDER BY q.id LIMIT %s""",
        [limit],
    ).fetchall()


def approval_request(conn: Conn, request_id: int) -> Row | None:
    """One request, or None when the caller reads none of this id (missing or not its own to
    read: the same answer)."""
    return conn.execute(
        f"""SELECT {REQUEST_COLUMNS}, r.scope::text AS scope, r.labels::text[] AS run_labels,
                   t.effect
            FROM pg_labels.approval_requests q
            LEFT JOIN pg_labels.runs r ON r.id = q.run_id
            LEFT JOIN pg_labels.tools t ON t.name = q.tool
            WHERE q.id = %s""",
        [request_id],
    ).fetchone()


def why_it_asks(conn: Conn, run_id: uuid.UUID, request_id: int, tool: str, args: Any) -> str | None:
    """The reason the gate gave when it asked for this call (the run's latest `ask` for the same
    tool and arguments before the request), if the caller reads it."""
    row = conn.execute(
        """SELECT s.rule, s.reason FROM pg_labels.steps s
           WHERE s.run_id = %s AND s.kind = 'gate_decided' AND s.decision = 'ask'
             AND s.tool = %s AND s.args IS NOT DISTINCT FROM %s::jsonb AND s.id < %s
           ORDER BY s.id DESC LIMIT 1""",
        [run_id, tool, None if args is None else Jsonb(args), request_id],
    ).fetchone()
    if row is None:
        return None
    parts = [str(x) for x in (row["rule"], row["reason"]) if x]
    return ": ".join(parts) or None


def run_requests(conn: Conn, run_id: uuid.UUID) -> dict[int, Row]:
    """The status of each request of the run the caller reads, by request id."""
    rows = conn.execute(
        """SELECT id, status, expires_at, decided_by, decision_id
           FROM pg_labels.approval_requests WHERE run_id = %s""",
        [run_id],
    ).fetchall()
    return {int(r["id"]): r for r in rows}


# The latest requests no longer pending, as the view finds and orders them, from
# steps_request_idx alone: each request with the steps that answer it in its run (grouped by
# the request's id and run), its first decision's time, or its expiry once past; of the runs the
# caller reads. The view's rows are read for these ids only.
CLOSED_IDS = """ARRAY(SELECT g.id FROM (
                     SELECT coalesce(x.request_id, x.id) AS id, x.run_id,
                            bool_or(x.request_id IS NULL) AS asked,
                            max(x.expires_at) FILTER (WHERE x.request_id IS NULL) AS expires_at,
                            (pg_catalog.array_agg(x.created_at ORDER BY x.id)
                                 FILTER (WHERE x.request_id IS NOT NULL))[1] AS decided_at
                       FROM pg_labels.steps x
                      WHERE (x.kind = 'approval_requested' AND x.request_id IS NULL)
                         OR (x.kind = 'approval_decided' AND x.request_id IS NOT NULL)
                      GROUP BY 1, 2) g
                  WHERE g.asked
                    AND (g.decided_at IS NOT NULL OR g.expires_at <= pg_catalog.clock_timestamp())
                    AND EXISTS (SELECT FROM pg_labels.runs r WHERE r.id = g.run_id)
                  ORDER BY coalesce(g.decided_at, g.expires_at) DESC, g.id DESC LIMIT %s)"""


def closed_requests(conn: Conn, limit: int = 20) -> list[Row]:
    """The latest requests that are no longer pending: granted, denied, withdrawn or expired."""
    return conn.execute(
        f"""SELECT {REQUEST_COLUMNS}, coalesce(q.decided_at, q.expires_at) AS closed_at
            FROM pg_labels.approval_requests q
            WHERE q.status <> 'pending' AND q.id = ANY ({CLOSED_IDS})
            ORDER BY coalesce(q.decided_at, q.expires_at) DESC, q.id DESC LIMIT %s""",
        [limit, limit],
    ).fetchall()


def label_sources(conn: Conn, run_ids: list[uuid.UUID]) -> list[Row]:
    """The steps of these runs that brought labels in: where a run's labels came from."""
    if not run_ids:
        return []
    return conn.execute(
        """SELECT run_id, id, kind, tool, labels::text[] AS labels, origin_run, created_at
           FROM pg_labels.steps WHERE run_id = ANY(%s) AND labels::text[] <> '{}'::text[]
           ORDER BY run_id, id""",
        [run_ids],
    ).fetchall()


def recent_decisions(conn: Conn, limit: int = 20) -> list[Row]:
    return conn.execute(
        """SELECT d.id, d.run_id, d.request_id, d.tool, d.args, d.decision, d.reason, d.actor,
                  d.created_at
           FROM pg_labels.steps d WHERE d.kind = 'approval_decided' ORDER BY d.id DESC LIMIT %s""",
        [limit],
    ).fetchall()


def decide(conn: Conn, request_id: int, granted: bool, reason: str | None) -> int:
    row = conn.execute(
        "SELECT pg_labels.decide_approval(%s, %s, %s) AS id", [request_id, granted, reason]
    ).fetchone()
    assert row is not None
    return int(row["id"])


def refusals_by_day(conn: Conn, days: int) -> list[Row]:
    return conn.execute(
        """SELECT date_trunc('day', created_at) AS day, coalesce(rule, '(none)') AS rule,
                  sum(coalesce(count, 1))::bigint AS n
           FROM pg_labels.refusals
           WHERE created_at >= date_trunc('day', now()) - make_interval(days => %s)
           GROUP BY 1, 2 ORDER BY 1, 2""",
        [days - 1],
    ).fetchall()


def recent_refusals(conn: Conn, limit: int = 50) -> list[Row]:
    return conn.execute(
        """SELECT created_at, source, kind, run_id, agent, tool, rule, decision, sqlstate, reason,
                  coalesce(count, 1) AS count, actor
           FROM pg_labels.refusals ORDER BY created_at DESC LIMIT %s""",
        [limit],
    ).fetchall()
