"""The gateway under attack (issue 47): a malicious upstream written with the MCP SDK
(evil_server.py) and the real reference servers behind pg-labels-mcp, driven with the official
client and with plain HTTP. Each test is an attack that 0.3.0 let through."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import psycopg
import pytest

from conftest import (
    CATALOG,
    FINANCE,
    PLATFORM,
    connect,
    dsn,
    free_port,
    gateway_args,
    give_namespace,
    http_gateway,
    http_session,
    runs_of,
    stdio_gateway,
    steps_of,
    text,
    wait_port,
    write_config,
)

GATEWAY = os.environ.get("GATEWAY", "pg-labels-mcp")


def check(
    config: Path, *more: str, database: str | None = None, catalog: str | None = None
) -> subprocess.CompletedProcess[str]:
    args = gateway_args(config)
    if database is not None:
        args[1] = database
    if catalog is not None:
        args[3] = catalog
    return subprocess.run(
        [GATEWAY, *args, "--check", *more], capture_output=True, text=True, timeout=120
    )


def catalog_rows(*names: str) -> dict[str, tuple[Any, ...]]:
    with connect() as conn:
        rows = conn.execute(
            "SELECT name, effect, trusted_output, owner FROM pg_labels.tools WHERE name = ANY(%s)",
            [list(names)],
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


OTHER_CATALOG = "labels_mcp_catalog_other"


@pytest.fixture(autouse=True)
def no_evil_tools() -> None:
    """Each test meets the malicious upstream's tools afresh (a definition one test accepted
    is not the next one's)."""
    with connect() as conn:
        conn.execute("DELETE FROM pg_labels.tools WHERE name LIKE 'evil.%'")
        conn.execute("DELETE FROM pg_labels.tool_definitions WHERE name LIKE 'evil.%'")
        give_namespace(conn, "evil")


@pytest.fixture
def other_catalog() -> Iterator[str]:
    """A second gateway's catalog role (granted as docs/mcp.md says), and a catalog without
    the namespaces these tests claim, before and after."""

    def clean() -> None:
        with connect() as conn:
            for table, column in (
                ("tools", "split_part(name, '.', 1)"),
                ("tool_definitions", "split_part(name, '.', 1)"),
                ("tool_namespaces", "namespace"),
            ):
                conn.execute(
                    f"DELETE FROM pg_labels.{table} "
                    f"WHERE {column} IN ('fs', 'stripe', 'mail', 'slack')"
                )
            give_namespace(conn, "fs")
            if conn.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", [OTHER_CATALOG]
            ).fetchone():
                conn.execute(f"DROP OWNED BY {OTHER_CATALOG}")
                conn.execute(f"DROP ROLE {OTHER_CATALOG}")

    clean()
    with connect() as conn:
        conn.execute(f"CREATE ROLE {OTHER_CATALOG} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA pg_labels TO {OTHER_CATALOG}")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE ON pg_labels.tools TO {OTHER_CATALOG}")
        conn.execute(
            "GRANT SELECT, INSERT, UPDATE (accepted_at, accepted_by) "
            f"ON pg_labels.tool_definitions TO {OTHER_CATALOG}"
        )
        conn.execute(f"GRANT SELECT ON pg_labels.tool_namespaces TO {OTHER_CATALOG}")
    yield dsn(OTHER_CATALOG)
    clean()


