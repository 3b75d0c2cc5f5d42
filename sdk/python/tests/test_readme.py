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


def python_block(readme: Path, heading: str) -> str:
    section = readme.read_text().split(heading, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block under {heading!r} in {readme}"
    return match.group(1)


def run_worker_example(server: Server, ns: str, code: str) -> None:
    """Runs a README's worker example as a process: it completes a
    nightly-report run, then stops gracefully on SIGTERM."""
    import asyncio
    import signal
    import time

    import tideline

    async def trigger() -> str:
        async with tideline.Client(server.url, token=server.tokens.admin, namespace=ns) as admin:
            await admin.create_schedule("nightly", cron="0 3 * * *", action={"workflow_type": "nightly-report", "input": {"region": "us"}})
            run_id = (await admin.trigger_schedule("nightly")).run_id
            assert run_id is not None
            return run_id

    async def status(run_id: str) -> tideline.Run:
        async with tideline.Client(server.url, token=server.tokens.admin, namespace=ns) as admin:
            return (await admin.get_run(run_id)).run

    run_id = asyncio.run(trigger())
    env = {**os.environ, "TIDELINE_URL": server.url, "TIDELINE_TOKEN": server.tokens.worker, "TIDELINE_NAMESPACE": ns,
           "PYTHONPATH": str(README.parent / "src")}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while (run := asyncio.run(status(run_id))).status in ("pending", "running"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the example never completed the run"
            time.sleep(0.05)
        assert (run.status, run.output) == ("completed", {"region": "us", "rows": 42})
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert f"run {run_id} attempt 1 of nightly" in out


def test_worker_example_runs(server: Server, ns: str) -> None:
    run_worker_example(server, ns, python_block(README, "## Worker: run Python handlers for runs"))


def test_repository_readme_worker_example_runs(server: Server, ns: str) -> None:
    root_readme = README.parents[2] / "README.md"
    run_worker_example(server, ns, python_block(root_readme, "### 3. Run Python"))
