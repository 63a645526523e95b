"""pg-labels-console notify: tell a person, through a webhook, that an approval request waits.

It signs in as the approver's own role (the console's connection code), listens on
`pg_labels_approvals`, and for each new request that role may read in pg_labels.approval_requests
(row-level security and the role's grants decide) posts a message in the shape Slack's incoming
webhooks take, with a link to the request's page in the console. What the role may not read it
never reads, so never posts. Every resource is bounded (see `Limits`)."""

from __future__ import annotations

import argparse
import collections
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from . import db
from .approval_message import Limits, encode, message, text_only
from .webhook import Item, Poster, check_url, redact

CHANNEL = "pg_labels_approvals"
PASSWORD_ENV = "PG_LABELS_NOTIFY_PASSWORD"
WEBHOOK_ENV = "PG_LABELS_WEBHOOK_URL"
log = logging.getLogger("pg_labels_console.notify")
# the notifier's connections: named, and a dead peer noticed (TCP keepalives, and no write
# waiting past 60 s) rather than waited on for ever
CONNECTION = {
    "application_name": "pg-labels-console-notify",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "tcp_user_timeout": "60000",
}


# -- listening ------------------------------------------------------------------------------


@dataclass
class Notifier:
    """Listens as the approver's role and hands each new pending request it may read to the
    poster, at most once in this process."""

    database: str
    role: str
    password: str
    console_url: str
    poster: Poster
    limits: Limits
    scopes: list[str] | None = None  # None: every scope of the role's grants
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.seen: set[int] = set()  # handed to the poster once: never again in this process
        self.in_scopes: list[str] = []
        self.dropped = 0

    # the role's own connections: one that only listens, one that reads
    def connect(self) -> tuple[db.Conn, db.Conn]:
        listen = db.connect(self.database, self.role, self.password, **CONNECTION)
        try:
            listen.execute(f"LISTEN {CHANNEL}")
            read = db.connect(self.database, self.role, self.password, **CONNECTION)
        except BaseException:
            listen.close()
            raise
        return listen, read

    def choose_scopes(self, conn: db.Conn) -> list[str]:
        """The scopes read in: those given, or the widest of the role's grants'."""
        scopes = list(self.scopes) if self.scopes else db.list_scopes(conn)
        if self.scopes:
            return scopes
        widest = []
        for s in scopes:
            if not any(t != s and (t == "*" or s.startswith(t + "/")) for t in scopes):
                widest.append(s)
        return widest

    def read(self, conn: db.Conn, request_id: int | None) -> list[tuple[db.Row, str | None]]:
        """The request (or, for None, the pending requests, oldest first, at most the queue's
        length) as the role reads it in each of its scopes, with why the gate asked."""
        found: dict[int, tuple[db.Row, str | None]] = {}
        for scope in self.in_scopes:
            try:
                with conn.transaction():
                    db.enter(conn, scope)
                    if request_id is None:
                        rows = conn.execute(
                            f"""SELECT {db.REQUEST_COLUMNS} FROM pg_labels.approval_requests q
                                WHERE q.status = 'pending' AND q.id = ANY ({db.UNDECIDED_IDS})
                                ORDER BY q.id LIMIT %s""",
                            [self.limits.queue],
                        ).fetchall()
                    else:
                        rows = conn.execute(
                            f"SELECT {db.REQUEST_COLUMNS} FROM pg_labels.approval_requests q"
                            " WHERE q.id = %s",
                            [request_id],
                        ).fetchall()
                    for row in rows:
                        if row["id"] in found:
                            continue
                        why = None
                        if row["status"] == "pending" and row["id"] not in self.seen:
                            try:
                                with conn.transaction():
                                    why = db.why_it_asks(
                                        conn, row["run_id"], row["id"], row["tool"], row["args"]
                                    )
                            except psycopg.errors.InsufficientPrivilege:
                                pass
                        found[row["id"]] = (row, why)
            except psycopg.errors.InsufficientPrivilege as e:
                # a grant taken back since the start: this scope reads nothing
                log.warning("scope %s: %s", scope, e.diag.message_primary or e.sqlstate)
            if request_id is not None and found:
                break
        return [found[k] for k in sorted(found)]

    def handle(self, rows: list[tuple[db.Row, str | None]]) -> None:
        for row, why in rows:
            rid = int(row["id"])
            if row["status"] != "pending":
                # decided, withdrawn or expired: never pending again, so forgotten, and not
                # posted if it still waits in the queue
                if rid in self.seen:
                    self.poster.cancel(rid)
                    self.seen.discard(rid)
                continue
            if rid in self.seen:
                continue
            whole = message(row, why, self.console_url, self.limits)
            body = encode(whole, self.limits)
            if self.poster.offer(Item(rid, body, text_only(whole, self.limits))):
                self.seen.add(rid)
                log.info("request %d queued for the webhook", rid)
            else:
                self.dropped += 1
                log.error(
                    "request %d not queued: %d messages wait already (--max-queue); the next "
                    "catch-up tries again",
                    rid,
                    self.limits.queue,
                )

    def catch_up(self, conn: db.Conn) -> None:
        rows = self.read(conn, None)
        pending = {int(r["id"]) for r, _ in rows}
        if len(rows) < self.limits.queue:
            # every pending request was read: what was seen and is not pending any more is
            # decided, withdrawn or expired for good
            for rid in self.seen - pending:
                self.poster.cancel(rid)
            self.seen &= pending
        new = len(pending - self.seen)
        self.handle(rows)
        log.info("caught up: %d pending requests readable, %d new", len(rows), new)

    def run(self) -> int:
        """Until stopped (0); 2 when the first sign-in fails (a wrong password or role)."""
        delay = 1.0
        started = False
        while not self.stop.is_set():
            try:
                listen, read = self.connect()
            except (db.SignInFailed, db.DatabaseUnreachable, psycopg.Error) as e:
                if isinstance(e, db.SignInFailed):
                    log.error("sign-in as %s failed", self.role)
                    if not started:
                        return 2
                else:
                    log.warning("the database could not be reached (%s)", type(e).__name__)
                if self.stop.wait(delay):
                    return 0
                delay = min(delay * 2, self.limits.reconnect_max)
                continue
            started = True
            try:
                with read.transaction():
                    self.in_scopes = self.choose_scopes(read)
                log.info(
                    "listening on %s as %s, in %s",
                    CHANNEL,
                    self.role,
                    ", ".join(self.in_scopes) or "no scope",
                )
                self.catch_up(read)
                delay = 1.0
                self.listen(listen, read)
            except psycopg.OperationalError as e:
                log.warning("the connection was lost (%s): reconnecting", type(e).__name__)
            except psycopg.Error as e:
                # (the database's own message: it holds no secret of the notifier's)
                log.error(
                    "the database refused (%s: %s): reconnecting",
                    e.sqlstate,
                    e.diag.message_primary or type(e).__name__,
                )
            finally:
                for c in (listen, read):
                    try:
                        c.close()
                    except Exception:
                        pass
            if self.stop.wait(delay):
                return 0
            delay = min(delay * 2, self.limits.reconnect_max)
        return 0

    def listen(self, listen: db.Conn, read: db.Conn) -> None:
        next_sync = time.monotonic() + self.limits.resync
        while not self.stop.is_set():
            ids: collections.OrderedDict[int, None] = collections.OrderedDict()
            for n in listen.notifies(timeout=1.0, stop_after=1):
                if (
                    n.channel == CHANNEL
                    and n.payload.isascii()
                    and n.payload.isdigit()
                    and len(n.payload) <= 19
                ):
                    ids[int(n.payload)] = None
            for rid in ids:
                self.handle(self.read(read, rid))
            if time.monotonic() >= next_sync:
                self.catch_up(read)
                next_sync = time.monotonic() + self.limits.resync


