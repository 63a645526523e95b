"""pg-labels-console notify: tell a person, through a webhook, that an approval request waits.

It signs in as the approver's own role (the console's connection code), listens on
`pg_labels_approvals`, and for each new request that role may read in pg_labels.approval_requests
(row-level security and the role's grants decide) posts a message in the shape Slack's incoming
webhooks take, with a link to the request's page in the console. What the role may not read it
never reads, so never posts. Every resource is bounded (see `Limits`)."""

from __future__ import annotations

import argparse
import collections
import email.utils
import http.client
import json
import logging
import os
import queue
import random
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import psycopg

from . import db

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


@dataclass
class Limits:
    """Every bound of the notifier, each with its default (docs/console.md lists them)."""

    attempts: int = 6  # posts of one message, the first included
    retry_time: float = 300.0  # seconds from a message's first post to its last retry
    backoff: float = 1.0  # the first retry's wait (doubled each time, up to backoff_max)
    backoff_max: float = 60.0
    queue: int = 1000  # messages waiting to be posted; past it a request is logged, not queued
    body: int = 32 * 1024  # bytes of one message's JSON body
    args_chars: int = 2500  # characters of the arguments shown (Slack: 3,000 a section)
    text_chars: int = 300  # characters of any other value shown (agent, tool, reason, labels)
    http_timeout: float = 10.0  # seconds for one POST (connecting, sending, the answer)
    answer_bytes: int = 4096  # bytes of the webhook's answer read (for the log)
    resync: float = 300.0  # seconds between two catch-ups on pending requests
    reconnect_max: float = 60.0  # the longest wait between two attempts to reconnect


# -- the message ---------------------------------------------------------------------------


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _mrkdwn(text: str) -> str:
    """A value written by a service, as Slack's mrkdwn text: its three control characters
    escaped as Slack says (so `<!channel>` or `<https://evil|bank>` are text, not a mention or a
    link)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    """Inside a ``` block: escaped, and no ``` of the value's can close it."""
    return _mrkdwn(text).replace("```", "`\u200b``")


def _fit(text: str, n: int, render: Callable[[str], str]) -> tuple[str, bool]:
    """`render(text)`, or that of the longest beginning of `text` whose rendering is at most `n`
    characters (escaping lengthens a text: the limit counts what Slack receives), and whether it
    was cut."""
    if len(render(text)) <= n:
        return render(text), False
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(render(text[:mid])) <= n:
            lo = mid
        else:
            hi = mid - 1
    return render(text[:lo]), True


def _shown(text: str, n: int) -> str:
    """A value as mrkdwn text of at most `n` characters once escaped (cut with an ellipsis)."""
    out, cut = _fit(text, n - 1, _mrkdwn)
    return out + "…" if cut else out


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text or " ", "emoji": False}


def _when(value: datetime | None) -> str:
    if value is None:
        return "never"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def request_url(console_url: str, request_id: int) -> str:
    return f"{console_url.rstrip('/')}/approvals/{int(request_id)}"


