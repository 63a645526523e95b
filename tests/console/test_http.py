"""HTTP-level tests of the console (Starlette's TestClient, in process, against the real database):
sign-in, cookies, CSRF, session expiry, scopes, escaping of hostile values, the database's
refusals shown as they are."""

from __future__ import annotations

import time
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from pg_labels_console import db
from pg_labels_console.app import SIGN_IN_FAILED, create_app

from conftest import DB_URL, PASSWORDS, admin, csrf_of


def client(**kw: Any) -> TestClient:
    # a Secure cookie travels only over https: the test client then speaks it
    base = "https://testserver" if kw.get("secure_cookies") else "http://testserver"
    return TestClient(create_app(DB_URL, **kw), base_url=base, follow_redirects=False)


@pytest.fixture
def anon() -> Iterator[TestClient]:
    with client() as c:
        yield c


def sign_in(c: TestClient, role: str, password: str | None = None, scope: str | None = None) -> Any:
    token = csrf_of(c.get("/login").text)
    r = c.post(
        "/login",
        data={
            "csrf": token,
            "role": role,
            "password": PASSWORDS[role] if password is None else password,
        },
    )
    if scope is not None:
        assert r.status_code == 303, r.text
        token = csrf_of(c.get("/scope").text)
        r2 = c.post("/scope", data={"csrf": token, "scope": scope})
        assert r2.status_code == 303 and r2.headers["location"] == "/runs", r2.text
    return r


def signed_in(role: str, scope: str, **kw: Any) -> TestClient:
    c = client(**kw)
    sign_in(c, role, scope=scope)
    return c


# -- signing in -------------------------------------------------------------------------------


def test_sign_in_and_cookie_flags(anon: TestClient) -> None:
    first = anon.get("/login")
    before = anon.cookies.get("pg_labels_console")
    r = sign_in(anon, "console_ana")
    assert r.status_code == 303 and r.headers["location"] == "/scope"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower() and "Secure" not in cookie
    after = anon.cookies.get("pg_labels_console")
    assert after and after != before, "the session id changes at sign-in"
    assert "ana-secret" not in cookie and "ana-secret" not in first.text
    page = anon.get("/scope")
    assert page.status_code == 200 and 'id="role">console_ana<' in page.text
    assert '<option value="acme/platform"' in page.text
    assert page.headers["cache-control"] == "no-store"
    assert (
        "script-src" not in page.headers["content-security-policy"]
    )  # default-src 'none': no script


def test_secure_cookies_flag() -> None:
    with client(secure_cookies=True) as c:
        r = sign_in(c, "console_ana")
        assert "Secure" in r.headers["set-cookie"]


@pytest.mark.parametrize(
    "role,password",
    [
        ("console_ana", "wrong"),  # a wrong password
        ("console_nologin", "nologin-secret"),  # a role without LOGIN, with its right password
        ("no_such_role", "whatever"),  # no such role
    ],
)
def test_failed_sign_in_says_one_thing(anon: TestClient, role: str, password: str) -> None:
    r = sign_in(anon, role, password)
    assert r.status_code == 401
    assert SIGN_IN_FAILED in r.text
    assert "LOGIN" not in r.text and "permitted" not in r.text and "authentication" not in r.text
    assert anon.get("/runs").headers["location"].startswith("/login")


# -- sessions and CSRF ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/runs",
        "/runs/00000000-0000-0000-0000-000000000000",
        "/approvals",
        "/refusals",
        "/scope",
    ],
)
def test_pages_need_a_session(anon: TestClient, path: str) -> None:
    r = anon.get(path)
    assert (r.status_code == 303 and r.headers["location"].startswith("/login")) or (
        r.headers["location"] == "/runs" and path == "/"
    )


@pytest.mark.parametrize("path", ["/scope", "/logout", "/approvals/1", "/login"])
def test_posts_without_a_session_are_refused(anon: TestClient, path: str) -> None:
    r = anon.post(
        path,
        data={
            "csrf": "x",
            "scope": "acme",
            "decision": "grant",
            "role": "console_apo",
            "password": PASSWORDS["console_apo"],
        },
    )
    assert r.status_code == 403


