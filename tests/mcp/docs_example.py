"""docs/mcp.md's "With the Python client", as written: its Python block and the page's
configuration (the first ```toml block of "The configuration"), both read from the page, run
with the roles and grants the page's "Roles and grants" made (tests/mcp/run.sh runs that block
first, in the database PGDATABASE). The gateway's first start (the catalog written) and a
start with the catalog current, then once more without catalog_database: with --database and
--config alone, the role the page grants the sessions (it only reads pg_labels.tools) starts
the gateway, the catalog being current.

Only what names this machine is replaced, each where the page names it: the database's host
(db/app: the test cluster's PGHOST, PGPORT and PGDATABASE), the files' directory (/srv/files: a
directory of this test's, holding notes.txt), server-everything's address (127.0.0.1:3001: a
free port it listens on) and `npx -y @modelcontextprotocol/server-NAME` (an npx on PATH that
runs the server tests/mcp/run.sh installed: MCP_SERVERS). The gateway is the pg-labels-mcp of
PATH (run.sh's venv).

    docs_example.py ROOT     (PGHOST, PGPORT, PGDATABASE, MCP_SERVERS from the environment)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from urllib.parse import quote

import psycopg

from conftest import everything_http  # tests/mcp, the directory of this script

NOTES = "Meeting at 10.\n"


def block(page: str, heading: str, lang: str) -> str:
    """The first ```lang block after a heading of the page."""
    start = page.index(f"\n{heading}\n")
    found = re.search(rf"\n```{lang}\n(.*?)\n```\n", page[start:], re.S)
    assert found, f"docs/mcp.md: no ```{lang} block after {heading!r}"
    return found.group(1)


def replace(text: str, old: str, new: str, what: str) -> str:
    assert old in text, f"docs/mcp.md's {what} no longer names {old!r}: update {__file__}"
    return text.replace(old, new)


def main() -> int:
    root = Path(sys.argv[1])
    page = (root / "docs" / "mcp.md").read_text(encoding="utf-8")
    client = block(page, "### With the Python client", "python")
    config = block(page, "## The configuration", "toml")
    host, port, db = os.environ["PGHOST"], os.environ["PGPORT"], os.environ["PGDATABASE"]
    servers = Path(os.environ["MCP_SERVERS"])
    with tempfile.TemporaryDirectory(prefix="pg_labels_mcp_docs.") as scratch_dir:
        scratch = Path(scratch_dir)
        files = scratch / "files"
        files.mkdir()
        (files / "notes.txt").write_text(NOTES)
        bindir = scratch / "bin"
        bindir.mkdir()
        npx = bindir / "npx"
        npx.write_text(
            "#!/bin/sh\n# npx -y @modelcontextprotocol/server-NAME ARGS: the installed server\n"
            '[ "$1" = -y ] && shift\n'
            "name=${1#@modelcontextprotocol/server-}; shift\n"
            f'exec "{servers}/mcp-server-$name" "$@"\n'
        )
        npx.chmod(0o755)
        url = f"postgresql://\\1@{quote(host, safe='')}:{port}/{db}"

        def here(text: str, what: str) -> str:
            assert re.search(r"postgresql://[a-z_]+@db/app", text), what
            text = re.sub(r"postgresql://([a-z_]+)@db/app", url, text)
            return replace(text, "/srv/files", str(files), what)

        program = here(client, "Python client")
        # the block as written, in a coroutine (it awaits), then what it found
        program = (
            "import asyncio, json\n\n\nasync def main():\n"
            + textwrap.indent(program, "    ")
            + "\n    print(json.dumps({'tools': [t.name for t in tools], "
            "'is_error': result.is_error, 'content': result.model_dump(mode='json')['content']}))"
            "\n\n\nasyncio.run(main())\n"
        )
        (scratch / "example.py").write_text(program)
        env = {
            "PATH": f"{bindir}:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
        }
        with everything_http() as everything:
            where = everything.removeprefix("http://").removesuffix("/mcp")
            toml = here(config, "configuration")
            toml = replace(toml, "127.0.0.1:3001", where, "configuration")
            for start in ("first start", "catalog current", "without catalog_database"):
                if start == "without catalog_database":
                    lines = toml.splitlines()
                    kept = [line for line in lines if not line.startswith("catalog_database")]
                    assert len(kept) == len(lines) - 1, "the configuration has no catalog_database"
                    toml = "\n".join(kept)
                (scratch / "gateway.toml").write_text(toml + "\n")
                done = subprocess.run(
                    [sys.executable, "example.py"],
                    cwd=scratch,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=180,
                )
                # the gateway's stderr is the example's: it says nothing of a successful run
                # (the reference servers say they started)
                said = [line for line in done.stderr.splitlines() if "pg-labels-mcp" in line]
                if done.returncode != 0 or said:
                    print(f"docs/mcp.md's Python client ({start}) failed:\n{done.stderr}")
                    return 1
                out = json.loads(done.stdout.splitlines()[-1])
                tools = set(out["tools"])
                assert {"fs.read_text_file", "fs.write_file", "everything.echo"} <= tools, tools
                assert not out["is_error"], out
                assert NOTES.strip() in json.dumps(out["content"]), out
                print(f"mcp: docs/mcp.md's Python client ({start}): {len(tools)} tools, a call")
    # each start's call is on the trail, as the page's roles wrote it
    with psycopg.connect(autocommit=True) as conn:
        steps = conn.execute(
            "SELECT s.kind, count(*) FROM pg_labels.steps s JOIN pg_labels.runs r "
            "ON r.id = s.run_id WHERE r.agent = 'desktop-assistant' "
            "AND s.tool = 'fs.read_text_file' GROUP BY s.kind ORDER BY s.kind"
        ).fetchall()
        owners = conn.execute(
            "SELECT DISTINCT owner FROM pg_labels.tools WHERE name LIKE 'fs.%'"
        ).fetchall()
    assert steps == [("gate_decided", 3), ("tool_called", 3), ("tool_result", 3)], steps
    assert owners == [("desktop-acme",)], owners
    return 0


if __name__ == "__main__":
    sys.exit(main())
