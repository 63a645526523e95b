"""pg-labels-mcp between the official MCP Python client and the reference servers
(@modelcontextprotocol/server-filesystem, @modelcontextprotocol/server-everything), on a real
PostgreSQL with pg_labels: the catalog, allowed and refused calls checked on disk, approvals,
sessions and scopes, the database stopped mid-session, and 200 concurrent calls."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psycopg
import pytest

from conftest import (
    ALICE,
    FINANCE,
    INJECTED,
    PLATFORM,
    connect,
    dsn,
    everything_http,
    free_port,
    gateway_args,
    give_namespace,
    grant_roles,
    http_gateway,
    http_session,
    runs_of,
    snapshot,
    stdio_gateway,
    steps_of,
    text,
    write_config,
)

FS_EFFECTS = {
    "fs.read_text_file": "read",
    "fs.list_directory": "read",
    "fs.write_file": "destructive",
    "fs.edit_file": "destructive",
    "fs.move_file": "destructive",
    "fs.create_directory": "reversible_write",
}


def test_check_prints_the_catalog(tmp_path: Path, files: Path) -> None:
    config, _ = write_config(
        tmp_path / "gw.toml",
        files=files,
        tools={"everything.echo": {"trusted": True}, "fs.list_directory": {"effect": "read"}},
    )
    done = subprocess.run(
        [os.environ.get("GATEWAY", "pg-labels-mcp"), *gateway_args(config), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # a successful run says nothing (server-everything's tools/list_changed as it starts is
    # no failed sync when the gateway closes it); what the servers say of themselves aside
    assert not said(done.stderr), done.stderr
    out = done.stdout
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    for name, effect in FS_EFFECTS.items():
        assert lines[name][0] == effect, (name, lines[name])
    assert lines["everything.echo"][:3] == ["read", "trusted", "output"]
    assert lines["fs.write_file"][1:3] == ["untrusted", "output"]
    # who set each effect: the configuration, or the annotations of an upstream it trusts
    assert " ".join(lines["fs.list_directory"][3:]) == "set by the configuration"
    assert " ".join(lines["fs.write_file"][3:]) == "set by its annotations (trusted upstream)"


def said(stderr: str) -> list[str]:
    """What the gateway logged (warnings and errors, at its default level)."""
    return [line for line in stderr.splitlines() if line.startswith("pg-labels-mcp:")]


def test_a_current_catalog_needs_no_catalog_role(tmp_path: Path, files: Path) -> None:
    """The gateway compares the catalog first: when it holds every tool as the gateway would
    write it, nothing is written, and the sessions' role (it reads pg_labels.tools) starts the
    gateway with --database and --config alone; when a tool differs, that role may not write
    it and the gateway says what to configure (docs/mcp.md, "With the Python client")."""
    gateway = os.environ.get("GATEWAY", "pg-labels-mcp")
    config, _ = write_config(tmp_path / "gw.toml", files=files, everything=None)
    changed, _ = write_config(
        tmp_path / "changed.toml",
        files=files,
        everything=None,
        tools={"fs.list_directory": {"effect": "destructive"}},
    )

    def check(config: Path, *, catalog: bool) -> Any:
        args = (
            gateway_args(config)
            if catalog
            else ["--database", dsn(PLATFORM), "--config", str(config)]
        )
        return subprocess.run(
            [gateway, *args, "--check"],
            capture_output=True,
            text=True,
            timeout=120,
        )

    written = check(config, catalog=True)
    assert written.returncode == 0 and not said(written.stderr), written.stderr
    alone = check(config, catalog=False)
    assert alone.returncode == 0, alone.stderr
    assert not said(alone.stderr), alone.stderr
    assert alone.stdout == written.stdout
    # a namespace the DBA took back stops it, with the sessions' role as with the catalog's
    with connect() as conn:
        conn.execute("DELETE FROM pg_labels.tool_namespaces WHERE namespace = 'fs'")
    try:
        for catalog in (False, True):
            taken = check(config, catalog=catalog)
            assert taken.returncode == 2, taken.stderr
            assert "namespace fs" in taken.stderr, taken.stderr
    finally:
        with connect() as conn:
            give_namespace(conn, "fs")
    # a tool whose effect the configuration changes: the catalog must be written
    refused = check(changed, catalog=False)
    assert refused.returncode == 2, refused.stderr
    assert "the tool catalog must be written (fs.list_directory not as this gateway" in (
        refused.stderr
    ), refused.stderr
    assert f"role {PLATFORM} may not write it" in refused.stderr, refused.stderr
    assert "--catalog-database or catalog_database" in refused.stderr, refused.stderr
    with connect() as conn:
        row = conn.execute(
            "SELECT effect FROM pg_labels.tools WHERE name = 'fs.list_directory'"
        ).fetchone()
    assert row == ("read",)
    # ... as the catalog role it is, and then is current for the sessions' role too
    assert check(changed, catalog=True).returncode == 0
    assert check(changed, catalog=False).returncode == 0
    assert check(config, catalog=True).returncode == 0


def test_settings_from_the_environment(tmp_path: Path, files: Path) -> None:
    """PG_LABELS_MCP_* variables stand for the flags and win over the file; flags win over
    them."""
    config, agent = write_config(tmp_path / "gw.toml", files=files, everything=None)
    args = gateway_args(config)
    env = {
        **os.environ,
        "PG_LABELS_MCP_DATABASE": args[1],
        "PG_LABELS_MCP_CATALOG_DATABASE": args[3],
        "PG_LABELS_MCP_CONFIG": str(config),
        "PG_LABELS_MCP_SCOPE": "acme/platform/ops",
        # (its role's grant, acme/platform, reaches beyond these sub-areas)
        "PG_LABELS_MCP_ALLOW_WIDER_GRANTS": "1",
        "PG_LABELS_MCP_LABELS": "origin:event/mcp-client",
        "PG_LABELS_MCP_CHECK": "1",
    }
    gateway = os.environ.get("GATEWAY", "pg-labels-mcp")
    done = subprocess.run([gateway], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        f"pg-labels-mcp: runs of agent {agent} in scope acme/platform/ops "
        "carrying {origin:event/mcp-client}"
    )
    assert "fs.write_file" in done.stdout
    done = subprocess.run(
        [gateway, "--scope", "acme/platform/flag", "--agent", "flagged"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(
        "pg-labels-mcp: runs of agent flagged in scope acme/platform/flag"
    )
    # a label the database would not parse stops it before anything starts
    bad = {**env, "PG_LABELS_MCP_LABELS": "origin:mcp-client"}
    done = subprocess.run([gateway], env=bad, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "origin:mcp-client" in done.stderr, done.stderr
    # without a database
    del env["PG_LABELS_MCP_DATABASE"]
    done = subprocess.run([gateway], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--database" in done.stderr


def test_the_role_is_bound_to_the_gateway_scope(tmp_path: Path, files: Path) -> None:
    """The gateway starts only when its database role's grants reach its scope and nothing
    beyond it (unless allow_wider_grants says so): a leaked credential of an acme/platform
    gateway is not a credential for acme/finance or globex."""
    gateway = os.environ.get("GATEWAY", "pg-labels-mcp")

    def check(config: Path, *more: str, database: str | None = None, **env: str) -> Any:
        return subprocess.run(
            [gateway, *gateway_args(config, database=database), "--check", *more],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    platform, _ = write_config(tmp_path / "gw.toml", files=files, everything=None)
    finance, _ = write_config(
        tmp_path / "finance.toml", files=files, everything=None, scope="acme/finance"
    )
    assert check(platform).returncode == 0
    # a scope its grants do not reach: it would be refused at every run, so it does not start
    done = check(finance)
    assert done.returncode == 2, done.stderr
    assert f"{PLATFORM} may not act in acme/finance" in done.stderr, done.stderr
    # a role that reaches more than the gateway's scope
    with connect() as conn:
        conn.execute("INSERT INTO pg_labels.grants (role, scope) VALUES (%s, 'acme')", [PLATFORM])
    try:
        done = check(platform)
        assert done.returncode == 2, done.stderr
        assert "beyond the gateway's scope acme/platform: its grants reach acme." in done.stderr
        assert "--allow-wider-grants" in done.stderr
        allowed = check(platform, "--allow-wider-grants")
        assert allowed.returncode == 0, allowed.stderr
        assert "allow_wider_grants" in allowed.stderr  # said, even when allowed
        allowed = check(platform, PG_LABELS_MCP_ALLOW_WIDER_GRANTS="1")
        assert allowed.returncode == 0, allowed.stderr
        wide, _ = write_config(
            tmp_path / "wide.toml", files=files, everything=None, allow_wider_grants=True
        )
        assert check(wide).returncode == 0
    finally:
        with connect() as conn:
            conn.execute(
                "DELETE FROM pg_labels.grants WHERE role = %s AND scope = 'acme'", [PLATFORM]
            )
    assert check(platform).returncode == 0
    # a superuser, or the tables' owner, acts everywhere
    done = check(platform, database=dsn())
    assert done.returncode == 2 and "it acts everywhere (" in done.stderr, done.stderr
    # so does a role that reads past its grants (BYPASSRLS)
    with connect() as conn:
        conn.execute(f"ALTER ROLE {PLATFORM} BYPASSRLS")
    try:
        done = check(platform)
        assert done.returncode == 2 and "BYPASSRLS: it reads every" in done.stderr, done.stderr
    finally:
        with connect() as conn:
            conn.execute(f"ALTER ROLE {PLATFORM} NOBYPASSRLS")


async def test_untrusted_client_origin(tmp_path: Path, files: Path) -> None:
    """A gateway whose sessions carry origin:event/mcp-client from the start: reads go through,
    irreversible calls never do."""
    config, agent = write_config(
        tmp_path / "gw.toml", files=files, everything=None, labels=["origin:event/mcp-client"]
    )
    async with stdio_gateway(gateway_args(config)) as session:
        write = await session.call_tool(
            "fs.write_file", {"path": str(files / "new.txt"), "content": "x"}
        )
        assert write.is_error and "untrusted_to_irreversible" in text(write)
        assert "{origin:event/mcp-client}" in text(write)
        listing = await session.call_tool("fs.list_directory", {"path": str(files)})
        assert not listing.is_error and "inject.txt" in text(listing)
    assert not (files / "new.txt").exists()
    [(_, _, labels)] = runs_of(agent)
    assert labels == "{area:acme/platform,origin:event/mcp-client,origin:tool}"


async def test_tools_listed_prefixed_and_in_the_catalog(tmp_path: Path, files: Path) -> None:
    config, _ = write_config(
        tmp_path / "gw.toml", files=files, tools={"everything.echo": {"trusted": True}}
    )
    async with stdio_gateway(gateway_args(config)) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {n.split(".")[0] for n in tools} == {"fs", "everything"}
    assert "fs.read_text_file" in tools and "everything.echo" in tools
    # the upstream's description and input schema, under the prefixed name
    assert tools["fs.write_file"].input_schema["required"] == ["path", "content"]
    assert tools["everything.echo"].description
    with connect() as conn:
        catalog = dict(
            conn.execute(
                "SELECT name, (effect, trusted_output)::text FROM pg_labels.tools "
                "WHERE name = ANY(%s)",
                [list(tools)],
            ).fetchall()
        )
    assert set(catalog) == set(tools)
    for name, effect in FS_EFFECTS.items():
        assert catalog[name] == f"({effect},f)"
    assert catalog["everything.echo"] == "(read,t)"


async def test_an_upstream_changes_its_tools(tmp_path: Path) -> None:
    """notifications/tools/list_changed: the gateway lists again, writes the new tool to the
    catalog with its annotations' effect, and tells its sessions."""
    config, agent = write_config(tmp_path / "gw.toml", everything=None, changing=True)
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with stdio_gateway(gateway_args(config), on_message) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"changing.enable_archive"}
        unknown = await session.call_tool("changing.archive", {"id": "r1"})
        assert unknown.is_error and "unknown tool" in text(unknown)
        enabled = await session.call_tool("changing.enable_archive", {})
        assert not enabled.is_error, text(enabled)
        with anyio.fail_after(20):
            await changed.wait()
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"changing.enable_archive", "changing.archive"}
        with connect() as conn:
            row = conn.execute(
                "SELECT effect, trusted_output FROM pg_labels.tools WHERE name = %s",
                ["changing.archive"],
            ).fetchone()
        assert row == ("destructive", False)
        # and it is judged like any other: enable_archive's untrusted output is in the run
        archive = await session.call_tool("changing.archive", {"id": "r1"})
        assert archive.is_error and "untrusted_to_irreversible" in text(archive)
    [(run, _, _)] = runs_of(agent)
    assert [s[1] for s in steps_of(run) if s[0] == "tool_called"] == ["changing.enable_archive"]


