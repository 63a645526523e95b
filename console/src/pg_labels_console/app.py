"""The console's pages: Starlette, server-rendered Jinja2 (autoescaped), no JavaScript."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import jinja2
import psycopg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from pg_labels import Refusal

from . import db, svg
from .limits import SECURITY_HEADERS, Guarded, ServerTiming, Signer, Throttle, form_fields, same
from .sessions import Full, Session, SessionStore

COOKIE = "pg_labels_console"
# the anonymous sign-in form's nonce (its token is an HMAC of it: nothing kept on the server)
LOGIN_COOKIE = "pg_labels_console_login"
# a browser where a role signed in before: the role's failed sign-ins elsewhere do not slow it
KNOWN_COOKIE = "pg_labels_console_known"
PAGE_SIZE = 50
CHART_DAYS = 30
# the approver's queue reloads itself every REFRESH seconds (a Refresh header: no script)
REFRESH = 30
T = TypeVar("T")

SIGN_IN_FAILED = "Sign-in failed: no role that may sign in has this name and password."

# What the operator reads beside a blocked call: its rule's explanation, the HINT the database
# gives a call the rule refuses (the core's words, through the package's refusal classes).
EXPLANATIONS: dict[str, str] = {
    rule: cls.EXPLANATION for rule, cls in Refusal.BY_RULE.items() if cls.EXPLANATION
}


def _ts(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _pretty_json(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def label_class(label: str, escaping: set[str]) -> str:
    classes = ["chip"]
    if label.startswith("origin:"):
        classes.append("origin")
    if label in escaping:
        classes.append("escaping")
    return " ".join(classes)


def chip_list(labels: list[str] | None, marks: set[str]) -> list[tuple[str, str, str]]:
    """(label, CSS class, title) for each label: built once per row, not in the template."""
    out = []
    for label in labels or []:
        cls = label_class(label, marks)
        title = (
            "cannot be carried by the run's scope"
            if label in marks
            else "untrusted origin"
            if label.startswith("origin:")
            else ""
        )
        out.append((label, cls, title))
    return out


def _scope_of_label(label: str) -> str | None:
    if label == "installation":
        return "*"
    for prefix in ("company:", "area:"):
        if label.startswith(prefix):
            return label[len(prefix) :]
    return None


def escaping(labels: list[str] | None, scope: str | None) -> set[str]:
    """The scope labels `scope` cannot carry (the barrier rule, as labelset_escaping says)."""
    if not labels or not scope:
        return set()
    out = set()
    for label in labels:
        s = _scope_of_label(label)
        if s is None:
            continue
        if not (scope == "*" or s == scope or s.startswith(scope + "/")):
            out.add(label)
    return out


class Console:
    def __init__(
        self,
        database_url: str,
        secure_cookies: bool,
        idle_timeout: float,
        page_size: int = PAGE_SIZE,
        max_connections: int = 50,
        per_role: int = 5,
        throttle: Throttle | None = None,
        refresh: int = REFRESH,
    ) -> None:
        self.refresh = refresh
        self.database_url = database_url
        self.page_size = page_size
        self.secure_cookies = secure_cookies
        self.sessions = SessionStore(idle_timeout, max_connections, per_role)
        self.signer = Signer()
        self.throttle = throttle or Throttle()
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.env.filters["ts"] = _ts
        self.env.filters["pretty_json"] = _pretty_json
        self.env.filters["short"] = svg.short
        self.env.globals["label_class"] = label_class
        self.env.globals["explanations"] = EXPLANATIONS

    # -- sessions and responses ------------------------------------------------------------

    def render(
        self, request: Request, s: Session | None, name: str, status: int = 200, **ctx: Any
    ) -> Response:
        flash = []
        if s is not None:
            flash, s.flash = s.flash, []
        ctx.setdefault("csrf", s.csrf if s is not None else "")
        html = self.env.get_template(name).render(session=s, flash=flash, request=request, **ctx)
        resp = HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
        if s is not None:
            self.set_cookie(resp, s)
        return resp

    def set_cookie(self, resp: Response, s: Session) -> None:
        resp.set_cookie(
            COOKIE, s.id, httponly=True, samesite="lax", secure=self.secure_cookies, path="/"
        )

    def redirect(self, url: str, s: Session | None = None) -> Response:
        resp = RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)
        if s is not None:
            self.set_cookie(resp, s)
        return resp

    def forbidden(self, request: Request, why: str) -> Response:
        return self.render(request, None, "forbidden.html", status=403, why=why)

    def signed_in(self, request: Request) -> tuple[Session | None, Response | None]:
        """The signed-in session of a GET, or where to send the browser instead."""
        s, expired = self.sessions.get(request.cookies.get(COOKIE))
        if s is None or s.role is None:
            go = "/login?expired=1" if expired else "/login"
            if (nxt := follow(request.url.path)) is not None:
                # a link (the notifier's, to a request's page) leads there after signing in
                go += ("&" if "?" in go else "?") + urlencode({"next": nxt})
            return None, self.redirect(go)
        return s, None

    async def posted(
        self, request: Request, signed_in: bool = False
    ) -> tuple[Session, dict[str, str]] | Response:
        """The session of a POST whose CSRF token matches it (and, if `signed_in`, that has
        signed in), and its form; the 403 to answer otherwise."""
        s, _ = self.sessions.get(request.cookies.get(COOKIE))
        if s is None:
            return self.forbidden(request, "Your session has ended or expired. Sign in again.")
        fields = form_fields(await request.body())  # a urlencoded form of at most 64 KiB (Guarded)
        if fields is None or not same(fields.get("csrf", ""), s.csrf):
            return self.forbidden(request, "The form's security token does not match your session.")
        if signed_in and s.role is None:
            return self.forbidden(request, "Sign in first.")
        return s, fields

    async def with_db(self, s: Session, work: Callable[[db.Conn], T], scoped: bool = True) -> T:
        """Run `work` on the session's connection in one transaction, in the scope it entered."""

        def run() -> T:
            with s.lock:
                if s.conn is None or s.conn.closed:
                    raise ConnectionLost()
                try:
                    with s.conn.transaction():
                        if scoped and s.scope:
                            db.enter(s.conn, s.scope)
                        return work(s.conn)
                except psycopg.OperationalError as e:
                    if s.conn.closed or s.conn.broken:
                        raise ConnectionLost() from e
                    raise

        return await run_in_threadpool(run)

    # -- pages -----------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return self.redirect("/runs")

    async def login_page(self, request: Request) -> Response:
        s, expired = self.sessions.get(request.cookies.get(COOKIE))
        nxt = follow(request.query_params.get("next"))
        if s is not None and s.role is not None:
            return self.redirect(nxt or "/runs")
        notice = None
        if expired or request.query_params.get("expired"):
            notice = "Your session expired. Sign in again."
        elif request.query_params.get("lost"):
            notice = "The connection to the database was lost. Sign in again."
        return self.login_form(request, 200, notice, None, "", nxt=nxt)

    def login_form(
        self,
        request: Request,
        status: int,
        notice: str | None,
        error: str | None,
        role: str,
        headers: dict[str, str] | None = None,
        nxt: str | None = None,
    ) -> Response:
        """The sign-in form: its token is an HMAC of a fresh nonce in a cookie, so an anonymous
        visitor costs the console nothing between requests."""
        nonce = secrets.token_urlsafe(16)
        resp = self.render(
            request,
            None,
            "login.html",
            status=status,
            notice=notice,
            error=error,
            role=role,
            csrf=self.signer.sign("login", nonce),
            next=nxt,
        )
        resp.set_cookie(
            LOGIN_COOKIE,
            nonce,
            httponly=True,
            samesite="strict",
            secure=self.secure_cookies,
            path="/login",
            max_age=3600,
        )
        for k, v in (headers or {}).items():
            resp.headers[k] = v
        return resp

    async def login(self, request: Request) -> Response:
        s, _ = self.sessions.get(request.cookies.get(COOKIE))
        if s is not None and s.role is not None:
            return self.redirect("/runs", s)
        form = form_fields(await request.body())
        if form is None or not self.signer.valid(
            "login", request.cookies.get(LOGIN_COOKIE), form.get("csrf")
        ):
            return self.forbidden(
                request, "The form's security token does not match. Load the sign-in page again."
            )
        role, password = form.get("role", "").strip(), form.get("password", "")
        nxt = follow(form.get("next"))
        address = request.client.host if request.client else "unknown"
        nonce, _, mac = request.cookies.get(KNOWN_COOKIE, "").partition(".")
        known = nonce if self.signer.valid("known", f"{role}\0{nonce}", mac) else None
        wait = self.throttle.wait(address, role, known)
        if wait > 0:
            # refused before the password is tried: no guess counts while it waits
            return self.login_form(
                request,
                429,
                None,
                f"Too many failed sign-ins. Try again in {int(wait) + 1} seconds.",
                role[:63],
                headers={"Retry-After": str(int(wait) + 1)},
            )
        if (
            not role
            or not password
            or len(role) > 63
            or len(password) > 1024
            or "\0" in role + password
        ):
            # (no role is named so; libpq takes no NUL) a failure like any other
            self.throttle.failed(address, role[:63], known)
            return self.login_form(
                request, 401, None, SIGN_IN_FAILED, role[:63].replace("\0", ""), nxt=nxt
            )
        try:
            conn = await run_in_threadpool(db.connect, self.database_url, role, password)
        except db.SignInFailed:
            self.throttle.failed(address, role, known)
            return self.login_form(request, 401, None, SIGN_IN_FAILED, role, nxt=nxt)
        except db.DatabaseUnreachable:
            return self.login_form(
                request, 503, None, "The database could not be reached. Try again later.", role
            )
        # room is made only for a role that signed in: a wrong password ends no one's session
        try:
            await run_in_threadpool(self.sessions.room_for, role)
            s = self.sessions.add(role, conn)
        except Full:
            await run_in_threadpool(conn.close)
            return self.login_form(
                request,
                503,
                None,
                "The console holds as many sessions as it may. Try again later.",
                role,
                headers={"Retry-After": "60"},
            )
        resp = self.redirect("/scope?" + urlencode({"next": nxt}) if nxt else "/scope", s)
        resp.delete_cookie(LOGIN_COOKIE, path="/login")
        browser = secrets.token_urlsafe(16)  # this browser, for this role
        mark = self.signer.sign("known", role + "\0" + browser)
        resp.set_cookie(
            KNOWN_COOKIE,
            f"{browser}.{mark}",
            httponly=True,
            samesite="strict",
            secure=self.secure_cookies,
            path="/login",
            max_age=90 * 86400,
        )
        return resp

    async def logout(self, request: Request) -> Response:
        posted = await self.posted(request)
        if isinstance(posted, Response):
            return posted
        s = posted[0]
        self.sessions.drop(s)
        resp = self.redirect("/login")
        resp.delete_cookie(COOKIE, path="/")
        return resp

    async def scope_page(self, request: Request) -> Response:
        s, away = self.signed_in(request)
        if s is None:
            return away or self.redirect("/login")
        try:
            scopes = await self.with_db(s, db.list_scopes, scoped=False)
        except ConnectionLost:
            return self.lost(s)
        nxt = follow(request.query_params.get("next"))
        return self.render(request, s, "scope.html", scopes=scopes, error=None, next=nxt)

    async def choose_scope(self, request: Request) -> Response:
        posted = await self.posted(request, signed_in=True)
        if isinstance(posted, Response):
            return posted
        s, form = posted
        scope = (form.get("other") or form.get("scope") or "").strip()

        def check(conn: db.Conn) -> None:
            db.enter(conn, scope)

        try:
            await self.with_db(s, check, scoped=False)
        except ConnectionLost:
            return self.lost(s)
        except psycopg.Error as e:
            scopes = await self.with_db(s, db.list_scopes, scoped=False)
            return self.render(
                request,
                s,
                "scope.html",
                status=403,
                scopes=scopes,
                error=f"The database refused scope {scope!r}: {message(e)}",
                next=follow(form.get("next")),
            )
        s.scope = scope
        return self.redirect(follow(form.get("next")) or "/runs", s)

    def lost(self, s: Session) -> Response:
        self.sessions.drop(s)
        return self.redirect("/login?lost=1")

    def needs_scope(self, s: Session, request: Request | None = None) -> Response | None:
        if s.scope:
            return None
        nxt = follow(request.url.path) if request is not None else None
        return self.redirect("/scope?" + urlencode({"next": nxt}) if nxt else "/scope", s)

    async def page(
        self, request: Request, template: str, work: Callable[[db.Conn], dict[str, Any]]
    ) -> Response:
        s, away = self.signed_in(request)
        if s is None:
            return away or self.redirect("/login")
        if (go := self.needs_scope(s, request)) is not None:
            return go
        try:
            ctx = await self.with_db(s, work)
        except ConnectionLost:
            return self.lost(s)
        except NotFound as e:
            return self.render(request, s, "notfound.html", status=404, what=str(e))
        except psycopg.Error as e:
            return self.render(request, s, "error.html", status=500, error=message(e))
        return self.render(request, s, template, **ctx)

    async def runs_page(self, request: Request) -> Response:
        q = request.query_params
        f = db.RunFilter(agent=q.get("agent") or None, label=(q.get("label") or "").strip() or None)
        errors = []
        for name in ("since", "until"):
            if q.get(name):
                try:
                    value = datetime.fromisoformat(q[name])
                    setattr(f, name, value if value.tzinfo else value.replace(tzinfo=timezone.utc))
                except ValueError:
                    errors.append(f"{name}: not a date and time")
        if q.get("after"):
            try:
                at, _, rid = q["after"].rpartition("_")
                f.after = (datetime.fromisoformat(at), uuid.UUID(rid))
            except ValueError:
                errors.append("not a page of this list")

        def work(conn: db.Conn) -> dict[str, Any]:
            rows = db.runs(conn, f, self.page_size + 1)
            more = len(rows) > self.page_size
            rows = rows[: self.page_size]
            nxt = None
            if more:
                last = rows[-1]
                params = {k: v for k, v in q.items() if k != "after" and v}
                params["after"] = f"{last['opened_at'].isoformat()}_{last['id']}"
                nxt = params
            return {
                "runs": rows,
                "next": nxt,
                "filters": dict(q),
                "errors": errors,
                "first": {k: v for k, v in q.items() if k != "after" and v} if f.after else None,
            }

        return await self.page(request, "runs.html", work)

    async def run_page(self, request: Request) -> Response:
        try:
            run_id = uuid.UUID(request.path_params["run_id"])
        except ValueError:
            run_id = None

        def work(conn: db.Conn) -> dict[str, Any]:
            if run_id is None:
                raise NotFound("no such run")
            run = db.run(conn, run_id)
            steps = db.steps(conn, run_id)
            if run is None and not steps:
                raise NotFound("No run with this id is visible in this scope.")
            decided = {st["request_id"]: st for st in steps if st["kind"] == "approval_decided"}
            requests: dict[int, db.Row] = {}
            if any(st["kind"] == "approval_requested" for st in steps):
                try:  # a role not granted pg_labels.approval_requests sees decisions only
                    with conn.transaction():
                        requests = db.run_requests(conn, run_id)
                except psycopg.errors.InsufficientPrivilege:
                    pass
            scope = run["scope"] if run else None
            for st in steps:  # what each row shows, prepared here: a 1,000-step page renders fast
                st["chips"] = chip_list(st["labels"], escaping(st["labels"], scope))
                st["args_text"] = _pretty_json(st["args"])
                st["when"] = _ts(st["created_at"])
            verdict = db.verify(conn, run_id)
            lineage = db.lineage(conn, run_id)
            graph = svg.lineage_graph(run, run_id, lineage) if lineage else None
            return {
                "run": run,
                "run_id": run_id,
                "steps": steps,
                "decided": decided,
                "requests": requests,
                "run_escaping": escaping(run["labels"], scope) if run else set(),
                "verdict": verdict,
                "lineage": lineage,
                "graph": graph,
            }

        return await self.page(request, "run.html", work)

    async def approvals_page(self, request: Request) -> Response:
        def work(conn: db.Conn) -> dict[str, Any]:
            pending = db.pending_requests(conn)
            sources = db.label_sources(conn, list({p["run_id"] for p in pending}))
            by_run: dict[Any, list[dict[str, Any]]] = {}
            for src in sources:
                by_run.setdefault(src["run_id"], []).append(src)
            for p in pending:
                p["sources"] = [x for x in by_run.get(p["run_id"], []) if x["id"] <= p["id"]]
                p["escaping"] = escaping(p["run_labels"], p["scope"])
            return {
                "pending": pending,
                "decisions": db.closed_requests(conn),
                "refresh": self.refresh,
            }

        resp = await self.page(request, "approvals.html", work)
        if resp.status_code == 200 and self.refresh > 0:
            # the queue reloads itself (no script): a new request shows within this period
            resp.headers["Refresh"] = str(self.refresh)
        return resp

    async def request_page(self, request: Request) -> Response:
        request_id = _request_id(request.path_params["request_id"])

        def work(conn: db.Conn) -> dict[str, Any]:
            # one answer for an id that is not a request, one that does not exist and one the
            # role may not read
            p = db.approval_request(conn, request_id) if request_id is not None else None
            if p is None:
                raise NotFound("No approval request with this id is visible in this scope.")
            p["sources"] = [x for x in db.label_sources(conn, [p["run_id"]]) if x["id"] <= p["id"]]
            p["escaping"] = escaping(p["run_labels"], p["scope"] or p["run_scope"])
            try:  # a role that may not read the gate's steps reads the rest
                with conn.transaction():
                    why = db.why_it_asks(conn, p["run_id"], p["id"], p["tool"], p["args"])
            except psycopg.errors.InsufficientPrivilege:
                why = None
            return {"p": p, "why": why}

        return await self.page(request, "request.html", work)

    async def decide(self, request: Request) -> Response:
        posted = await self.posted(request, signed_in=True)
        if isinstance(posted, Response):
            return posted
        s, form = posted
        request_id = _request_id(request.path_params["request_id"])
        if request_id is None:
            return self.forbidden(request, "No such request.")
        # back to the page the form was on: the queue, or the request's own page
        back = f"/approvals/{request_id}" if form.get("from") == "request" else "/approvals"
        choice = form.get("decision")
        if choice not in ("grant", "deny"):
            s.flash.append(("error", "Choose grant or deny."))
            return self.redirect(back, s)
        reason = form.get("reason", "").strip() or None
        try:
            await self.with_db(
                s, lambda conn: db.decide(conn, request_id, choice == "grant", reason)
            )
        except ConnectionLost:
            return self.lost(s)
        except psycopg.Error as e:
            s.flash.append(
                ("error", f"The database refused to decide request {request_id}: {message(e)}")
            )
            return self.redirect(back, s)
        s.flash.append(
            ("ok", f"Request {request_id} {'granted' if choice == 'grant' else 'denied'}.")
        )
        return self.redirect(back, s)

    async def refusals_page(self, request: Request) -> Response:
        def work(conn: db.Conn) -> dict[str, Any]:
            rows = db.refusals_by_day(conn, CHART_DAYS)
            chart = svg.refusals_chart(rows, CHART_DAYS, datetime.now(timezone.utc))
            return {"chart": chart, "recent": db.recent_refusals(conn), "days": CHART_DAYS}

        return await self.page(request, "refusals.html", work)