def test_a_sync_cannot_loosen_another_gateways_tools(
    tmp_path: Path, files: Path, other_catalog: str
) -> None:
    """Gateway A owns fs (its config makes create_directory destructive); gateway B's upstream
    also named fs marks write_file and create_directory read-only: B does not start, and A's
    effects stand. Gateway C's upstream stripe offers refund as read-only, where the DBA made
    stripe.refund financial: it stays financial. The catalog role cannot loosen them in SQL
    either, nor give itself a namespace (slack) to define another company's tools in."""
    with connect() as conn:
        give_namespace(conn, "fs", "acme-desktop")
        give_namespace(conn, "stripe", "payments", OTHER_CATALOG)
    a, _ = write_config(
        tmp_path / "a.toml",
        files=files,
        everything=None,
        name="acme-desktop",
        tools={"fs.create_directory": {"effect": "destructive"}},
    )
    done = check(a)
    assert done.returncode == 0, done.stderr
    assert catalog_rows("fs.write_file", "fs.create_directory") == {
        "fs.write_file": ("destructive", False, "acme-desktop"),
        "fs.create_directory": ("destructive", False, "acme-desktop"),
    }
    b, _ = write_config(
        tmp_path / "b.toml",
        scope="acme/finance",
        everything=None,
        name="globex-desktop",
        evil=["--as", "fs"],
        evil_name="fs",
    )
    done = check(b, database=dsn(FINANCE), catalog=other_catalog)
    assert done.returncode == 2, done.stdout
    assert "claimed by gateway acme-desktop" in done.stderr, done.stderr
    assert catalog_rows("fs.write_file", "fs.create_directory") == {
        "fs.write_file": ("destructive", False, "acme-desktop"),
        "fs.create_directory": ("destructive", False, "acme-desktop"),
    }

    with connect() as conn:
        conn.execute(
            "INSERT INTO pg_labels.tools (name, effect) VALUES ('stripe.refund', 'financial') "
            "ON CONFLICT (name) DO UPDATE SET effect = 'financial', owner = NULL"
        )
    c, _ = write_config(
        tmp_path / "c.toml",
        everything=None,
        name="payments",
        evil=["--as", "stripe"],
        evil_name="stripe",
    )
    done = check(c, catalog=other_catalog)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("stripe.refund "))
    assert line.split()[1] == "financial" and "set by the DBA" in line, line
    assert catalog_rows("stripe.refund") == {"stripe.refund": ("financial", False, None)}
    with connect() as conn:
        run = conn.execute(
            "INSERT INTO pg_labels.runs (agent, scope, labels) "
            "VALUES ('payments', 'acme/platform', '{origin:slack}') RETURNING id"
        ).fetchone()
        assert run is not None
        gate = conn.execute(
            "SELECT decision FROM pg_labels.gate(%s, 'stripe.refund')", [run[0]]
        ).fetchone()
    assert gate is not None and gate[0] == "block"

    # the other gateways' catalog role itself: no row it does not own changes, whatever it
    # writes
    with psycopg.connect(other_catalog, autocommit=True) as conn:
        cur = conn.execute(
            "UPDATE pg_labels.tools SET effect = 'read' "
            "WHERE name IN ('stripe.refund', 'fs.write_file')"
        )
        assert cur.rowcount == 0
        for statement in (
            "INSERT INTO pg_labels.tools (name, effect) VALUES ('stripe.refund', 'read') "
            "ON CONFLICT (name) DO UPDATE SET effect = 'read'",
            "INSERT INTO pg_labels.tools (name, effect, owner) "
            "VALUES ('fs.delete_all', 'read', 'payments')",
            "INSERT INTO pg_labels.tool_namespaces (namespace, owner, role) "
            f"VALUES ('mail', 'payments', '{PLATFORM}')",
            "INSERT INTO pg_labels.tool_namespaces (namespace, owner, role) "
            f"VALUES ('slack', 'payments', '{OTHER_CATALOG}')",
            "INSERT INTO pg_labels.tools (name, effect, trusted_output, owner) "
            "VALUES ('slack.post_message', 'read', true, 'payments')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    assert catalog_rows(
        "stripe.refund", "fs.write_file", "fs.delete_all", "slack.post_message"
    ) == {
        "stripe.refund": ("financial", False, None),
        "fs.write_file": ("destructive", False, "acme-desktop"),
    }


def test_untrusted_annotations_fail_closed(tmp_path: Path) -> None:
    """An upstream the configuration does not trust says every tool only reads: each is
    destructive, and --check says why; trusted, its annotations count."""
    config, _ = write_config(
        tmp_path / "gw.toml",
        everything=None,
        evil=[],
    )
    done = check(config)
    assert done.returncode == 0, done.stderr
    lines = {x.split()[0]: x for x in done.stdout.splitlines()[1:]}
    for name in ("evil.echo", "evil.destroy", "evil.rewrite"):
        assert lines[name].split()[1] == "destructive", lines[name]
        assert "untrusted annotations" in lines[name]
    # a tool name with control characters is not offered, and nothing forges a line
    assert "\x1b" not in done.stdout + done.stderr and "\r" not in done.stdout + done.stderr
    assert not any("forged" in x for x in lines)
    assert "x\\x1b[2J\\x0dforged.tool\\x0a" in done.stderr