async def test_untrusted_file_refuses_irreversible_calls(tmp_path: Path, files: Path) -> None:
    # approval_wait = 0: an asked call is refused at once, with its request's id (the calls
    # the gateway holds until a person decides: test_approvals.py)
    config, agent = write_config(
        tmp_path / "gw.toml", files=files, everything=None, approval_wait=0
    )
    async with stdio_gateway(gateway_args(config)) as session:
        # a clean run may write
        ok = await session.call_tool(
            "fs.write_file", {"path": str(files / "draft.txt"), "content": "v1"}
        )
        assert not ok.is_error, text(ok)
        assert (files / "draft.txt").read_text() == "v1"
        # reading a file is allowed and recorded; its content enters the run as origin:tool
        read = await session.call_tool("fs.read_text_file", {"path": str(files / "inject.txt")})
        assert not read.is_error and "IMPORTANT SYSTEM INSTRUCTION" in text(read)
        before = snapshot(files)

        moved = await session.call_tool(
            "fs.move_file",
            {"source": str(files / "secrets.txt"), "destination": str(files / "exfil.txt")},
        )
        assert moved.is_error
        message = text(moved)
        assert "untrusted_to_irreversible" in message
        assert "{origin:tool}" in message
        assert "HINT:" in message
        overwrite = await session.call_tool(
            "fs.write_file", {"path": str(files / "notes.txt"), "content": "pwned"}
        )
        assert overwrite.is_error and "untrusted_to_irreversible" in text(overwrite)

        # a reversible write asks: refused with the request's id until a person grants it
        mkdir = {"path": str(files / "reports")}
        asked = await session.call_tool("fs.create_directory", mkdir)
        assert asked.is_error and "approval_required" in text(asked)
        request = int(text(asked).split("Approval request ")[1].split()[0])
        assert snapshot(files) == before  # nothing reached the file system
        again = await session.call_tool("fs.create_directory", mkdir)
        assert again.is_error and f"request {request} waits" in text(again)
        with psycopg.connect(dsn(ALICE), autocommit=True) as alice:
            alice.execute("SELECT pg_labels.decide_approval(%s, true, 'fine')", [request])
        granted = await session.call_tool("fs.create_directory", mkdir)
        assert not granted.is_error, text(granted)
        assert (files / "reports").is_dir()
        once = await session.call_tool("fs.create_directory", mkdir)
        assert once.is_error and "approval_required" in text(once)
        # other arguments are not approved
        other = await session.call_tool("fs.create_directory", {"path": str(files / "x")})
        assert other.is_error

    after = snapshot(files)
    assert after == {**before, "reports/": ""}
    assert (files / "inject.txt").read_text() == INJECTED
    assert not (files / "exfil.txt").exists()

    [(run, scope, labels)] = runs_of(agent)
    assert scope == "acme/platform" and labels == "{area:acme/platform,origin:tool}"
    trail = steps_of(run)
    called = [(s[1], s[2]) for s in trail if s[0] == "tool_called"]
    assert called == [
        ("fs.write_file", {"path": str(files / "draft.txt"), "content": "v1"}),
        ("fs.read_text_file", {"path": str(files / "inject.txt")}),
        ("fs.create_directory", mkdir),
    ]
    results = [(s[1], s[3]) for s in trail if s[0] == "tool_result"]
    assert results == [(t, "{origin:tool}") for t, _ in called]
    blocked = [(s[1], s[5]) for s in trail if s[0] == "gate_decided" and s[4] == "block"]
    assert blocked == [
        ("fs.move_file", "untrusted_to_irreversible"),
        ("fs.write_file", "untrusted_to_irreversible"),
    ]
    used = [s[6] for s in trail if s[0] == "tool_called" and s[1] == "fs.create_directory"]
    assert used == [request]