def pending(request_id: int) -> bool:
    return not admin(
        "SELECT 1 FROM pg_labels.steps WHERE kind = 'approval_decided' AND request_id = %s",
        request_id,
    )


def test_csrf_is_checked_on_every_post(ids: dict[str, Any]) -> None:
    with signed_in("console_apo", "acme") as c:
        token = csrf_of(c.get("/runs").text)
        for data in ({}, {"csrf": ""}, {"csrf": token[:-1] + ("A" if token[-1] != "A" else "B")}):
            data = {**data, "decision": "grant", "reason": "csrf"}
            assert c.post(f"/approvals/{ids['grant_me']}", data=data).status_code == 403
            assert c.post("/scope", data={**data, "scope": "acme/platform"}).status_code == 403
            assert c.post("/logout", data=data).status_code == 403
        assert pending(ids["grant_me"]), "a forged form decided nothing"
        assert 'id="scope-in-force">acme<' in c.get("/runs").text, "nor changed the scope"
        # another session's token is not this session's
        with signed_in("console_apo", "acme") as other:
            foreign = csrf_of(other.get("/runs").text)
        assert (
            c.post(
                f"/approvals/{ids['grant_me']}", data={"csrf": foreign, "decision": "grant"}
            ).status_code
            == 403
        )
        assert pending(ids["grant_me"])


def test_idle_sessions_expire(ids: dict[str, Any]) -> None:
    with signed_in("console_apo", "acme", idle_timeout=1.0) as c:
        token = csrf_of(c.get("/runs").text)
        time.sleep(1.5)
        r = c.get("/runs")
        assert r.status_code == 303 and r.headers["location"] == "/login?expired=1"
        assert (
            c.post(
                f"/approvals/{ids['grant_me']}", data={"csrf": token, "decision": "grant"}
            ).status_code
            == 403
        )
        assert "Your session expired" in c.get("/login?expired=1").text
    assert pending(ids["grant_me"])


def test_an_idle_session_s_connection_closes_unasked() -> None:
    with signed_in("console_gina", "globex", idle_timeout=1.0) as c:
        c.get("/runs")
        assert admin("SELECT 1 FROM pg_stat_activity WHERE usename = 'console_gina'")
        time.sleep(2.5)  # no request: the sweeper ends the session
        assert not admin("SELECT 1 FROM pg_stat_activity WHERE usename = 'console_gina'")


def test_sign_out_ends_the_session() -> None:
    with signed_in("console_ana", "acme/platform") as c:
        old = c.cookies.get("pg_labels_console")
        token = csrf_of(c.get("/runs").text)
        r = c.post("/logout", data={"csrf": token})
        assert r.status_code == 303 and r.headers["location"] == "/login"
        c.cookies.set("pg_labels_console", old or "")
        assert c.get("/runs").headers["location"].startswith("/login")


def test_the_connection_is_the_role_s() -> None:
    with signed_in("console_ana", "acme/platform") as c:
        c.get("/runs")
        rows = admin(
            "SELECT usename FROM pg_stat_activity WHERE application_name = 'pg-labels-console'"
        )
        assert {r["usename"] for r in rows} >= {"console_ana"}
        assert "postgres" not in {r["usename"] for r in rows}


# -- scopes -----------------------------------------------------------------------------------


def test_scope_without_a_grant_is_refused_by_the_database() -> None:
    with client() as c:
        sign_in(c, "console_ana")
        r = c.post("/scope", data={"csrf": csrf_of(c.get("/scope").text), "scope": "acme"})
        assert r.status_code == 403 and "42501" in r.text
        assert c.get("/runs").headers["location"] == "/scope", "no scope, no page"


def test_a_narrower_scope_may_be_typed() -> None:
    with client() as c:
        sign_in(c, "console_apo")
        r = c.post(
            "/scope",
            data={"csrf": csrf_of(c.get("/scope").text), "scope": "acme", "other": "acme/platform"},
        )
        assert r.status_code == 303
        assert 'id="scope-in-force">acme/platform<' in c.get("/runs").text