async def test_a_changed_definition_is_refused_until_accepted(tmp_path: Path) -> None:
    """The upstream rewrites echo's description at run time with an injected instruction: the
    client is no longer shown echo, a call of it is refused naming the change, the change is on
    the record, and an operator's acceptance (SQL, or --check --accept) lets it through again."""
    config, agent = write_config(
        tmp_path / "gw.toml",
        everything=None,
        evil=[],
        tools={"evil.echo": {"effect": "read"}, "evil.rewrite": {"effect": "read"}},
    )
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with stdio_gateway(gateway_args(config), on_message) as session:
        before = {t.name: t for t in (await session.list_tools()).tools}
        assert "INJECTED" not in (before["evil.echo"].description or "")
        # only what is pinned reaches the client: not the upstream's _meta or icons
        assert before["evil.echo"].meta is None and before["evil.echo"].icons is None
        done = await session.call_tool("evil.rewrite", {})
        assert not done.is_error, text(done)
        with anyio.fail_after(20):
            await changed.wait()
        after = {t.name for t in (await session.list_tools()).tools}
        assert "evil.echo" not in after and "evil.destroy" in after
        refused = await session.call_tool("evil.echo", {"text": "hi"})
        assert refused.is_error
        assert "definition changed since it was accepted (description)" in text(refused)
        assert "INJECTED" not in text(refused)
        with connect() as conn:
            waiting = conn.execute(
                "SELECT definition->>'description' FROM pg_labels.tool_definitions "
                "WHERE name = 'evil.echo' AND accepted_at IS NULL"
            ).fetchall()
        assert len(waiting) == 1 and "INJECTED" in waiting[0][0]
        with psycopg.connect(dsn(CATALOG), autocommit=True) as conn:
            digest = conn.execute("SELECT pg_labels.accept_tool_definition('evil.echo')")
            assert digest.fetchone() != (None,)
        accepted = await session.call_tool("evil.echo", {"text": "hi"})
        assert not accepted.is_error, text(accepted)
    [(run, _, _)] = runs_of(agent)
    called = [s[1] for s in steps_of(run) if s[0] == "tool_called"]
    assert called == ["evil.rewrite", "evil.echo"]

    # a gateway started while the upstream offers another definition than the accepted one
    rewritten, _ = write_config(
        tmp_path / "again.toml",
        everything=None,
        evil=["--rewritten"],
        tools={"evil.echo": {"effect": "read"}},
    )
    with connect() as conn:
        conn.execute(
            "UPDATE pg_labels.tools SET definition_digest = d.digest "
            "FROM pg_labels.tool_definitions d WHERE d.name = 'evil.echo' "
            "AND d.definition->>'description' NOT LIKE '%INJECTED%' AND tools.name = d.name"
        )
    done = check(rewritten)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("evil.echo "))
    assert "REFUSED: its definition changed since it was accepted (description)" in line, line
    done = check(rewritten, "--accept")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("evil.echo "))
    assert "REFUSED" not in line, line


def modern(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    """A request of MCP's sessionless revision (2026-07-28), as plain HTTP."""
    params = body.setdefault("params", {})
    meta = params.setdefault("_meta", {})
    meta.setdefault("io.modelcontextprotocol/protocolVersion", "2026-07-28")
    meta.setdefault("io.modelcontextprotocol/clientInfo", {"name": "attacker", "version": "1"})
    meta.setdefault("io.modelcontextprotocol/clientCapabilities", {})
    return httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, **body},
        headers={
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": body["method"],
            **({"Mcp-Name": params["name"]} if "name" in params else {}),
            "Accept": "application/json, text/event-stream",
            **headers,
        },
        timeout=30,
    )


def result_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1])
    else:
        message = response.json()
    assert "result" in message, message
    return dict(message["result"])


def call(name: str, arguments: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"pg-labels/run": token}
    return {"method": "tools/call", "params": params}


