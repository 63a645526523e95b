"""pg-labels-console notify against a real webhook receiver (http.server in this process) and the
suite's database: a new request reaches it once, in the shape of Slack's incoming webhooks, with
a link to the console's page; another company's request never does; a 500 and a 429 (with its
Retry-After) are retried; the webhook's URL and the role's password are never logged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pg_labels_console.approval_message import Limits, encode, message
from pg_labels_console.webhook import retry_after

from conftest import ADMIN_DSN, DB_URL, PASSWORDS, admin

CONSOLE = "https://console.example.test"
TOKEN = "T0000/B0000/s3cr3t-w3bh00k-t0k3n"  # Slack's webhook URLs hold a token in the path


@dataclass
class Received:
    at: float
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Receiver:
    """A webhook: records each POST; answers by a script per request id (default 200)."""

    posts: list[Received] = field(default_factory=list)
    script: dict[int, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, request_id: int) -> list[Received]:
        with self.lock:
            return [p for p in self.posts if request_of(p.body) == request_id]


def request_of(body: dict[str, Any]) -> int | None:
    m = re.match(r"Approval request (\d+):", body.get("text", ""))
    return int(m.group(1)) if m else None


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw)
            got = Received(time.monotonic(), self.path, dict(self.headers), body)
            with rec.lock:
                rec.posts.append(got)
                answers = rec.script.get(request_of(body) or -1) or []
                status, headers = answers.pop(0) if answers else (200, {})
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"no")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec, f"http://127.0.0.1:{server.server_address[1]}/services/{TOKEN}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def notifier(
    receiver: tuple[Receiver, str], tmp_path: Path
) -> Iterator[Callable[..., tuple[Receiver, Path]]]:
    procs: list[subprocess.Popen[bytes]] = []
    rec, url = receiver

    def start(*extra: str, role: str = "console_apo") -> tuple[Receiver, Path]:
        log = tmp_path / f"notify-{len(procs)}.log"
        env = {
            **os.environ,
            "PG_LABELS_WEBHOOK_URL": url,
            "PG_LABELS_NOTIFY_PASSWORD": PASSWORDS[role],
        }
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pg_labels_console.cli",
                    "notify",
                    "--database",
                    DB_URL,
                    "--role",
                    role,
                    "--console-url",
                    CONSOLE,
                    *extra,
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log.open("wb"),
            )
        )
        wait_for(lambda: "caught up" in log.read_text(), 20, f"the notifier's start: {log}")
        return rec, log

    try:
        yield start
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for p in procs:
            assert p.returncode in (0, -15), p.returncode
        for log in tmp_path.glob("notify-*.log"):
            text = log.read_text()
            assert TOKEN not in text and "s3cr3t" not in text, "the webhook's URL was logged"
            assert PASSWORDS["console_apo"] not in text, "the password was logged"


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def as_role(role: str, *statements: tuple[str, tuple[Any, ...]]) -> Any:
    """Statements as `role`, in one transaction (committed): the last one's first value."""
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
            row = None
            for query, params in statements:
                cur = conn.execute(query, params)
                row = cur.fetchone() if cur.description else None
    return row[0] if row else None


def new_request(
    ticket: int, writer: str = "demo_platform", scope: str = "acme/platform"
) -> tuple[int, str]:
    """A run of `writer` on untrusted input whose reversible write asks: (request id, run id)."""
    args = json.dumps({"ticket": ticket, "status": "closed"})
    run = as_role(
        writer,
        (
            "INSERT INTO pg_labels.runs (agent, scope) VALUES ('notify-bot', %s) RETURNING id",
            (scope,),
        ),
    )
    req = as_role(
        writer,
        (
            "INSERT INTO pg_labels.steps (run_id, kind, labels, args) VALUES"
            """ (%s, 'input', '{origin:slack/T01/C77}', '{"text": "close it <!channel>"}')""",
            (run,),
        ),
        ("SELECT decision FROM pg_labels.gate(%s, 'tickets.update', %s::jsonb)", (run, args)),
        (
            "SELECT pg_labels.request_approval(%s, 'tickets.update', %s::jsonb, '{}',"
            " 'the customer asked <@U123>')",
            (run, args),
        ),
    )
    return int(req), str(run)


def script_next(rec: Receiver, *answers: tuple[int, dict[str, str]]) -> None:
    """Answers for the next requests (their ids are not known before they are made: steps' ids
    come from one sequence, so the next few are scripted)."""
    last = int(admin("SELECT max(id) AS m FROM pg_labels.steps")[0]["m"])
    with rec.lock:
        for rid in range(last + 1, last + 10):
            rec.script[rid] = list(answers)