def test_another_company_s_run_is_not_seen(ids: dict[str, Any]) -> None:
    with signed_in("console_apo", "acme") as c:
        runs = c.get("/runs").text
        assert "globex-bot" not in runs and ids["globex_run"] not in runs
        r = c.get(f"/runs/{ids['globex_run']}")
        assert r.status_code == 404 and "globex secret plan" not in r.text
        assert f"request-{ids['globex_request']}" not in c.get("/approvals").text
    with signed_in("console_gina", "globex") as c:
        assert "globex-bot" in c.get("/runs").text
        assert "globex secret plan" in c.get(f"/runs/{ids['globex_run']}").text
        assert "support-bot" not in c.get("/runs").text


def test_runs_filters_and_keyset_pages() -> None:
    with signed_in("console_apo", "acme", page_size=2) as c:
        seen: list[str] = []
        url = "/runs"
        for _ in range(20):
            page = c.get(url).text
            seen += [
                line.split('href="/runs/')[1][:36]
                for line in page.split("\n")
                if '<td><a class="mono" href="/runs/' in line
            ]
            nxt = page.split('id="next-page" href="')
            if len(nxt) == 1:
                break
            url = nxt[1].split('"')[0].replace("&amp;", "&")
        total = admin("SELECT count(*) AS n FROM pg_labels.runs WHERE scope <@ 'acme'::scope")[0][
            "n"
        ]
        assert len(seen) == len(set(seen)) == total
        finance = c.get("/runs?agent=finance-bot").text
        assert "finance-bot" in finance and "support-bot" not in finance
        slack = c.get("/runs?label=origin:slack/T01/C02").text
        assert "origin:slack/T01/C02" in slack and "finance-bot" not in slack
        assert "no run visible" in c.get("/runs?since=2999-01-01T00:00").text.lower()
        assert "not a date" in c.get("/runs?since=yesterday").text


# -- the database's refusals, as they are -----------------------------------------------------


def test_deciding_as_the_writer_shows_the_database_s_refusal(ids: dict[str, Any]) -> None:
    with signed_in("console_self", "acme") as c:
        token = csrf_of(c.get("/approvals").text)
        r = c.post(
            f"/approvals/{ids['self_try']}",
            data={"csrf": token, "decision": "grant", "reason": "mine"},
        )
        assert r.status_code == 303
        page = c.get("/approvals").text
        assert "The database refused to decide request" in page
        assert "can act as demo_platform" in page and "42501" in page
    assert pending(ids["self_try"])


def test_another_company_s_request_is_answered_as_a_missing_one(ids: dict[str, Any]) -> None:
    """An approver of acme posts globex's request id (not in its queue): the database answers
    exactly as for an id that does not exist, and the request stays pending."""
    answers = []
    with signed_in("console_apo", "acme") as c:
        for request in (ids["globex_request"], 987654321):
            token = csrf_of(c.get("/approvals").text)
            r = c.post(
                f"/approvals/{request}",
                data={"csrf": token, "decision": "grant", "reason": "probe"},
            )
            assert r.status_code == 303
            page = c.get("/approvals").text
            [said] = [
                line
                for line in page.splitlines()
                if "The database refused to decide request" in line
            ]
            answers.append(said.replace(str(request), "N"))
    assert answers[0] == answers[1], answers
    assert "23503" in answers[0]
    assert pending(ids["globex_request"])


# -- hostile values ---------------------------------------------------------------------------


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.handlers: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [(tag, a) for a, _ in attrs if a.lower().startswith("on")]


def assert_no_injected_element(html: str) -> None:
    p = Elements()
    p.feed(html)
    assert not {"script", "img", "iframe", "object", "embed", "b", "i", "u"} & set(p.tags), p.tags
    assert p.handlers == []
    assert "<script" not in html.lower() and "<img" not in html.lower()