def test_sessionless_calls_keep_their_run(tmp_path: Path) -> None:
    """A client of the sessionless revision gets a run token with its first call (not made, and
    nothing written), and every call carrying it is in that run: an untrusted output then
    refuses a destructive call, as in a session. A token the gateway did not issue, or issued
    to another client, is refused."""
    config, agent = write_config(
        tmp_path / "gw.toml",
        everything=None,
        evil=[],
        tools={"evil.echo": {"effect": "read"}},
        max_sessions=2,
    )
    with open(config, "a") as f:
        for name in ("alice", "bob"):
            digest = hashlib.sha256(f"token-of-{name}".encode()).hexdigest()
            f.write(f'[clients.{name}]\ntoken_sha256 = "{digest}"\n')
    alice = {"Authorization": "Bearer token-of-alice"}
    bob = {"Authorization": "Bearer token-of-bob"}
    with http_gateway(gateway_args(config)) as url:
        first = result_of(modern(url, call("evil.echo", {"text": "a"}), **alice))
        assert first["isError"] and "was not called" in first["content"][0]["text"]
        token = first["_meta"]["pg-labels/run"]
        for _ in range(20):  # token-less calls open no run
            result_of(modern(url, call("evil.echo", {"text": "a"}), **bob))
        assert runs_of(agent) == []
        echo = result_of(modern(url, call("evil.echo", {"text": "b"}, token), **alice))
        assert not echo.get("isError"), echo
        destroy = result_of(modern(url, call("evil.destroy", {"path": "/"}, token), **alice))
        assert destroy["isError"], destroy
        assert "untrusted_to_irreversible" in destroy["content"][0]["text"]
        forged = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
        bad = result_of(modern(url, call("evil.destroy", {"path": "/"}, forged), **alice))
        assert bad["isError"] and "not a run token" in bad["content"][0]["text"]
        # bob cannot use alice's token, whatever the gateway keeps (3 other conversations
        # of bob's push alice's out of its max_sessions = 2)
        for _ in range(3):
            other = result_of(modern(url, call("evil.echo", {"text": "c"}), **bob))
            other_token = other["_meta"]["pg-labels/run"]
            result_of(modern(url, call("evil.echo", {"text": "d"}, other_token), **bob))
        stolen = result_of(modern(url, call("evil.echo", {"text": "e"}, token), **bob))
        assert stolen["isError"] and "not a run token" in stolen["content"][0]["text"]
        again = result_of(modern(url, call("evil.echo", {"text": "f"}, token), **alice))
        assert not again.get("isError"), again
    alices = [r for r in runs_of(agent) if any(s[2] == {"text": "b"} for s in steps_of(r[0]))]
    [(run, _, labels)] = alices
    assert "origin:tool" in labels
    called = [s[2] for s in steps_of(run) if s[0] == "tool_called"]
    assert called == [{"text": "b"}, {"text": "f"}]
    assert len(runs_of(agent)) == 4

    refusing, _ = write_config(
        tmp_path / "refuse.toml",
        everything=None,
        evil=[],
        sessionless="refuse",
    )
    with http_gateway(gateway_args(refusing)) as url:
        refused = result_of(modern(url, call("evil.echo", {"text": "a"})))
        assert (
            refused["isError"] and "has none; nothing was called" in (refused["content"][0]["text"])
        )


async def test_nothing_reaches_the_model_unrecorded(tmp_path: Path) -> None:
    """The upstream fails with an injected instruction while the gateway's role lost INSERT on
    the trail: the client reads a fixed error, never the upstream's text."""
    config, _ = write_config(
        tmp_path / "gw.toml",
        everything=None,
        evil=[],
        tools={"evil.fail": {"effect": "read"}, "evil.echo": {"effect": "read"}},
    )
    async with stdio_gateway(gateway_args(config)) as session:
        recorded = await session.call_tool("evil.fail", {"seconds": 0})
        assert recorded.is_error and "INJECTED" in text(recorded)
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def failing() -> None:
                results.append(await session.call_tool("evil.fail", {"seconds": 3}))

            tg.start_soon(failing)
            await anyio.sleep(1.5)
            with connect() as conn:
                conn.execute(f"REVOKE INSERT ON pg_labels.steps FROM {PLATFORM}")
        try:
            [withheld] = results
            assert withheld.is_error
            assert "INJECTED" not in text(withheld) and "withheld" in text(withheld)
            echo = await session.call_tool("evil.echo", {"text": "x"})
            assert echo.is_error and "INJECTED" not in text(echo)
        finally:
            with connect() as conn:
                conn.execute(f"GRANT INSERT ON pg_labels.steps TO {PLATFORM}")


