"""docs/python.md: the runnable example runs as written and prints what its comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import PLATFORM

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def runnable_block() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    m = re.search(r"<!-- runnable -->\n```python\n(.*?)```", text, re.S)
    assert m, "docs/python.md has no runnable block"
    return m.group(1)


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


def test_the_guide_example() -> None:
    code = runnable_block()
    env = dict(os.environ, PGUSER=PLATFORM)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected_output(code)
