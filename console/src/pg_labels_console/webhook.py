"""Posting the notifier's messages to a webhook (pg-labels-console notify): a queue and one
thread, retries with exponential backoff and jitter honouring Retry-After, every attempt, wait,
body and answer bounded (`Limits`)."""

from __future__ import annotations

import email.utils
import http.client
import logging
import queue
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any

from .approval_message import Limits

log = logging.getLogger("pg_labels_console.notify")

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