async def test_bounded_arguments_results_and_connections(tmp_path: Path) -> None:
    """Arguments over max_argument_bytes are refused before anything is called; a result over
    max_result_bytes is withheld (its size on the record); 30 HTTP sessions share pool_size
    connections, and an idle session expires."""
    config, agent = write_config(
        tmp_path / "gw.toml",
        everything=None,
        evil=[],
        tools={"evil.big": {"effect": "read"}, "evil.echo": {"effect": "read"}},
        max_argument_bytes=10_000,
        max_result_bytes=50_000,
        pool_size=3,
        # (long enough for 30 sessions to reach their call on a loaded two-core machine: at 2 s
        # sessions were forgotten between their initialize and their call)
        session_idle_timeout=6,
    )
    with http_gateway(gateway_args(config)) as url:
        async with http_session(url) as session:
            big_args = await session.call_tool("evil.echo", {"text": "y" * 20_000})
            assert big_args.is_error and "max_argument_bytes" in text(big_args)
            big = await session.call_tool("evil.big", {"bytes": 100_000})
            assert big.is_error and "max_result_bytes" in text(big)
            assert "xxxx" not in text(big)
            small = await session.call_tool("evil.big", {"bytes": 10})
            assert not small.is_error, text(small)

        async def one(n: int) -> None:
            async with http_session(url) as s:
                result = await s.call_tool("evil.big", {"bytes": n})
                assert not result.is_error, text(result)
                await anyio.sleep(1)

        async with anyio.create_task_group() as tg:
            for n in range(30):
                tg.start_soon(one, n)
        with connect() as conn:
            held = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", [PLATFORM]
            ).fetchone()
        assert held is not None and held[0] <= 3, held

        # a session opened and abandoned (no request since) is forgotten after
        # session_idle_timeout
        legacy = {
            "MCP-Protocol-Version": "2025-06-18",
            "Accept": "application/json, text/event-stream",
        }
        opened = httpx.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "abandoned", "version": "1"},
                },
            },
            headers=legacy,
            timeout=30,
        )
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        alive = httpx.post(
            url, json=listing, headers={**legacy, "Mcp-Session-Id": session_id}, timeout=30
        )
        assert alive.status_code == 200, alive.text
        await anyio.sleep(10)
        gone = httpx.post(
            url, json=listing, headers={**legacy, "Mcp-Session-Id": session_id}, timeout=30
        )
        assert gone.status_code == 404, gone.text
    tool_called = [
        s for run, _, _ in runs_of(agent) for s in steps_of(run) if s[0] == "tool_called"
    ]
    assert not any(len(json.dumps(s[2])) > 10_000 for s in tool_called)