async def test_unknown_tool_and_silent_upstream(tmp_path: Path, files: Path) -> None:
    config, agent = write_config(
        tmp_path / "gw.toml", files=files, call_timeout=2, everything="stdio"
    )
    async with stdio_gateway(gateway_args(config)) as session:
        unknown = await session.call_tool("fs.format_disk", {})
        assert unknown.is_error and "unknown tool" in text(unknown)
        # server-everything's long-running operation outlasts the call timeout (2 s)
        slow = await session.call_tool(
            "everything.trigger-long-running-operation", {"duration": 6, "steps": 2}
        )
        assert slow.is_error and "did not answer within 2s" in text(slow)
        echo = await session.call_tool("everything.echo", {"message": "still here"})
        assert not echo.is_error and "still here" in text(echo)
    [(run, _, _)] = runs_of(agent)
    kinds = [(s[0], s[1]) for s in steps_of(run)]
    assert ("tool_called", "fs.format_disk") not in kinds
    # the call that timed out is on the trail with the failure as its result
    assert kinds.count(("tool_result", "everything.trigger-long-running-operation")) == 1


async def test_sessions_keep_separate_runs_and_scopes(tmp_path: Path, files: Path) -> None:
    config, agent = write_config(tmp_path / "gw.toml", files=files, everything=None)
    finance, finance_agent = write_config(
        tmp_path / "finance.toml", files=files, everything=None, scope="acme/finance"
    )
    finance_args = gateway_args(finance, database=dsn(FINANCE))
    with http_gateway(gateway_args(config)) as url, http_gateway(finance_args) as f_url:
        async with http_session(url) as a, http_session(url) as b, http_session(f_url) as c:
            read = await a.call_tool("fs.read_text_file", {"path": str(files / "inject.txt")})
            assert not read.is_error
            refused = await a.call_tool(
                "fs.write_file", {"path": str(files / "a.txt"), "content": "a"}
            )
            assert refused.is_error and "untrusted_to_irreversible" in text(refused)
            # the other session's run does not carry what the first one read
            written = await b.call_tool(
                "fs.write_file", {"path": str(files / "b.txt"), "content": "b"}
            )
            assert not written.is_error, text(written)
            # nor does a session of another scope: the gateway shares no artifacts
            written = await c.call_tool(
                "fs.write_file", {"path": str(files / "c.txt"), "content": "c"}
            )
            assert not written.is_error, text(written)
    assert not (files / "a.txt").exists()
    assert (files / "b.txt").read_text() == "b" and (files / "c.txt").read_text() == "c"
    runs = runs_of(agent)
    assert len(runs) == 2
    carried = {
        tuple(s[1] for s in steps_of(r) if s[0] == "tool_called"): labels for r, _, labels in runs
    }
    assert carried == {
        ("fs.read_text_file",): "{area:acme/platform,origin:tool}",
        ("fs.write_file",): "{area:acme/platform,origin:tool}",
    }
    [(f_run, f_scope, _)] = runs_of(finance_agent)
    assert f_scope == "acme/finance"
    assert [s[0] for s in steps_of(f_run)] == ["gate_decided", "tool_called", "tool_result"]
    # no context crossed: nothing shared to the finance run, and none of its steps read any
    with connect() as conn:
        shared = conn.execute(
            "SELECT count(*) FROM pg_labels.shares WHERE to_run = %s OR to_scope = 'acme/finance'",
            [f_run],
        ).fetchone()
    assert shared == (0,)