def test_hostile_values_are_escaped(ids: dict[str, Any]) -> None:
    agent = "&lt;script&gt;alert(&#34;agent&#34;)&lt;/script&gt;"
    with signed_in("console_apo", "acme") as c:
        runs = c.get("/runs").text
        assert agent in runs
        assert_no_injected_element(runs)
        run = c.get(f"/runs/{ids['hostile_run']}").text
        assert agent in run
        assert (
            "&lt;/pre&gt;&lt;script&gt;alert(\\&#34;args\\&#34;)&lt;/script&gt;" in run
        )  # the JSON string, escaped
        assert "&lt;b onmouseover=alert(1)&gt;bold&lt;/b&gt;" in run
        assert "&lt;svg onload=alert(&#34;unknown&#34;)&gt;" in run
        assert "&lt;i&gt;closed&lt;/i&gt;" in run
        assert_no_injected_element(run)
        approvals = c.get("/approvals").text
        assert "&lt;img src=x onerror=alert(&#34;tool&#34;)&gt;" in approvals
        assert "customer wrote: &lt;script&gt;alert(&#34;reason&#34;)&lt;/script&gt;" in approvals
        assert_no_injected_element(approvals)
        refusals = c.get("/refusals").text
        assert_no_injected_element(refusals)
        # a hostile value typed into a form comes back escaped too
        r = c.get("/runs?agent=<script>alert(1)</script>")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
        assert_no_injected_element(r.text)


# -- approval requests that wait: the queue refreshes itself, a page per request ---------------


def test_the_queue_refreshes_itself() -> None:
    with signed_in("console_apo", "acme") as c:
        r = c.get("/approvals")
        assert r.status_code == 200 and r.headers["refresh"] == "30"
        assert "reloads itself every 30 seconds" in r.text
        assert "refresh" not in c.get("/runs").headers
    with signed_in("console_apo", "acme", refresh=0) as c:
        assert "refresh" not in c.get("/approvals").headers


def test_a_request_has_a_page(ids: dict[str, Any]) -> None:
    with signed_in("console_apo", "acme") as c:
        r = c.get(f"/approvals/{ids['page_grant']}")
        assert r.status_code == 200, r.text
        assert "refresh" not in r.headers, "a reason being typed is never reloaded away"
        page = r.text
        assert 'id="status">pending<' in page
        assert "tickets.update" in page and "&#34;ticket&#34;: 5005" in page
        assert ids["wait_run"] in page and "waiting-bot" in page
        why = page.split('id="why"')[1].split("</dd>")[0]
        assert "the customer asked" in why and "approval_required" in why, why  # why it asks
        assert "origin:slack/T01/C09" in page
        assert 'id="requested-by">demo_platform<' in page
        assert 'name="from" value="request"' in page and 'value="grant"' in page
        # the queue links to it
        assert f'href="/approvals/{ids["page_grant"]}"' in c.get("/approvals").text
        # and the run's trail too
        assert f'href="/approvals/{ids["page_grant"]}"' in c.get(f"/runs/{ids['wait_run']}").text
        assert_no_injected_element(c.get(f"/approvals/{ids['grant_me']}").text)


def test_a_request_the_role_may_not_read_is_a_missing_one(ids: dict[str, Any]) -> None:
    with signed_in("console_apo", "acme") as c:
        answers = []
        for request in (ids["globex_request"], 987654321):
            r = c.get(f"/approvals/{request}")
            assert r.status_code == 404
            answers.append(r.text.replace(str(request), "N"))
        assert answers[0] == answers[1]
        assert "globex" not in answers[0]
        for path in ("/approvals/abc", "/approvals/0", "/approvals/99999999999999999999"):
            assert c.get(path).status_code == 404
    with signed_in("console_gina", "globex") as c:
        r = c.get(f"/approvals/{ids['globex_request']}")
        assert r.status_code == 200 and "&#34;ticket&#34;: 9" in r.text


def test_an_expired_request_reads_expired_and_cannot_be_granted(ids: dict[str, Any]) -> None:
    expired = ids["expired_request"]
    with signed_in("console_apo", "acme") as c:
        page = c.get(f"/approvals/{expired}").text
        assert 'id="status">expired<' in page
        assert 'name="decision"' not in page, "no form to decide an expired request"
        queue = c.get("/approvals").text
        assert f'id="request-{expired}"' not in queue
        closed = queue.split(f'id="closed-{expired}"')[1].split("</tr>")[0]
        assert "expired" in closed
        assert "expired at" in c.get(f"/runs/{ids['wait_run']}").text
        # a form posted anyway: the database refuses, and the console says so as it is
        r = c.post(
            f"/approvals/{expired}",
            data={"csrf": csrf_of(page), "decision": "grant", "from": "request", "reason": "late"},
        )
        assert r.status_code == 303 and r.headers["location"] == f"/approvals/{expired}"
        page = c.get(f"/approvals/{expired}").text
        assert f"The database refused to decide request {expired}" in page
        assert "55000" in page and "expired at" in page
    assert pending(expired)


