"""The generated sync twins (python/tools/async_to_sync.py's TWINS: the platform's calls and
their tests) are what their async sources generate: regenerated into a temporary directory
and compared with the committed files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "python" / "tools" / "async_to_sync.py"


def test_the_sync_twins_are_current() -> None:
    done = subprocess.run(
        [sys.executable, str(TOOL), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