# the pages a link may lead to through the sign-in and the scope (the notifier links to a
# request's page): a path of the console, never another site's address
_FOLLOW = re.compile(r"/approvals/[0-9]{1,19}|/runs/[0-9a-fA-F-]{36}")


def follow(path: str | None) -> str | None:
    """`path` if it is one of the console's pages a link may lead to after signing in."""
    return path if path and _FOLLOW.fullmatch(path) else None


def _request_id(text: str) -> int | None:
    """A request id of the path: a bigint above 0 (anything else is a request that does not
    exist)."""
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if 0 < value < 2**63 else None


class ConnectionLost(Exception):
    pass


class NotFound(Exception):
    pass


def message(e: psycopg.Error) -> str:
    """The database's own message (and SQLSTATE), nothing of the console's."""
    text = e.diag.message_primary or str(e).strip()
    if e.diag.message_detail:
        text += " " + e.diag.message_detail
    return f"{text} (SQLSTATE {e.sqlstate})" if e.sqlstate else text


def create_app(
    database_url: str,
    *,
    secure_cookies: bool = False,
    idle_timeout: float = 1800,
    page_size: int = PAGE_SIZE,
    max_connections: int = 50,
    per_role: int = 5,
    throttle: Throttle | None = None,
    refresh: int = REFRESH,
) -> Starlette:
    c = Console(
        database_url,
        secure_cookies,
        idle_timeout,
        page_size,
        max_connections,
        per_role,
        throttle,
        refresh,
    )
    Handler = Callable[[Request], Awaitable[Response]]
    routes: list[tuple[str, Handler, list[str]]] = [
        ("/", c.index, ["GET"]),
        ("/login", c.login_page, ["GET"]),
        ("/login", c.login, ["POST"]),
        ("/logout", c.logout, ["POST"]),
        ("/scope", c.scope_page, ["GET"]),
        ("/scope", c.choose_scope, ["POST"]),
        ("/runs", c.runs_page, ["GET"]),
        ("/runs/{run_id}", c.run_page, ["GET"]),
        ("/approvals", c.approvals_page, ["GET"]),
        ("/approvals/{request_id}", c.request_page, ["GET"]),
        ("/approvals/{request_id}", c.decide, ["POST"]),
        ("/refusals", c.refusals_page, ["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def sweeper() -> None:  # idle sessions' connections close even when no one asks
            while True:
                await asyncio.sleep(min(30.0, idle_timeout / 2))
                await run_in_threadpool(c.sessions.sweep)

        task = asyncio.create_task(sweeper())
        try:
            yield
        finally:
            task.cancel()
            c.sessions.close_all()

    async def failed(request: Request, exc: Exception) -> Response:
        # Starlette's own 500 page, with the console's headers (Guarded sits inside it)
        return Response(
            "Internal Server Error",
            status_code=500,
            media_type="text/plain",
            headers=SECURITY_HEADERS,
        )

    app = Starlette(
        routes=[Route(p, h, methods=m) for p, h, m in routes],
        lifespan=lifespan,
        middleware=[Middleware(Guarded), Middleware(ServerTiming)],
        exception_handlers={Exception: failed},
    )
    app.state.console = c
    return app