def message(req: db.Row, why: str | None, console_url: str, limits: Limits) -> dict[str, Any]:
    """The Slack incoming webhook body for one pending request: `text` (the notification's own
    line, and what clients without blocks show) and `blocks` (the tool, the real arguments, the
    run, why it asks, who asked and until when, and a link to the console's page)."""
    n = limits.text_chars
    url = request_url(console_url, req["id"])
    tool = _clip(str(req["tool"] or ""), n)
    agent = _clip(str(req.get("agent") or ""), n)
    run = str(req["run_id"])
    scope = _clip(str(req.get("run_scope") or ""), n)
    args = json.dumps(req["args"], indent=2, ensure_ascii=False, sort_keys=True)
    # (the limit counts the escaped text: Slack takes 3,000 characters a section)
    code, cut = _fit(args, limits.args_chars, _code)
    if cut:
        code += f"\n… ({len(args)} characters in all: the whole in the console)"
    reasons = [_shown(why, n) if why else "a reversible write on data of untrusted origin"]
    if req.get("reason"):
        reasons.append("the platform says: " + _shown(str(req["reason"]), n))
    labels = _shown(" ".join(req.get("labels") or []), n)
    who = _clip(str(req.get("requested_by") or ""), n)
    text = (
        f"Approval request {req['id']}: {_mrkdwn(tool)} in run {run[:8]}"
        f"{' of ' + _mrkdwn(agent) if agent else ''} ({_mrkdwn(scope)}) waits for a person: <{url}>"
    )
    fields = [
        {"type": "mrkdwn", "text": f"*Tool*\n{_mrkdwn(tool)}"},
        {"type": "mrkdwn", "text": f"*Run*\n<{url}|{run}>"},
        {"type": "mrkdwn", "text": f"*Agent*\n{_mrkdwn(agent) or '-'}"},
        {"type": "mrkdwn", "text": f"*Scope*\n{_mrkdwn(scope) or '-'}"},
        {"type": "mrkdwn", "text": f"*Requested by*\n{_mrkdwn(who)}"},
        {"type": "mrkdwn", "text": f"*Expires*\n{_when(req.get('expires_at'))}"},
    ]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(_clip(f"Approval request {req['id']}: {tool}", 150))},
        {"type": "section", "fields": fields},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"*Arguments*\n```{code}```"},
        },
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": "*Why it asks*\n"
                + "\n".join(reasons)
                + (f"\n*Labels of the call*: {labels}" if labels else ""),
            },
        },
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": _plain("Open in the console"),
                    "url": url,
                    "style": "primary",
                }
            ],
        },
    ]
    return {"text": text, "blocks": blocks}