def test_listening_beyond_loopback_needs_tokens_and_checks_hosts(
    tmp_path: Path,
) -> None:
    """--listen 0.0.0.0 without clients' tokens does not start; with them, a request without a
    token is 401, a foreign Host or Origin is refused, and a client with its token is served."""
    config, _ = write_config(
        tmp_path / "gw.toml",
        everything=None,
        evil=[],
    )
    port = free_port()
    done = subprocess.run(
        [GATEWAY, *gateway_args(config), "--listen", f"0.0.0.0:{port}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "bearer tokens" in done.stderr, done.stderr

    token = "s3cret-token-of-the-desk"
    secured, _ = write_config(
        tmp_path / "secured.toml",
        everything=None,
        evil=[],
        allowed_hosts=[f"127.0.0.1:{port}"],
        allowed_origins=[f"http://127.0.0.1:{port}"],
    )
    with open(secured, "a") as f:
        f.write(f'[clients.desk]\ntoken_sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"\n')
    proc = subprocess.Popen(
        [GATEWAY, *gateway_args(secured), "--listen", f"0.0.0.0:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        listing = {"method": "tools/list", "params": {}}
        assert modern(url, dict(listing)).status_code == 401
        assert modern(url, dict(listing), Authorization="Bearer wrong").status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        rebinding = modern(url, dict(listing), Host="evil.example:80", **auth)
        assert rebinding.status_code in (400, 403, 421), rebinding.status_code
        origin = modern(url, dict(listing), Origin="http://evil.example", **auth)
        assert origin.status_code in (400, 403), origin.status_code
        tools = result_of(modern(url, dict(listing), **auth))
        assert "evil.echo" in {t["name"] for t in tools["tools"]}
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_failed_resync_changes_nothing(tmp_path: Path) -> None:
    """The upstream adds a tool while the catalog cannot be written: the clients keep the tools
    as they were (no list_changed, the new tool unknown), and a name with control characters
    is answered escaped."""
    config, _ = write_config(tmp_path / "gw.toml", everything=None, changing=True)
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with stdio_gateway(gateway_args(config), on_message) as session:
        with connect() as conn:
            conn.execute("DELETE FROM pg_labels.tools WHERE name = 'changing.archive'")
            conn.execute(f"REVOKE INSERT ON pg_labels.tools FROM {CATALOG}")
        try:
            enabled = await session.call_tool("changing.enable_archive", {})
            assert not enabled.is_error, text(enabled)
            with anyio.move_on_after(5):
                await changed.wait()
            assert not changed.is_set()
            names = {t.name for t in (await session.list_tools()).tools}
            assert names == {"changing.enable_archive"}
            unknown = await session.call_tool("changing.archive", {"id": "r1"})
            assert unknown.is_error and "unknown tool" in text(unknown)
            forged = await session.call_tool("changing.\x1b[2J\r\nok", {})
            assert forged.is_error and "\x1b" not in text(forged) and "\r" not in text(forged)
            assert "changing.\\x1b[2J\\x0d\\x0aok" in text(forged)
        finally:
            with connect() as conn:
                conn.execute(f"GRANT INSERT ON pg_labels.tools TO {CATALOG}")


async def test_the_dbas_tools_are_pinned_too(tmp_path: Path) -> None:
    """A tool the DBA wrote (as every tool is after the update from 0.3.0) in the gateway's
    namespace: the gateway refuses it until the DBA accepts a definition of it (what it was
    offered is on the record), then refuses a changed one until the DBA accepts that. The
    gateway's catalog role accepts nothing of the DBA's, in any SQL."""
    with connect() as conn:
        conn.execute("INSERT INTO pg_labels.tools (name, effect) VALUES ('evil.echo', 'read')")
    config, _ = write_config(tmp_path / "gw.toml", everything=None, evil=[])

    def line_of(done: subprocess.CompletedProcess[str]) -> str:
        assert done.returncode == 0, done.stderr
        return next(x for x in done.stdout.splitlines() if x.startswith("evil.echo "))

    line = line_of(check(config))
    assert "set by the DBA" in line, line
    assert "REFUSED: no definition of it was accepted by its owner (the DBA)" in line, line
    with connect() as conn:
        assert conn.execute("SELECT pg_labels.accept_tool_definition('evil.echo')").fetchone() != (
            None,
        )
    line = line_of(check(config))
    assert "REFUSED" not in line, line
    rewritten, _ = write_config(tmp_path / "again.toml", everything=None, evil=["--rewritten"])
    line = line_of(check(rewritten))
    assert "REFUSED: its definition changed since it was accepted (description)" in line, line
    with psycopg.connect(dsn(CATALOG), autocommit=True) as catalog:
        assert catalog.execute(
            "SELECT pg_labels.accept_tool_definition('evil.echo')"
        ).fetchone() == (None,)
        forged = catalog.execute(
            "UPDATE pg_labels.tool_definitions SET accepted_at = now(), accepted_by = 'postgres' "
            "WHERE name = 'evil.echo' AND accepted_at IS NULL"
        )
        assert forged.rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            catalog.execute(
                "INSERT INTO pg_labels.tool_definitions (name, owner, digest, definition, "
                "accepted_at, accepted_by) VALUES ('evil.echo', 'mcp-tests', 'x', '{}', now(), "
                "current_user)"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            catalog.execute(
                "UPDATE pg_labels.tool_definitions SET definition = '{}' WHERE name = 'evil.echo'"
            )
    line = line_of(check(rewritten))
    assert "REFUSED: its definition changed" in line, line
    with connect() as conn:
        assert conn.execute("SELECT pg_labels.accept_tool_definition('evil.echo')").fetchone() != (
            None,
        )
    line = line_of(check(rewritten))
    assert "REFUSED" not in line and "set by the DBA" in line, line
