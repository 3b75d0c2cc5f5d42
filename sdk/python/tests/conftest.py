"""Runs the SDK against a real `tideline serve`: the binary is built once per
session from the repository, and one server is started per database (a fresh
SQLite file; and, when TIDELINE_TEST_DATABASE_URL is set, a fresh PostgreSQL
schema, dropped afterwards — as database/dbtest does). Tokens are on.

Each test works in its own namespace, so tests share a server without
seeing each other's schedules.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import pytest

import tideline
from support import BOUND_NAMESPACE, Server, Tokens

REPO_ROOT = Path(__file__).resolve().parents[3]
PG_ENV = "TIDELINE_TEST_DATABASE_URL"
BACKENDS = ["sqlite"] + (["postgres"] if os.environ.get(PG_ENV) else [])

def _write_tokens_file(path: Path) -> Tokens:
    tokens = Tokens(*(f"tl_{secrets.token_urlsafe(24)}" for _ in range(5)))

    def entry(name: str, role: str, token: str, namespaces: list[str] | None = None) -> dict[str, object]:
        out: dict[str, object] = {"name": name, "role": role, "token_sha256": hashlib.sha256(token.encode()).hexdigest()}
        if namespaces:
            out["namespaces"] = namespaces
        return out

    principals = [
        entry("sdk-admin", "admin", tokens.admin),
        entry("sdk-operator", "operator", tokens.operator),
        entry("sdk-viewer", "viewer", tokens.viewer),
        entry("sdk-bound", "admin", tokens.bound, [BOUND_NAMESPACE]),
        entry("sdk-worker", "worker", tokens.worker),
    ]
    path.write_text(json.dumps({"principals": principals}))
    return tokens


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, deadline_s: float = 60.0) -> None:
    """Polls /readyz until it answers 200; fails early if the server exits."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"tideline serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail(f"tideline serve was not ready within {deadline_s}s:\n{log.read_text()[-4000:]}")


def _psql(base_url: str, sql: str) -> None:
    psql = shutil.which("psql")
    if psql is None:
        pytest.fail(f"{PG_ENV} is set but psql is not installed")
    subprocess.run([psql, base_url, "-v", "ON_ERROR_STOP=1", "-qc", sql], check=True, capture_output=True)


def _with_search_path(base_url: str, schema: str) -> str:
    parts = urlsplit(base_url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "search_path"] + [("search_path", schema)]
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.fixture(scope="session")
def tideline_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server binary: $TIDELINE_BINARY, else built from this checkout."""
    if prebuilt := os.environ.get("TIDELINE_BINARY"):
        return Path(prebuilt)
    out = tmp_path_factory.mktemp("bin") / "tideline"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=REPO_ROOT, check=True)
    return out


@pytest.fixture(scope="session", params=BACKENDS)
def server(request: pytest.FixtureRequest, tideline_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    dialect: str = request.param
    work = tmp_path_factory.mktemp(f"serve-{dialect}")
    tokens = _write_tokens_file(work / "tokens.json")
    schema = None
    if dialect == "postgres":
        base = os.environ[PG_ENV]
        schema = f"sdk_{secrets.token_hex(6)}"
        _psql(base, f"CREATE SCHEMA {schema}")
        database = _with_search_path(base, schema)
    else:
        database = f"sqlite:{work / 'tideline.db'}"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = work / "serve.log"
    with log.open("wb") as log_file:
        # --no-loop: nothing fires on its own, so every run and event in a
        # test comes from the test's own calls.
        proc = subprocess.Popen(
            [str(tideline_binary), "serve", "--addr", f"127.0.0.1:{port}", "--database", database,
             "--tokens-file", str(work / "tokens.json"), "--no-loop", "--log-level", "warn"],
            cwd=work, stdout=log_file, stderr=subprocess.STDOUT,
        )
    try:
        _wait_ready(url, proc, log)
        yield Server(url=url, dialect=dialect, tokens=tokens)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if schema is not None:
            _psql(os.environ[PG_ENV], f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def ns() -> str:
    """A namespace of this test's own."""
    return f"t-{secrets.token_hex(5)}"


@pytest.fixture
async def client(server: Server, ns: str) -> AsyncIterator[tideline.Client]:
    async with tideline.Client(server.url, token=server.tokens.admin, namespace=ns) as c:
        yield c