def test_a_new_request_reaches_the_webhook_once(
    notifier: Callable[..., tuple[Receiver, Path]],
) -> None:
    rec, log = notifier("--resync", "1")
    request, run = new_request(6001)
    [got] = wait_for(lambda: rec.of(request), 10, "the post")
    assert got.path == f"/services/{TOKEN}"
    assert got.headers["Content-Type"].startswith("application/json")
    body = got.body
    link = f"{CONSOLE}/approvals/{request}"
    assert isinstance(body["text"], str) and link in body["text"]
    assert body["blocks"][0]["type"] == "header"
    blocks = json.dumps(body["blocks"])
    assert "tickets.update" in blocks and run in blocks
    assert '\\"ticket\\": 6001' in blocks  # the real arguments
    assert "approval_required" in blocks or "untrusted" in blocks  # why it asks
    assert "the customer asked &lt;@U123&gt;" in blocks, "a mention written by a service is text"
    assert any(
        e.get("url") == link
        for b in body["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
    )
    # a catch-up (every second here) and the decision's notification post nothing more
    as_role(
        "console_apo",
        ("SELECT pg_labels.enter_scope('acme')", ()),
        ("SELECT pg_labels.decide_approval(%s, true, 'fine')", (request,)),
    )
    time.sleep(3)
    assert len(rec.of(request)) == 1
    assert "listening on pg_labels_approvals as console_apo" in log.read_text()


def test_pending_requests_are_posted_at_start(
    notifier: Callable[..., tuple[Receiver, Path]],
) -> None:
    request, _ = new_request(6002)
    rec, _ = notifier()
    wait_for(lambda: rec.of(request), 10, "the catch-up's post")
    time.sleep(1)
    assert len(rec.of(request)) == 1


def test_another_company_s_request_never_reaches_it(
    notifier: Callable[..., tuple[Receiver, Path]],
) -> None:
    rec, log = notifier()
    theirs, their_run = new_request(6003, writer="console_globex_writer", scope="globex/support")
    ours, _ = new_request(6004)  # notified after theirs: once ours is posted, theirs was read
    wait_for(lambda: rec.of(ours), 10, "our request's post")
    time.sleep(1)
    assert rec.of(theirs) == []
    with rec.lock:
        everything = json.dumps([p.body for p in rec.posts])
    assert their_run not in everything and '"ticket\\": 6003' not in everything
    assert f"request {theirs} " not in log.read_text()


def test_a_500_is_retried(notifier: Callable[..., tuple[Receiver, Path]]) -> None:
    rec, log = notifier()
    script_next(rec, (500, {}))
    request, _ = new_request(6005)
    assert request in rec.script
    posts = wait_for(lambda: len(rec.of(request)) >= 2 and rec.of(request), 15, "the retry")
    assert posts[0].body == posts[1].body
    time.sleep(1.5)
    assert len(rec.of(request)) == 2
    text = log.read_text()
    assert f"request {request}: HTTP 500; retrying" in text
    assert f"request {request} posted (HTTP 200, attempt 2)" in text


def test_a_429_s_retry_after_is_honoured(notifier: Callable[..., tuple[Receiver, Path]]) -> None:
    rec, log = notifier()
    script_next(rec, (429, {"Retry-After": "2"}))
    request, _ = new_request(6006)
    assert request in rec.script
    posts = wait_for(lambda: len(rec.of(request)) >= 2 and rec.of(request), 15, "the retry")
    waited = posts[1].at - posts[0].at
    assert 1.9 <= waited < 6, waited
    assert f"request {request}: HTTP 429; retrying in 2.0 s" in log.read_text()


def test_a_refused_message_goes_as_its_text_and_link(
    notifier: Callable[..., tuple[Receiver, Path]],
) -> None:
    rec, log = notifier()
    script_next(rec, (400, {}))
    request, _ = new_request(6007)
    posts = wait_for(lambda: len(rec.of(request)) >= 2 and rec.of(request), 15, "the text alone")
    first, second = posts[0].body, posts[1].body
    assert "blocks" in first and "blocks" not in second
    assert f"{CONSOLE}/approvals/{request}" in second["text"]
    time.sleep(1.0)
    assert len(rec.of(request)) == 2
    assert f"request {request}: the webhook answered HTTP 400" in log.read_text()


# -- the message and the bounds, without the database ---------------------------------------


def test_escaped_values_stay_within_slack_s_limits() -> None:
    """Escaping lengthens a value (`&` is 5 characters to Slack): the limits count what Slack
    receives, 3,000 characters a section's text and 2,000 a field's."""
    req = {
        "id": 8,
        "run_id": "00000000-0000-0000-0000-000000000008",
        "run_scope": "acme/" + "&" * 400,
        "agent": "<" * 400,
        "tool": "&" * 400,
        "args": {"body": "<p>&amp;</p>" * 2000},
        "labels": ["tag:" + "&" * 300, "origin:<x>"],
        "reason": "&<>" * 2000,
        "requested_by": ">" * 400,
        "expires_at": None,
    }
    body = message(req, "&" * 2000, CONSOLE, Limits())
    for b in body["blocks"]:
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= 3000, b["text"]["text"][:80]
        for f in b.get("fields", []):
            assert len(f["text"]) <= 2000
    assert "characters in all: the whole in the console" in json.dumps(body)
    # cut between escapes, never inside one (in what Slack parses: plain_text is not)
    cut = json.dumps([body["text"], *mrkdwn_of(body["blocks"])], ensure_ascii=False)
    assert "…" in cut and not re.search(r"&(a|am|l|g|lt|gt|amp)?…", cut)


def test_the_body_is_bounded_and_hostile_values_stay_text() -> None:
    req = {
        "id": 7,
        "run_id": "00000000-0000-0000-0000-000000000007",
        "run_scope": "acme/platform",
        "agent": "<!everyone> bot",
        "tool": "```<https://evil.example|bank>",
        "args": {"x": "y" * 50_000},
        "labels": ["origin:slack/T1"],
        "reason": "r" * 5000,
        "requested_by": "demo_platform",
        "expires_at": None,
    }
    limits = Limits()
    body = message(req, None, CONSOLE, limits)
    for b in body["blocks"]:
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= 3000
    # what Slack parses (`text` and mrkdwn) holds them as text; plain_text is never parsed
    parsed = [body["text"], *mrkdwn_of(body["blocks"])]
    text = json.dumps(parsed)
    assert "<!everyone>" not in text and "<https://evil.example|bank>" not in text
    assert "&lt;!everyone&gt;" in text
    data = encode(body, limits)
    assert len(data) <= limits.body
    small = encode(body, Limits(body=2048))
    assert len(small) <= 2048 and f"{CONSOLE}/approvals/7" in small.decode()


def mrkdwn_of(value: Any) -> list[str]:
    if isinstance(value, dict):
        if value.get("type") == "mrkdwn":
            return [value["text"]]
        return [t for v in value.values() for t in mrkdwn_of(v)]
    if isinstance(value, list):
        return [t for v in value for t in mrkdwn_of(v)]
    return []


def test_retry_after_forms() -> None:
    assert retry_after("3") == 3.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412478.0) == 2.0
    assert retry_after("soon") is None and retry_after(None) is None


