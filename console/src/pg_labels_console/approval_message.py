"""The notifier's message (pg-labels-console notify): an approval request in the shape Slack's
incoming webhooks take, each value escaped and cut to its bound, and the notifier's bounds
(`Limits`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from . import db


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
