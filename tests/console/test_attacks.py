"""The console under attack (issue 47), over plain HTTP in process (Starlette's TestClient)
against the real database: bodies refused before they are parsed, no server-side state for
anonymous visitors, sign-in throttled per address and per role without locking a person out,
connections capped per role and in all, bad CSRF values answered 403, and every response,
errors included, with the console's security headers."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from pg_labels_console import db
from pg_labels_console.app import create_app
from pg_labels_console.limits import SECURITY_HEADERS, Throttle

from conftest import DB_URL, PASSWORDS, admin, csrf_of


def client(address: str = "192.0.2.1", **kw: Any) -> TestClient:
    return TestClient(
        create_app(DB_URL, **kw),
        base_url="http://testserver",
        follow_redirects=False,
        client=(address, 50000),
    )


def sign_in(c: TestClient, role: str, password: str | None = None) -> Any:
    token = csrf_of(c.get("/login").text)
    return c.post(
        "/login",
        data={
            "csrf": token,
            "role": role,
            "password": PASSWORDS[role] if password is None else password,
        },
    )


def assert_headers(r: Any) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert r.headers.get(name) == value, (r.status_code, name, dict(r.headers))


def test_every_response_carries_the_security_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    with TestClient(create_app(DB_URL), follow_redirects=False, raise_server_exceptions=False) as c:
        assert_headers(c.get("/no/such/page"))  # Starlette's 404
        assert_headers(c.put("/login"))  # its 405
        assert_headers(c.get("/login"))
        assert_headers(
            c.post(
                "/login",
                content=b"x" * 100_000,  # the console's own 413
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
        )
        token = csrf_of(c.get("/login").text)
        c.post(
            "/login",
            data={"csrf": token, "role": "console_ana", "password": PASSWORDS["console_ana"]},
        )
        token = csrf_of(c.get("/scope").text)
        c.post("/scope", data={"csrf": token, "scope": "acme/platform"})

        def broken(*args: Any) -> Any:
            raise RuntimeError("a bug")

        monkeypatch.setattr(db, "refusals_by_day", broken)
        failed = c.get("/refusals")  # an unexpected error: a 500
        assert (
            failed.status_code == 500
            and "a bug" not in failed.text
            and "Traceback" not in failed.text
        )
        assert_headers(failed)


def test_bodies_are_limited_before_they_are_parsed() -> None:
    with client() as c:
        multipart = c.post("/login", files={"f": ("big.bin", b"x" * 1000)})
        assert multipart.status_code == 415
        declared = c.post(
            "/login",
            content=b"",
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "content-length": str(600 * 1024 * 1024),
            },
        )
        assert declared.status_code == 413

        def chunks() -> Any:  # no Content-Length: counted as it streams, cut at 64 KiB
            for _ in range(100):
                yield b"a" * 8192

        streamed = c.post(
            "/login",
            content=chunks(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert streamed.status_code == 413
        assert_headers(streamed)


@pytest.mark.parametrize("value", ["é", "\u2603" * 40, "\udcff", "A" * 10_000])
def test_bad_csrf_values_are_403(value: str) -> None:
    with client() as c:
        assert sign_in(c, "console_ana").status_code == 303
        for path in ("/scope", "/logout", "/approvals/1"):
            r = c.post(
                path,
                content=f"csrf={value}&scope=acme".encode("utf-8", "surrogateescape"),
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert r.status_code == 403, (path, r.status_code)
        c.cookies.clear()
        r = c.post(
            "/login",
            content=f"csrf={value}&role=x&password=y".encode("utf-8", "surrogateescape"),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert r.status_code == 403


def test_anonymous_visitors_leave_nothing_on_the_server() -> None:
    app = create_app(DB_URL)
    console = app.state.console
    with TestClient(app, follow_redirects=False) as person:
        assert sign_in(person, "console_ana").status_code == 303
        flood = TestClient(app, follow_redirects=False)  # (no lifespan of its own: one app)
        for _ in range(2000):
            assert flood.get("/login").status_code == 200
        assert len(console.sessions) == 1  # the person's: the 2,000 sign-in pages kept nothing
        assert person.get("/scope").status_code == 200


def test_sign_in_is_throttled_per_address_and_per_role_without_locking_a_person_out() -> None:
    throttle = Throttle(per_address=5, address_refill=600, per_role=8, role_refill=600)
    app = create_app(DB_URL, throttle=throttle)
    # the person signs in from their browser once: it is known for console_ana from then on
    with TestClient(app, follow_redirects=False, client=("198.51.100.7", 1)) as person:
        assert sign_in(person, "console_ana").status_code == 303
        person.cookies.delete("pg_labels_console")
        # an attacker at one address: 5 wrong passwords, then even the right one waits (429),
        # and is not tried
        with TestClient(app, follow_redirects=False, client=("203.0.113.1", 1)) as attacker:
            for _ in range(5):
                assert sign_in(attacker, "console_ana", "guess").status_code == 401
            blocked = sign_in(attacker, "console_ana")
            assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
            assert "Too many failed sign-ins" in blocked.text
        # attackers at many addresses: the role waits for unknown browsers after 8 failures
        for n, failures in enumerate((2, 1)):
            with TestClient(
                app, follow_redirects=False, client=(f"203.0.113.{10 + n}", 1)
            ) as other:
                for _ in range(failures):
                    assert sign_in(other, "console_ana", "guess").status_code == 401
        with TestClient(app, follow_redirects=False, client=("203.0.113.99", 1)) as fresh:
            assert sign_in(fresh, "console_ana").status_code == 429
            assert sign_in(fresh, "console_apo").status_code == 303  # another role is not slowed
        # ... but not the person's browser, where console_ana signed in before
        assert sign_in(person, "console_ana").status_code == 303
        # and the person's cookie, copied, is counted as a browser of its own: 5 guesses
        copied = TestClient(app, follow_redirects=False, client=("203.0.113.200", 1))
        for cookie in person.cookies.jar:
            if cookie.name == "pg_labels_console_known":
                copied.cookies.set(cookie.name, cookie.value or "", path="/login")
        for _ in range(5):
            assert sign_in(copied, "console_ana", "guess").status_code == 401
        assert sign_in(copied, "console_ana").status_code == 429


def test_connections_are_capped_per_role_and_in_all() -> None:
    app = create_app(DB_URL, max_connections=3, per_role=2)

    def held(role: str) -> int:
        return len(admin("SELECT 1 FROM pg_stat_activity WHERE usename = %s", role))

    clients = [TestClient(app, follow_redirects=False) for _ in range(4)]
    try:
        for c in clients[:3]:
            assert sign_in(c, "console_ana").status_code == 303
        assert held("console_ana") == 2  # the first session ended
        assert clients[0].get("/scope").headers["location"].startswith("/login")
        assert clients[2].get("/scope").status_code == 200
        assert sign_in(clients[3], "console_apo").status_code == 303
        with TestClient(app, follow_redirects=False) as late:
            full = sign_in(late, "console_gina")
            assert full.status_code == 503 and "as many sessions as it may" in full.text
        assert held("console_gina") == 0
    finally:
        for c in clients:
            c.close()


def test_a_wrong_password_ends_no_one_s_session() -> None:
    app = create_app(DB_URL, per_role=1)
    person = TestClient(app, follow_redirects=False)
    assert sign_in(person, "console_ana").status_code == 303
    attacker = TestClient(app, follow_redirects=False, client=("203.0.113.50", 1))
    assert sign_in(attacker, "console_ana", "guess").status_code == 401
    assert sign_in(attacker, "console_ana", "nul\x00guess").status_code == 401
    assert person.get("/scope").status_code == 200


def test_a_throttled_role_is_not_forgotten_for_others() -> None:
    throttle = Throttle(per_address=1000, per_role=3, role_refill=600, kept=5)
    for _ in range(3):
        throttle.failed("203.0.113.1", "console_ana", None)
    assert throttle.wait("203.0.113.2", "console_ana", None) > 0
    for n in range(100):  # refused or asked: nothing recorded
        throttle.wait("203.0.113.1", f"junk{n}", None)
    for n in range(20):  # failures of other roles push out roles that do not wait
        throttle.failed(f"198.51.100.{n}", f"junk{n}", None)
    assert throttle.wait("203.0.113.3", "console_ana", None) > 0
    assert throttle.wait("203.0.113.3", "console_ana", "a-known-browser") == 0


def test_nul_in_a_query_is_400() -> None:
    with client() as c:
        assert sign_in(c, "console_ana").status_code == 303
        for path in ("/runs?label=a%00b", "/runs?agent=a%00b"):
            r = c.get(path)
            assert r.status_code == 400, (path, r.status_code)
            assert_headers(r)