def test_it_catches_up_after_its_connection_is_lost(
    notifier: Callable[..., tuple[Receiver, Path]],
) -> None:
    rec, log = notifier()
    killed = admin(
        "SELECT pg_terminate_backend(pid) AS k FROM pg_stat_activity"
        " WHERE application_name = 'pg-labels-console-notify' AND usename = 'console_apo'"
    )
    assert len(killed) == 2
    request, _ = new_request(6007)  # notified while no one listens: found by the catch-up
    wait_for(lambda: rec.of(request), 20, "the post after the reconnect")
    text = log.read_text()
    assert "reconnecting" in text and text.count("caught up") >= 2
    time.sleep(1)
    assert len(rec.of(request)) == 1


def test_a_wrong_password_ends_it(tmp_path: Path) -> None:
    log = tmp_path / "wrong.log"
    env = {
        **os.environ,
        "PG_LABELS_WEBHOOK_URL": f"http://127.0.0.1:9/services/{TOKEN}",
        "PG_LABELS_NOTIFY_PASSWORD": "not-the-password",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pg_labels_console.cli",
            "notify",
            "--database",
            DB_URL,
            "--role",
            "console_apo",
            "--console-url",
            CONSOLE,
        ],
        env=env,
        stderr=log.open("wb"),
        timeout=30,
    )
    assert done.returncode == 2
    text = log.read_text()
    assert "sign-in as console_apo failed" in text
    assert TOKEN not in text and "not-the-password" not in text
