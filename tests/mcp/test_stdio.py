"""The gateway's stdio transport (pg_labels.mcp.stdio), as a client's process sees it: a line
longer than max_request_bytes is skipped (the next message is answered), whether it comes in
pieces or whole in one read, one of exactly max_request_bytes is answered, a client that never
reads its answers does not grow the gateway's memory, and standard input that is a regular file
is served by the SDK's transport."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from conftest import GATEWAY, gateway_args, write_config

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def tools_list(request: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request, "method": "tools/list", "params": {}}


async def answer(out: BufferedByteReceiveStream, request: int) -> dict[str, Any]:
    """The gateway's answer to ``request`` (notifications before it are passed over)."""
    with anyio.fail_after(60):
        while True:
            message = json.loads(await out.receive_until(b"\n", 1 << 24))
            if message.get("id") == request:
                assert isinstance(message, dict)
                return message


async def test_an_overlong_line_is_skipped(tmp_path: Path) -> None:
    config, _ = write_config(tmp_path / "gw.toml", max_request_bytes=1024)
    process: Process = await anyio.open_process(
        [GATEWAY, *gateway_args(config)], stderr=subprocess.PIPE
    )
    async with process:
        assert process.stdin is not None and process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        await process.stdin.send(line(INITIALIZE))
        assert "result" in await answer(out, 1)
        await process.stdin.send(line(INITIALIZED))
        # a request of 100 kB, sent in pieces, then one within the bound
        overlong = line({**tools_list(2), "params": {"cursor": "x" * 100_000}})
        for start in range(0, len(overlong), 4096):
            await process.stdin.send(overlong[start : start + 4096])
        await process.stdin.send(line(tools_list(3)))
        listed = await answer(out, 3)
        assert [t["name"] for t in listed["result"]["tools"]], listed
        await process.stdin.aclose()
        with anyio.fail_after(60):
            await process.wait()
        assert process.stderr is not None
        err = b""
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                err += await process.stderr.receive()
    assert b"longer than max_request_bytes (1024) was skipped" in err, err


async def stderr_of(process: Process) -> bytes:
    assert process.stderr is not None
    err = b""
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            err += await process.stderr.receive()
    return err


async def test_an_overlong_line_in_one_read_is_skipped(tmp_path: Path) -> None:
    """A line over the bound that arrives whole, its newline in the same read as its start
    (here with the next request, in one write), is skipped as one that comes in pieces; a
    line of exactly max_request_bytes is answered."""
    config, _ = write_config(tmp_path / "gw.toml", max_request_bytes=1024)
    process: Process = await anyio.open_process(
        [GATEWAY, *gateway_args(config)], stderr=subprocess.PIPE
    )
    async with process:
        assert process.stdin is not None and process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        await process.stdin.send(line(INITIALIZE))
        assert "result" in await answer(out, 1)
        await process.stdin.send(line(INITIALIZED))
        overlong = line({**tools_list(2), "params": {"cursor": "x" * 30_000}})
        await process.stdin.send(overlong + line(tools_list(3)))
        seen = []
        with anyio.fail_after(60):
            while not seen or seen[-1] != 3:
                message = json.loads(await out.receive_until(b"\n", 1 << 24))
                seen.append(message.get("id"))
        assert 2 not in seen, seen
        # exactly at the bound (the newline not counted): answered
        empty = json.dumps({**tools_list(4), "params": {"cursor": ""}})
        exact = {**tools_list(4), "params": {"cursor": "y" * (1024 - len(empty))}}
        assert len(json.dumps(exact)) == 1024
        await process.stdin.send(line(exact))
        assert "result" in await answer(out, 4)
        await process.stdin.aclose()
        with anyio.fail_after(60):
            await process.wait()
        err = await stderr_of(process)
    assert err.count(b"longer than max_request_bytes (1024) was skipped") == 1, err


async def test_a_regular_file_as_standard_input(tmp_path: Path) -> None:
    """Standard input and output that the event loop cannot watch (files): the SDK's
    transport serves them."""
    config, _ = write_config(tmp_path / "gw.toml")
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(line(INITIALIZE) + line(INITIALIZED))
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        process = await anyio.run_process(
            [GATEWAY, *gateway_args(config)], stdin=stdin, stdout=stdout, check=False
        )
    assert process.returncode == 0, process.stderr
    [initialized] = [json.loads(text) for text in answers.read_text().splitlines()]
    assert initialized["id"] == 1 and "result" in initialized, initialized


def rss(pid: int) -> int:
    """A process's resident memory, in bytes."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmRSS:"):
            return int(text.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_a_client_that_never_reads_holds_the_gateway_to_a_few_answers(
    tmp_path: Path,
) -> None:
    """A client that sends requests as fast as it can and never reads its answers: once the
    answers fill the pipe, the gateway reads no more requests, so its memory stays where it
    was (it grew by about 16 MB a second, each request's task holding its answer); when the
    client reads, every request is answered."""
    config, _ = write_config(tmp_path / "gw.toml")
    process: Process = await anyio.open_process(
        [GATEWAY, *gateway_args(config)], stderr=subprocess.DEVNULL
    )
    async with process:
        assert process.stdin is not None and process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        await process.stdin.send(line(INITIALIZE))
        assert "result" in await answer(out, 1)
        await process.stdin.send(line(INITIALIZED))
        # one answered first, so that what a tools/list needs is in memory before it is measured
        await process.stdin.send(line(tools_list(2)))
        assert "result" in await answer(out, 2)
        before = rss(process.pid)
        batch = b"".join(line(tools_list(n)) for n in range(10, 1010))
        with anyio.move_on_after(8):
            while True:
                await process.stdin.send(batch)
        grown = rss(process.pid) - before
        assert grown < 50 << 20, f"the gateway grew by {grown >> 20} MB"
        # the client reads now (while it sends the last request: the pipe is full), and every
        # request is answered (one cut by the timeout is ended by the newline)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(process.stdin.send, b"\n" + line(tools_list(99_999)))
            listed = await answer(out, 99_999)
        assert [t["name"] for t in listed["result"]["tools"]], listed
        await process.stdin.aclose()
        with anyio.fail_after(60):
            await process.wait()