def text_only(body: dict[str, Any], limits: Limits) -> bytes:
    """The message's `text` (which has the link) alone, within limits.body."""
    return json.dumps({"text": _clip(body["text"], limits.body // 8)}).encode()[: limits.body]


def encode(body: dict[str, Any], limits: Limits) -> bytes:
    """The body as JSON, within limits.body: when the whole does not fit, the arguments are shown
    shorter, then only `text` and the link are sent."""
    data = json.dumps(body, ensure_ascii=False).encode()
    if len(data) <= limits.body:
        return data
    small = {
        "text": body["text"],
        "blocks": [b for b in body["blocks"] if b["type"] in ("header", "actions")],
    }
    data = json.dumps(small, ensure_ascii=False).encode()
    if len(data) <= limits.body:
        return data
    return json.dumps({"text": _clip(body["text"], limits.body // 8)}).encode()[: limits.body]


# -- posting, with retries ------------------------------------------------------------------


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is not followed: the message goes to the URL given or nowhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(min(int(value), 86400))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def check_url(url: str, what: str) -> str:
    """An http(s) URL with a host (never file:, ftp: or data:), else ValueError, whose message does
    not repeat the URL (a webhook's URL is a secret)."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http:// or https:// URL with a host")
    return url.strip()


def redact(url: str) -> str:
    """What the log says of the webhook: its scheme and host, never its path (Slack's holds the
    token)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…"


@dataclass
class Item:
    request_id: int
    body: bytes
    #: the text and the link alone, sent once should the webhook refuse the whole (a 4xx)
    fallback: bytes | None = None


@dataclass
class Poster:
    """One thread posting the queued messages in order, each with bounded retries: exponential
    backoff with jitter on a network error, a timeout, 429 or a 5xx; a 429's or 503's Retry-After
    is honoured (a wait past the message's time left ends its retries). A 2xx ends it, as does
    any other answer (a 4xx says the message or the URL is wrong: retrying would not help)."""

    webhook: str
    limits: Limits
    stop: threading.Event = field(default_factory=threading.Event)
    posted: int = 0
    failed: int = 0

    def __post_init__(self) -> None:
        self.queue: queue.Queue[Item] = queue.Queue(self.limits.queue)
        self.lock = threading.Lock()
        self.queued: dict[int, bool] = {}  # request id in the queue -> still to be posted
        self.opener = urllib.request.build_opener(_NoRedirects())

    def offer(self, item: Item) -> bool:
        with self.lock:
            try:
                self.queue.put_nowait(item)
            except queue.Full:
                return False
            self.queued[item.request_id] = True
            return True

    def cancel(self, request_id: int) -> None:
        """A queued request that was decided (or expired) meanwhile is not posted."""
        with self.lock:
            if request_id in self.queued:
                self.queued[request_id] = False

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                item = self.queue.get(timeout=0.5)
            except queue.Empty:
                continue
            with self.lock:
                wanted = self.queued.pop(item.request_id, True)
            if not wanted:
                log.info("request %d is no longer pending: not posted", item.request_id)
                continue
            try:
                self.deliver(item)
            except Exception as e:  # the poster goes on with the next message
                self.failed += 1
                log.error("request %d not posted: %s", item.request_id, type(e).__name__)

    def post_once(self, body: bytes) -> tuple[int | None, str | None, str]:
        """(HTTP status or None for no answer, its Retry-After, a short printable note)."""
        req = urllib.request.Request(
            self.webhook,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "User-Agent": "pg-labels-console-notify",
            },
        )
        try:
            with self.opener.open(req, timeout=self.limits.http_timeout) as resp:
                answer = resp.read(self.limits.answer_bytes)
                return resp.status, None, _printable(answer)
        except urllib.error.HTTPError as e:
            try:
                answer = e.read(self.limits.answer_bytes)
            except Exception:
                answer = b""
            status = e.code
            ra = e.headers.get("Retry-After") if e.headers is not None else None
            e.close()
            return status, ra, _printable(answer)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            return None, None, _printable(str(reason).replace(self.webhook, "<webhook>").encode())

    def deliver(self, item: Item) -> bool | None:
        """Post one message: True once posted, False when given up, None when told to stop
        (a message waiting for its retry is then dropped)."""
        started = time.monotonic()
        body, fallback = item.body, item.fallback
        for attempt in range(1, self.limits.attempts + 1):
            status, ra, note = self.post_once(body)
            if status is not None and 200 <= status < 300:
                self.posted += 1
                log.info(
                    "request %d posted (HTTP %d, attempt %d)", item.request_id, status, attempt
                )
                return True
            retriable = status is None or status == 429 or status >= 500
            if not retriable and fallback is not None and attempt < self.limits.attempts:
                # the webhook refused the message itself (a block too long for it, say): the
                # text and the link alone, once
                log.warning(
                    "request %d: the webhook answered HTTP %d (%s): sending the text and link only",
                    item.request_id,
                    status,
                    note,
                )
                body, fallback = fallback, None
                continue
            if not retriable:
                self.failed += 1
                log.error(
                    "request %d not posted: the webhook answered HTTP %d (%s); not retried",
                    item.request_id,
                    status,
                    note,
                )
                return False
            wait = min(self.limits.backoff * 2 ** (attempt - 1), self.limits.backoff_max)
            wait *= 0.5 + random.random() / 2
            told = retry_after(ra) if status in (429, 503) else None
            if told is not None:
                wait = told
            left = self.limits.retry_time - (time.monotonic() - started)
            what = f"HTTP {status}" if status is not None else f"no answer ({note})"
            if attempt == self.limits.attempts or wait > left:
                self.failed += 1
                log.error(
                    "request %d not posted after %d attempts (%s): given up",
                    item.request_id,
                    attempt,
                    what,
                )
                return False
            log.warning(
                "request %d: %s; retrying in %.1f s (attempt %d of %d)",
                item.request_id,
                what,
                wait,
                attempt + 1,
                self.limits.attempts,
            )
            if self.stop.wait(wait):
                return None
        return False


def _printable(data: bytes) -> str:
    text = data.decode("utf-8", "replace")[:200]
    return "".join(c if c.isprintable() else " " for c in text).strip()


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
