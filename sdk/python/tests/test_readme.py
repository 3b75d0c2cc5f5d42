"""The README's quick start runs as written against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support import Server

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start() -> str:
    section = README.read_text().split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no python block under '## Quick start'"
    return match.group(1)


def test_quick_start_runs(server: Server, ns: str) -> None:
    src = str(README.parent / "src")
    env = {**os.environ, "TIDELINE_URL": server.url, "TIDELINE_TOKEN": server.tokens.admin,
           "TIDELINE_NAMESPACE": ns, "PYTHONPATH": src}
    for attempt in (1, 2):  # the second run takes the "already exists" branch
        out = subprocess.run([sys.executable, "-c", quick_start()], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "nightly-report fires next at" in out.stdout
        assert "a backfill of the last week would start 7 runs" in out.stdout
        triggers = "trigger: triggered" if attempt == 1 else "trigger: skipped overlap_policy_skip"
        assert triggers in out.stdout
    assert re.search(r"^1 \S+ ScheduleCreated$", out.stdout, re.M), out.stdout
    assert re.search(r"^run \S+ pending$", out.stdout, re.M), out.stdout
