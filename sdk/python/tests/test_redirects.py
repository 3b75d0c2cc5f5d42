"""A 3xx answer is a typed error, and the redirect is never followed (issue 36, finding 5)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import tideline


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        type(self).seen.append(f"{self.command} {self.path} auth={self.headers.get('Authorization')} body={body}")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def redirecting() -> Iterator[tuple[str, str, type[_Recorder]]]:
    class Recorder(_Recorder):
        seen: list[str] = []

    target, target_url = _serve(Recorder)

    class Redirector(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(307)
            self.send_header("Location", target_url + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    redirector, redirector_url = _serve(Redirector)
    yield redirector_url, target_url, Recorder
    redirector.shutdown()
    target.shutdown()


async def test_a_redirect_is_a_typed_error_and_not_followed(redirecting: tuple[str, str, type[_Recorder]]) -> None:
    url, target_url, recorder = redirecting
    async with tideline.Client(url, token="tl_secret-token") as client:
        with pytest.raises(tideline.Redirected) as info:
            await client.describe_schedule("nightly")
        err = info.value
        assert isinstance(err, tideline.TidelineError)
        assert (err.status, err.code) == (307, "redirect_refused")
        assert err.location == target_url + "/waterline/api/v2/schedules/nightly"
        assert f"Location {err.location}" in err.message

        with pytest.raises(tideline.Redirected):
            await client.create_schedule("x", cron="@daily", action={"workflow_type": "w"})
    assert recorder.seen == [], "nothing reached the redirect's target"


def test_the_sync_client_raises_it_too(redirecting: tuple[str, str, type[_Recorder]]) -> None:
    url, _, recorder = redirecting
    with tideline.SyncClient(url, token="tl_secret-token") as client:
        with pytest.raises(tideline.Redirected):
            client.describe_schedule("nightly")
    assert recorder.seen == []
