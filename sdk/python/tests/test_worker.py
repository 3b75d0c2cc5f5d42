"""tideline.Worker and SyncWorker against a real server: handlers, results,
cancellation, NonRetryable and graceful stop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import tideline
from support import Server



@pytest.fixture
async def worker_client(server: Server, ns: str) -> AsyncIterator[tideline.Client]:
    async with tideline.Client(server.url, token=server.tokens.worker, namespace=ns) as c:
        yield c


async def start(client: tideline.Client, schedule_id: str, workflow_type: str, input: Any = None,
                max_attempts: int = 1) -> str:
    action: dict[str, Any] = {"workflow_type": workflow_type, "retry_policy": {"max_attempts": max_attempts}}
    if input is not None:
        action["input"] = input
    await client.create_schedule(schedule_id, cron="0 3 * * *", action=action, overlap_policy="allow_all")
    run_id = (await client.trigger_schedule(schedule_id)).run_id
    assert run_id is not None
    return run_id


async def wait_run(client: tideline.Client, run_id: str, done: Callable[[tideline.Run], bool], timeout: float = 20.0) -> tideline.Run:
    deadline = time.monotonic() + timeout
    while True:
        run = (await client.get_run(run_id)).run
        if done(run):
            return run
        assert time.monotonic() < deadline, f"run {run_id} stayed {run.status}"
        await asyncio.sleep(0.02)


def finished(run: tideline.Run) -> bool:
    return run.status not in ("pending", "running")


async def running(worker: tideline.Worker) -> asyncio.Task[None]:
    return asyncio.ensure_future(worker.run())


async def stop(worker: tideline.Worker, task: asyncio.Task[None]) -> None:
    worker.stop()
    await asyncio.wait_for(task, timeout=30)


def new_worker(client: tideline.Client, handlers: dict[str, tideline.worker.Handler], **kw: Any) -> tideline.Worker:
    kw.setdefault("lease_seconds", 3)
    kw.setdefault("poll_wait_seconds", 1)
    return tideline.Worker(client, handlers=handlers, **kw)


async def test_async_and_sync_handlers_get_the_run_and_complete_it(client: tideline.Client, worker_client: tideline.Client, ns: str) -> None:
    seen: list[tideline.RunContext] = []

    async def report(ctx: tideline.RunContext) -> dict[str, Any]:
        seen.append(ctx)
        await asyncio.sleep(0.01)
        return {"region": ctx.input["region"], "attempt": ctx.attempt}

    def cleanup(ctx: tideline.RunContext) -> str:
        assert threading.current_thread() is not threading.main_thread(), "sync handlers run in a thread"
        seen.append(ctx)
        return "cleaned"

    first = await start(client, "report", "report", {"region": "eu"})
    second = await start(client, "cleanup", "cleanup")
    worker = new_worker(worker_client, {"report": report, "cleanup": cleanup}, concurrency=2, worker_id="py-1")
    task = await running(worker)
    r1 = await wait_run(client, first, finished)
    r2 = await wait_run(client, second, finished)
    await stop(worker, task)

    assert (r1.status, r1.output, r1.worker_id) == ("completed", {"region": "eu", "attempt": 1}, "py-1")
    assert (r2.status, r2.output) == ("completed", "cleaned")
    ctx = next(c for c in seen if c.workflow_type == "report")
    assert (ctx.run_id, ctx.schedule_id, ctx.namespace, ctx.trigger, ctx.attempt) == (first, "report", ns, "manual", 1)
    assert ctx.instance_id and ctx.occurrence_time is not None and ctx.occurrence_time.tzinfo is not None
    assert not ctx.cancelled.is_set()


async def test_failures_non_retryable_and_unknown_types(client: tideline.Client, worker_client: tideline.Client) -> None:
    class QuotaExceeded(Exception):
        failure_type = "quota_exceeded"

    async def flaky(ctx: tideline.RunContext) -> None:
        if ctx.attempt == 1:
            raise ValueError("upstream said no")
        raise QuotaExceeded("monthly quota used up")

    async def strict(ctx: tideline.RunContext) -> None:
        raise tideline.NonRetryable("invoice 7 is malformed", type="bad_input")

    async def unserializable(ctx: tideline.RunContext) -> object:
        return object()

    retried = await start(client, "flaky", "flaky", max_attempts=2)
    refused = await start(client, "strict", "strict", max_attempts=5)
    odd = await start(client, "odd", "odd")
    unknown = await start(client, "nobody", "nobody")
    worker = new_worker(worker_client, {"flaky": flaky, "strict": strict, "odd": unserializable}, concurrency=4)
    task = await running(worker)
    r = await wait_run(client, retried, finished)
    assert (r.status, r.attempt, r.failure_type, r.failure_message) == ("failed", 2, "quota_exceeded", "monthly quota used up")
    detail = await client.get_run(retried)
    attempts = [e for e in detail.history if e.event_type == "RunAttemptFailed"]
    assert attempts and "ValueError" in str(attempts[0].payload)
    r = await wait_run(client, refused, finished)
    assert (r.status, r.attempt, r.failure_type) == ("failed", 1, "bad_input"), "NonRetryable ends the run at once"
    r = await wait_run(client, odd, finished)
    assert (r.status, r.failure_type) == ("failed", "invalid_output")
    r = await wait_run(client, unknown, finished)
    assert (r.status, r.failure_type) == ("failed", "unknown_workflow_type")
    await stop(worker, task)


async def test_cancellation_sets_the_event_then_cancels_the_task(client: tideline.Client, worker_client: tideline.Client) -> None:
    outcomes: dict[str, str] = {}
    started: dict[str, asyncio.Event] = {"polite": asyncio.Event(), "stubborn": asyncio.Event()}

    async def polite(ctx: tideline.RunContext) -> None:
        started["polite"].set()
        await ctx.cancelled.wait()
        outcomes["polite"] = "saw the event"
        raise RuntimeError("stopped on request")

    async def stubborn(ctx: tideline.RunContext) -> None:
        started["stubborn"].set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            outcomes["stubborn"] = f"cancelled, event set: {ctx.cancelled.is_set()}"
            raise

    a = await start(client, "polite", "polite")
    b = await start(client, "stubborn", "stubborn")
    worker = new_worker(worker_client, {"polite": polite, "stubborn": stubborn}, concurrency=2, cancel_grace=0.2)
    task = await running(worker)
    await asyncio.wait_for(started["polite"].wait(), 20)
    await asyncio.wait_for(started["stubborn"].wait(), 20)
    await client.cancel_run(a)
    await client.cancel_run(b)
    ra = await wait_run(client, a, finished)
    rb = await wait_run(client, b, finished)
    await stop(worker, task)
    assert (ra.status, rb.status) == ("cancelled", "cancelled")
    assert outcomes == {"polite": "saw the event", "stubborn": "cancelled, event set: True"}


async def test_stop_lets_running_handlers_finish(client: tideline.Client, worker_client: tideline.Client) -> None:
    release = asyncio.Event()
    began = asyncio.Event()

    async def job(ctx: tideline.RunContext) -> dict[str, bool]:
        began.set()
        await release.wait()
        return {"finished": True}

    run_id = await start(client, "job", "job")
    worker = new_worker(worker_client, {"job": job}, stop_grace=20)
    task = await running(worker)
    await asyncio.wait_for(began.wait(), 20)
    worker.stop()
    await asyncio.sleep(0.2)
    assert not task.done(), "run() waits for the running handler"
    release.set()
    await asyncio.wait_for(task, 20)
    run = (await client.get_run(run_id)).run
    assert (run.status, run.output) == ("completed", {"finished": True}), "reported before run() returned"


async def test_stop_grace_over_fails_the_run_as_worker_stopped(client: tideline.Client, worker_client: tideline.Client) -> None:
    began = asyncio.Event()
    cancelled: list[bool] = []

    async def forever(ctx: tideline.RunContext) -> None:
        began.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(ctx.cancelled.is_set())
            raise

    run_id = await start(client, "forever", "forever")
    worker = new_worker(worker_client, {"forever": forever}, stop_grace=0.1)
    task = await running(worker)
    await asyncio.wait_for(began.wait(), 20)
    await stop(worker, task)
    run = (await client.get_run(run_id)).run
    assert (run.status, run.failure_type) == ("failed", "worker_stopped")
    assert cancelled == [True]


def test_sync_worker_runs_until_stopped(server: Server, ns: str) -> None:
    with tideline.SyncClient(server.url, token=server.tokens.admin, namespace=ns) as admin, \
            tideline.SyncClient(server.url, token=server.tokens.worker, namespace=ns) as client:
        admin.create_schedule("sync-job", cron="0 3 * * *", action={"workflow_type": "sync-job", "input": [1, 2, 3]})
        run_id = admin.trigger_schedule("sync-job").run_id
        assert run_id is not None

        def total(ctx: tideline.RunContext) -> int:
            return sum(ctx.input)

        worker = tideline.SyncWorker(client, handlers={"sync-job": total}, lease_seconds=3, poll_wait_seconds=1)
        thread = threading.Thread(target=worker.run)
        thread.start()
        deadline = time.monotonic() + 20
        while (run := admin.get_run(run_id).run).status in ("pending", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        worker.stop()
        thread.join(30)
        assert not thread.is_alive()
        assert (run.status, run.output) == ("completed", 6)


def test_bad_settings_fail_at_construction() -> None:
    client = tideline.Client("http://127.0.0.1:1")

    async def noop(ctx: tideline.RunContext) -> None:
        return None

    cases: list[tuple[dict[str, Any], str]] = [
        ({"handlers": {}}, "at least one"),
        ({"handlers": {"a": noop}, "concurrency": 0}, "concurrency"),
        ({"handlers": {"a": noop}, "lease_seconds": 3601}, "lease_seconds"),
        ({"handlers": {"a": noop}, "poll_wait_seconds": 31}, "poll_wait_seconds"),
        ({"handlers": {"a": noop}, "cancel_grace": -1}, "grace"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            tideline.Worker(client, **kwargs)


def test_retry_after_is_read_from_error_answers() -> None:
    import httpx

    from tideline.errors import error_from_response

    answer = httpx.Response(503, headers={"Retry-After": "7"},
                            json={"error": {"code": "database_unavailable", "message": "the database is unavailable"}})
    err = error_from_response(answer)
    assert (err.status, err.code, err.retry_after) == (503, "database_unavailable", 7.0)
    assert error_from_response(httpx.Response(500)).retry_after is None