# -- the command ----------------------------------------------------------------------------


def _secret(value: str | None, path: str | None, env: str, what: str) -> str:
    if path:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    if value:
        return value
    got = os.environ.get(env, "").strip()
    if not got:
        raise SystemExit(f"pg-labels-console notify: {what}: give {env} or a file")
    return got


def main(argv: list[str] | None = None) -> None:
    d = Limits()
    p = argparse.ArgumentParser(
        prog="pg-labels-console notify",
        description="Post each new approval request the approver's role may read to a webhook "
        "(the shape of Slack's incoming webhooks), with a link to its page in the console.",
    )
    p.add_argument(
        "--database", required=True, help="libpq URL or conninfo, without a user or password"
    )
    p.add_argument("--role", required=True, help="the approver's role: the notifier reads as it")
    p.add_argument(
        "--password-file",
        metavar="PATH",
        help=f"a file holding the role's password (else the environment's {PASSWORD_ENV})",
    )
    p.add_argument(
        "--webhook-file",
        metavar="PATH",
        help=f"a file holding the webhook's URL (else the environment's {WEBHOOK_ENV})",
    )
    p.add_argument(
        "--webhook",
        metavar="URL",
        help="the webhook's URL on the command line: others on the machine see it (ps); "
        "prefer --webhook-file or " + WEBHOOK_ENV,
    )
    p.add_argument("--console-url", required=True, help="the console's address, for the links")
    p.add_argument(
        "--scope",
        action="append",
        help="a scope to read in (repeatable; default: the widest scopes of the role's grants)",
    )
    p.add_argument(
        "--max-attempts",
        type=int,
        default=d.attempts,
        help=f"posts of one message (default {d.attempts})",
    )
    p.add_argument(
        "--max-retry-time",
        type=float,
        default=d.retry_time,
        metavar="SECONDS",
        help=f"from a message's first post to its last retry (default {d.retry_time:g})",
    )
    p.add_argument(
        "--max-queue",
        type=int,
        default=d.queue,
        help=f"messages waiting to be posted (default {d.queue})",
    )
    p.add_argument(
        "--max-body",
        type=int,
        default=d.body,
        metavar="BYTES",
        help=f"a message's JSON body (default {d.body})",
    )
    p.add_argument(
        "--http-timeout",
        type=float,
        default=d.http_timeout,
        metavar="SECONDS",
        help=f"one POST (default {d.http_timeout:g})",
    )
    p.add_argument(
        "--resync",
        type=float,
        default=d.resync,
        metavar="SECONDS",
        help=f"between two catch-ups (default {d.resync:g})",
    )
    a = p.parse_args(argv)
    if (
        a.max_attempts < 1
        or a.max_queue < 1
        or a.max_body < 1024
        or a.max_retry_time < 0
        or a.http_timeout <= 0
        or a.resync <= 0
    ):
        p.error("the limits must be positive (--max-body at least 1024)")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s notify %(levelname)s %(message)s", stream=sys.stderr
    )
    password = _secret(None, a.password_file, PASSWORD_ENV, "the role's password")
    webhook = _secret(a.webhook, a.webhook_file, WEBHOOK_ENV, "the webhook's URL")
    try:
        webhook = check_url(webhook, "the webhook")
        console_url = check_url(a.console_url, "--console-url")
    except ValueError as e:
        p.error(str(e))
    limits = Limits(
        attempts=a.max_attempts,
        retry_time=a.max_retry_time,
        queue=a.max_queue,
        body=a.max_body,
        http_timeout=a.http_timeout,
        resync=a.resync,
    )
    stop = threading.Event()
    poster = Poster(webhook, limits, stop)
    notifier = Notifier(a.database, a.role, password, console_url, poster, limits, a.scope, stop)
    log.info("posting to %s", redact(webhook))
    sender = threading.Thread(target=poster.run, name="poster", daemon=True)
    sender.start()

    def finish(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    try:
        status = notifier.run()
    finally:
        stop.set()
        sender.join(timeout=limits.http_timeout + 1)
    if status:
        raise SystemExit(status)