def test_a_link_to_a_request_leads_through_sign_in_and_scope(ids: dict[str, Any]) -> None:
    path = f"/approvals/{ids['page_grant']}"
    with client() as c:
        r = c.get(path)
        assert (
            r.status_code == 303
            and r.headers["location"] == f"/login?next=%2Fapprovals%2F{ids['page_grant']}"
        )
        login = c.get(r.headers["location"]).text
        assert f'name="next" value="{path}"' in login
        r = c.post(
            "/login",
            data={
                "csrf": csrf_of(login),
                "role": "console_apo",
                "password": PASSWORDS["console_apo"],
                "next": path,
            },
        )
        assert r.status_code == 303 and r.headers["location"].startswith("/scope?next=")
        scope = c.get(r.headers["location"]).text
        assert f'name="next" value="{path}"' in scope
        r = c.post("/scope", data={"csrf": csrf_of(scope), "scope": "acme", "next": path})
        assert r.status_code == 303 and r.headers["location"] == path
        assert c.get(path).status_code == 200
    # only the console's own pages: never another site
    with client() as c:
        for bad in ("https://evil.example/", "//evil.example/approvals/1", "/approvals/1/../x"):
            assert 'name="next"' not in c.get("/login", params={"next": bad}).text
        login = c.get("/login").text
        r = c.post(
            "/login",
            data={
                "csrf": csrf_of(login),
                "role": "console_apo",
                "password": PASSWORDS["console_apo"],
                "next": "//evil.example/",
            },
        )
        assert r.headers["location"] == "/scope"


# -- the queue reads its requests from the indexes (issue 50) ---------------------------------

_PLAIN_PENDING = f"""SELECT {db.REQUEST_COLUMNS} FROM pg_labels.approval_requests q
                     WHERE q.status = 'pending' ORDER BY q.id LIMIT %s"""
_PLAIN_CLOSED = f"""SELECT {db.REQUEST_COLUMNS}, coalesce(q.decided_at, q.expires_at) AS closed_at
                    FROM pg_labels.approval_requests q WHERE q.status <> 'pending'
                    ORDER BY coalesce(q.decided_at, q.expires_at) DESC, q.id DESC LIMIT %s"""


def test_the_queue_lists_what_the_view_says() -> None:
    # what the queue and its list of decisions show (their ids found from the indexes alone) is
    # row for row what pg_labels.approval_requests says, for every person, in every scope they
    # may enter, whatever the length asked
    seen = {"pending": 0, "closed": 0}
    for role in ("console_ana", "console_apo", "console_self", "console_gina"):
        conn = db.connect(DB_URL, role, PASSWORDS[role])
        try:
            for scope in db.list_scopes(conn):
                for limit in (1, 2, 3, 100):
                    try:
                        with conn.transaction():
                            db.enter(conn, scope)
                            plain = conn.execute(_PLAIN_PENDING, [limit]).fetchall()
                            queue = db.pending_requests(conn, limit)
                            plain_closed = conn.execute(_PLAIN_CLOSED, [limit]).fetchall()
                            closed = db.closed_requests(conn, limit)
                    except psycopg.errors.InsufficientPrivilege:
                        break  # a scope the role may not enter
                    if plain:
                        assert [{k: r[k] for k in plain[0]} for r in queue] == plain, (role, scope)
                    else:
                        assert queue == [], (role, scope, limit)
                    assert closed == plain_closed, (role, scope, limit)
                    seen["pending"] += len(plain)
                    seen["closed"] += len(plain_closed)
        finally:
            conn.close()
    assert seen["pending"] and seen["closed"], seen
