"""Retries of idempotent calls past 503 database_unavailable (SPEC §20).

A real HTTP server on a loopback port stands in for a Tideline whose
database is failing over: it answers what tideline serve answers then (503
``database_unavailable`` with ``Retry-After: 1``) a set number of times, then
the real answer of a missing schedule. The real server's side of the contract
is tested in Go (web/unavailable_test.go)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import tideline


class _Failover:
    def __init__(self) -> None:
        self.unavailable = 0  # how many more requests answer 503
        self.requests: list[tuple[str, float]] = []
        self.lock = threading.Lock()


@pytest.fixture
def failover() -> Iterator[tuple[str, _Failover]]:
    state = _Failover()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with state.lock:
                state.requests.append((self.command, time.monotonic()))
                down = state.unavailable > 0
                state.unavailable -= 1
            if down:
                status, headers = 503, {"Retry-After": "1"}
                body = {"error": {"code": "database_unavailable", "message": "the database is unavailable"}}
            else:
                status, headers = 404, {}
                body = {"error": {"code": "schedule_not_found", "message": 'schedule "s" not found'}}
            raw = json.dumps(body).encode()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


async def test_get_retries_past_database_unavailable(failover: tuple[str, _Failover]) -> None:
    url, state = failover
    state.unavailable = 2
    async with tideline.Client(url, backoff=lambda n: 0.0) as client:
        with pytest.raises(tideline.NotFound):
            await client.describe_schedule("s")
    assert [m for m, _ in state.requests] == ["GET"] * 3
    gaps = [b - a for (_, a), (_, b) in zip(state.requests, state.requests[1:])]
    assert all(g >= 0.9 for g in gaps), f"each retry waits Retry-After (1 s): {gaps}"


async def test_retries_are_bounded(failover: tuple[str, _Failover]) -> None:
    url, state = failover
    state.unavailable = 100
    async with tideline.Client(url, retries=2, backoff=lambda n: 0.0) as client:
        with pytest.raises(tideline.TidelineError) as info:
            await client.delete_schedule("s")
    assert (info.value.status, info.value.code) == (503, "database_unavailable")
    assert len(state.requests) == 2


async def test_post_is_sent_once(failover: tuple[str, _Failover]) -> None:
    url, state = failover
    state.unavailable = 1
    async with tideline.Client(url, backoff=lambda n: 0.0) as client:
        with pytest.raises(tideline.TidelineError) as info:
            await client.trigger_schedule("s")
    assert (info.value.status, info.value.code) == (503, "database_unavailable")
    assert len(state.requests) == 1, "a trigger sent twice could start two runs"


async def test_connection_refused_is_retried() -> None:
    attempts: list[int] = []

    def backoff(n: int) -> float:
        attempts.append(n)
        return 0.0

    async with tideline.Client("http://127.0.0.1:1", retries=3, backoff=backoff) as client:
        with pytest.raises(Exception):
            await client.describe_schedule("s")
    assert attempts == [1, 2]
