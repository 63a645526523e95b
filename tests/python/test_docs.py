"""docs/python.md and README.md: each runnable example runs as written and prints what its
comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PLATFORM

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "python.md"
README = Path(__file__).resolve().parents[2] / "README.md"


def runnable_blocks(page: Path = GUIDE, count: int = 4) -> list[str]:
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- runnable -->\n```python\n(.*?)```", text, re.S)
    # docs/python.md: the platform's calls, the LangGraph guard, the OpenAI Agents guard, the
    # spans; README.md: its Python service
    assert len(blocks) == count, f"{page.name} has {len(blocks)} runnable blocks"
    return blocks


def expected_output(code: str) -> list[str]:
    """What each print() should print: its trailing comment, or the comment line after it."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "print(" not in line:
            continue
        m = re.search(r"\)\s+#\s(.*)$", line)
        if m is None:
            m = re.match(r"\s*#\s(.*)$", lines[i + 1])
        assert m, f"print without its output in a comment: {line}"
        out.append(m.group(1).strip())
    return out


@pytest.mark.parametrize("index", range(4))
def test_the_guide_example(index: int) -> None:
    code = runnable_blocks()[index]
    env = dict(os.environ, PGUSER=PLATFORM)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected_output(code)


def test_the_readme_example() -> None:
    """The README's Python service, as its platform role (here the suite's)."""
    (code,) = runnable_blocks(README, 1)
    env = dict(os.environ, PGUSER=PLATFORM)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected_output(code)