@pytest.fixture
def own_cluster() -> Any:
    """A cluster of this test's own (initdb from PGBIN) with pg_labels and the gateway's
    roles: the test stops and starts it."""
    pgbin = Path(os.environ["PGBIN"])
    base = Path(tempfile.mkdtemp(prefix="pg_labels_mcp_cluster."))
    data, port = base / "data", free_port()
    as_owner: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        as_owner = ["runuser", "-u", "postgres", "--"]

    def pg_ctl(*args: str) -> None:
        subprocess.run(
            [*as_owner, str(pgbin / "pg_ctl"), "-D", str(data), *args],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    subprocess.run(
        [
            *as_owner,
            str(pgbin / "initdb"),
            *("-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"),
            *("--encoding", "UTF8", "--locale", "C.UTF-8"),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    opts = f"-c listen_addresses='' -k {base} -p {port} -c fsync=off"

    def start() -> None:
        pg_ctl("-l", str(base / "log"), "-o", opts, "-w", "start")

    def stop() -> None:
        pg_ctl("-m", "immediate", "-w", "stop")

    start()
    admin = f"host={base} port={port} user=postgres dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE mcp")
    db = f"host={base} port={port} user=postgres dbname=mcp"
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_labels")
        grant_roles(conn)
    try:
        yield {"base": base, "port": port, "start": start, "stop": stop, "db": db}
    finally:
        try:
            stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(base, ignore_errors=True)


async def test_database_stopped_mid_session(
    tmp_path: Path, files: Path, own_cluster: dict[str, Any]
) -> None:
    base, port = own_cluster["base"], own_cluster["port"]
    platform = f"host={base} port={port} user={PLATFORM} dbname=mcp"
    catalog = f"host={base} port={port} user=labels_mcp_catalog dbname=mcp"
    # write_file's output trusted here, so that the run stays clean and writes stay allowed
    config, agent = write_config(
        tmp_path / "gw.toml",
        files=files,
        everything=None,
        db_timeout=3,
        tools={"fs.write_file": {"trusted": True}},
    )
    args = ["--database", platform, "--catalog-database", catalog, "--config", str(config)]
    async with stdio_gateway(args) as session:
        first = await session.call_tool(
            "fs.write_file", {"path": str(files / "one.txt"), "content": "1"}
        )
        assert not first.is_error, text(first)

        own_cluster["stop"]()
        for n in (2, 3):
            refused = await session.call_tool(
                "fs.write_file", {"path": str(files / f"down{n}.txt"), "content": "x"}
            )
            assert refused.is_error
            assert "refused fs.write_file" in text(refused)
            assert "not forwarded" in text(refused) or "could not be checked" in text(refused)
            # and nothing of the database's internals: no socket, host or FATAL message
            for internal in ("socket", "FATAL", str(base), "connection to server"):
                assert internal not in text(refused), text(refused)
        assert not (files / "down2.txt").exists() and not (files / "down3.txt").exists()

        own_cluster["start"]()
        with anyio.fail_after(30):
            while True:
                back = await session.call_tool(
                    "fs.write_file", {"path": str(files / "two.txt"), "content": "2"}
                )
                if not back.is_error:
                    break
                await anyio.sleep(0.5)
        assert (files / "two.txt").read_text() == "2"

    [(run, _, labels)] = runs_of(agent, own_cluster["db"])
    assert labels == "{area:acme/platform}"
    called = [s[2]["path"] for s in steps_of(run, own_cluster["db"]) if s[0] == "tool_called"]
    assert called == [str(files / "one.txt"), str(files / "two.txt")]
    with connect(own_cluster["db"]) as conn:
        assert conn.execute("SELECT intact FROM pg_labels.verify(%s)", [run]).fetchone() == (True,)


async def test_200_calls_from_4_sessions(tmp_path: Path) -> None:
    sessions, calls = 4, 50
    with everything_http() as upstream:
        config, agent = write_config(tmp_path / "gw.toml", everything=upstream)
        with http_gateway(gateway_args(config)) as url:

            async def client(n: int) -> None:
                async with http_session(url) as session:
                    for i in range(calls):
                        result = await session.call_tool(
                            "everything.echo", {"message": f"s{n}-{i}"}
                        )
                        assert not result.is_error, text(result)
                        assert f"s{n}-{i}" in text(result)

            async with anyio.create_task_group() as tg:
                for n in range(sessions):
                    tg.start_soon(client, n)

    runs = runs_of(agent)
    assert len(runs) == sessions
    seen = set()
    for run, _, _ in runs:
        trail = steps_of(run)
        messages = [s[2]["message"] for s in trail if s[0] == "tool_called"]
        n = messages[0].split("-")[0]
        assert messages == [f"{n}-{i}" for i in range(calls)]
        seen.add(n)
        # each call: its gate decision, the call, its result, in that order
        assert [s[0] for s in trail] == ["gate_decided", "tool_called", "tool_result"] * calls
        with connect() as conn:
            row = conn.execute("SELECT intact, steps FROM pg_labels.verify(%s)", [run]).fetchone()
        assert row == (True, 3 * calls), json.dumps(str(row))
    assert seen == {f"s{n}" for n in range(sessions)}
