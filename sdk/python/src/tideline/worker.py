"""A worker that runs Python handlers for Tideline's runs (SPEC §15, CONTRACT §7).

    async def nightly_report(ctx: tideline.RunContext) -> dict[str, int]:
        rows = await build_report(ctx.input["region"], until=ctx.occurrence_time)
        return {"rows": rows}

    async with tideline.Client(URL, token=WORKER_TOKEN) as client:
        worker = tideline.Worker(client, queue="reports", handlers={"nightly-report": nightly_report}, concurrency=4)
        await worker.run()  # until worker.stop()

The worker long-polls the queue, runs each claimed run's handler with a
:class:`RunContext`, heartbeats while it runs, and reports the return value
(the run's output, JSON) or the exception (the run fails; retried by the
schedule's retry policy unless it is :class:`NonRetryable`). When the run's
cancellation is requested, ``ctx.cancelled`` is set, and ``cancel_grace``
seconds later the handler's task is cancelled (``asyncio.CancelledError``).
``stop()`` stops polling; running handlers get ``stop_grace`` seconds to
finish, are then cancelled, and every result is reported before ``run()``
returns. :class:`SyncWorker` is the blocking facade for scripts.

Sync handlers run in a thread (``asyncio.to_thread``). Python cannot stop a
thread: a sync handler should look at ``ctx.cancelled.is_set()`` now and
then. When its grace is over the worker reports the run and stops waiting,
but the thread runs on until the function returns.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Union

import httpx

from .client import Client, _path
from .errors import TidelineError
from .sync import SyncClient
from .types import JSON, parse_optional_time

logger = logging.getLogger("tideline.worker")

# Protocol bounds the server enforces (CONTRACT §7); checked up front so a
# bad setting fails at start-up, not as a poll loop the server rejects.
MAX_LEASE_SECONDS = 3600
MAX_POLL_LIMIT = 100
MAX_POLL_WAIT_SECONDS = 30

# What the worker reports on its own.
FAILURE_UNKNOWN_TYPE = "unknown_workflow_type"
FAILURE_CANCELLED = "cancelled"
FAILURE_STOPPED = "worker_stopped"
FAILURE_BAD_OUTPUT = "invalid_output"
FAILURE_NON_RETRYABLE = "non_retryable"

# A failure message stays readable and well inside the server's bounds.
MAX_MESSAGE_CHARS = 4096

# A result is retried through transient failures (connection errors, 5xx
# such as 503 database_unavailable, 429) for this long, honouring Retry-After.
REPORT_RETRY_SECONDS = 120.0


class NonRetryable(Exception):
    """Raise it from a handler to end the run at once, whatever its retry
    policy (bad input, a permission denied)::

        raise tideline.NonRetryable(f"invoice {ctx.input['id']} is malformed", type="bad_input")

    ``type`` is the failure type recorded with the run (default
    ``non_retryable``)."""

    def __init__(self, message: str = "", *, type: str | None = None) -> None:
        super().__init__(message)
        self.failure_type = type or FAILURE_NON_RETRYABLE


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a handler gets: the claimed run's facts, and ``cancelled``, set
    when the run's cancellation was requested (or its lease was lost, or the
    worker is stopping and its grace is over)."""

    run_id: str
    instance_id: str
    schedule_id: str | None
    namespace: str
    workflow_type: str
    trigger: str
    occurrence_time: datetime | None
    attempt: int
    input: Any
    lease_expires_at: datetime | None
    run_deadline_at: datetime | None
    execution_deadline_at: datetime | None
    cancelled: asyncio.Event = field(compare=False, repr=False)

    @classmethod
    def from_json(cls, d: JSON) -> RunContext:
        return cls(
            run_id=d["run_id"],
            instance_id=d["instance_id"],
            schedule_id=d.get("schedule_id"),
            namespace=d.get("namespace") or "",
            workflow_type=d["workflow_type"],
            trigger=d.get("trigger") or "",
            occurrence_time=parse_optional_time(d.get("occurrence_time")),
            attempt=int(d.get("attempt") or 0),
            input=d.get("input"),
            lease_expires_at=parse_optional_time(d.get("lease_expires_at")),
            run_deadline_at=parse_optional_time(d.get("run_deadline_at")),
            execution_deadline_at=parse_optional_time(d.get("execution_deadline_at")),
            cancelled=asyncio.Event(),
        )


Handler = Callable[[RunContext], Union[Awaitable[Any], Any]]


@dataclass(slots=True)
class _Result:
    output: Any = None
    failed: bool = False
    message: str = ""
    type: str = ""
    non_retryable: bool = False


def _failure(type_: str, message: str, *, non_retryable: bool = False) -> _Result:
    message = message or type_  # the server requires a message
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return _Result(failed=True, message=message, type=type_, non_retryable=non_retryable)


def _transient(exc: BaseException) -> bool:
    """Whether repeating the same request may succeed."""
    if isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, TidelineError) and (exc.status >= 500 or exc.status in (408, 429))


def _run_gone(exc: BaseException) -> bool:
    """The run is no longer this worker's: unknown (404), or finished,
    terminated, timed out or lost (409)."""
    return isinstance(exc, TidelineError) and exc.status in (404, 409)


def _retry_after(exc: BaseException) -> float:
    if isinstance(exc, TidelineError) and exc.retry_after is not None:
        return exc.retry_after
    return 0.0


def _backoff(attempt: int) -> float:
    """Doubles from 0.5 s to 30 s, drawn within the upper half so workers
    that failed together do not retry together."""
    d: float = min(0.5 * float(2 ** min(max(attempt - 1, 0), 6)), 30.0)
    return d / 2 + random.uniform(0, d / 2)


class Worker:
    """Polls one queue and runs a handler per workflow type. See the module
    documentation for the life of a run."""

    def __init__(
        self,
        client: Client,
        *,
        queue: str = "default",
        handlers: Mapping[str, Handler],
        concurrency: int = 1,
        connection: str = "default",
        worker_id: str | None = None,
        lease_seconds: int = 30,
        poll_wait_seconds: int = 20,
        cancel_grace: float = 30.0,
        stop_grace: float = 30.0,
    ) -> None:
        if not handlers:
            raise ValueError("handlers must map at least one workflow type to a function")
        if concurrency < 1:
            raise ValueError(f"concurrency {concurrency} must be at least 1")
        if not 1 <= lease_seconds <= MAX_LEASE_SECONDS:
            raise ValueError(f"lease_seconds {lease_seconds} must be between 1 and {MAX_LEASE_SECONDS}")
        if not 1 <= poll_wait_seconds <= MAX_POLL_WAIT_SECONDS:
            raise ValueError(f"poll_wait_seconds {poll_wait_seconds} must be between 1 and {MAX_POLL_WAIT_SECONDS}")
        if cancel_grace < 0 or stop_grace < 0:
            raise ValueError("cancel_grace and stop_grace must not be negative")
        for name, fn in handlers.items():
            if not name or not callable(fn):
                raise ValueError(f"handler for {name!r} must be a callable for a non-empty workflow type")
        self.client = client
        self.queue = queue
        self.connection = connection
        self.handlers = dict(handlers)
        self.concurrency = concurrency
        # The server requires the ID on every heartbeat and result, so it is
        # fixed before the first poll.
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.lease_seconds = lease_seconds
        self.poll_wait_seconds = poll_wait_seconds
        self.cancel_grace = cancel_grace
        self.stop_grace = stop_grace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_early = False  # stop() before run() started
        self._running = False

    # The protocol

    def _body(self, **fields: Any) -> JSON:
        body: JSON = {"worker_id": self.worker_id, **fields}
        if self.client.namespace:
            body["namespace"] = self.client.namespace
        return body

    async def _call(self, path: str, body: JSON, timeout: float) -> JSON:
        return await self.client._request("POST", path, body=body, timeout=timeout)

    async def _poll(self, limit: int) -> list[JSON]:
        body = self._body(connection=self.connection, queue=self.queue, limit=limit,
                          lease_seconds=self.lease_seconds, wait_seconds=self.poll_wait_seconds)
        # The server may hold the request for the whole wait.
        answer = await self._call("worker/poll", body, timeout=self.poll_wait_seconds + 30.0)
        runs = answer.get("runs") or []
        return [r for r in runs if isinstance(r, dict)]

    # Running

    def stop(self) -> None:
        """Stops polling; running handlers get ``stop_grace`` to finish.
        Safe to call from any thread and from signal handlers' callbacks."""
        loop, stopping = self._loop, self._stopping
        if loop is None or stopping is None:
            self._stop_early = True
            return
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop:
            stopping.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)

    async def run(self) -> None:
        """Polls and runs handlers until :meth:`stop`; returns once every
        claimed run has been reported. Raises the server's error when it
        rejects the poll itself (bad token, namespace or queue): retrying
        that would never succeed."""
        if self._running:
            raise RuntimeError("Worker.run is already running")
        self._running = True
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_early:
            self._stopping.set()
        slots = asyncio.Semaphore(self.concurrency)
        tasks: set[asyncio.Task[None]] = set()
        stop_all = asyncio.Event()  # set when the stop grace is over
        try:
            await self._poll_loop(slots, tasks, stop_all)
        finally:
            await self._drain(tasks, stop_all)
            self._running = False
            self._loop = None
            self._stopping = None
            self._stop_early = False

    async def _poll_loop(self, slots: asyncio.Semaphore, tasks: set[asyncio.Task[None]], stop_all: asyncio.Event) -> None:
        assert self._stopping is not None
        stopping = self._stopping
        failures = 0
        while not stopping.is_set():
            # Ask only for as many runs as there are free slots, so that a
            # claimed run never waits here while its lease ticks away.
            if not await self._acquire(slots, stopping):
                return
            if stopping.is_set():
                slots.release()
                return
            free = 1
            while free < min(self.concurrency, MAX_POLL_LIMIT) and not slots.locked():
                await slots.acquire()
                free += 1
            polled_at = time.monotonic()
            poll = asyncio.ensure_future(self._poll(free))
            stop_wait = asyncio.ensure_future(stopping.wait())
            await asyncio.wait({poll, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            stop_wait.cancel()
            if not poll.done():
                poll.cancel()
            runs: list[JSON] = []
            error: BaseException | None = None
            if poll.done() and not poll.cancelled():
                error = poll.exception()
                if error is None:
                    runs = poll.result()
            for _ in range(max(free - len(runs), 0)):
                slots.release()
            for i, raw in enumerate(runs):
                if i >= free:
                    await slots.acquire()  # the server handed out more than asked
                task = asyncio.ensure_future(self._execute(raw, polled_at, slots, stop_all))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if error is not None:
                if not _transient(error):
                    logger.error("worker %s: the server rejected the poll; stopping: %s", self.worker_id, error)
                    raise error
                failures += 1
                logger.warning("worker %s: poll failed (attempt %d): %s", self.worker_id, failures, error)
                await self._sleep(max(_backoff(failures), min(_retry_after(error), 30.0)), stopping)
            else:
                failures = 0

    @staticmethod
    async def _acquire(slots: asyncio.Semaphore, stopping: asyncio.Event) -> bool:
        """Waits for a free slot; False when stopping came first."""
        acquire = asyncio.ensure_future(slots.acquire())
        stop_wait = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({acquire, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
        if acquire.done():
            return True
        acquire.cancel()
        try:
            await acquire
        except asyncio.CancelledError:
            return False
        return True  # acquired before the cancellation took effect

    @staticmethod
    async def _sleep(seconds: float, stopping: asyncio.Event) -> None:
        try:
            await asyncio.wait_for(stopping.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    async def _drain(self, tasks: set[asyncio.Task[None]], stop_all: asyncio.Event) -> None:
        """The running handlers get the stop grace, then are cancelled; every
        result is reported before this returns."""
        if tasks:
            _, pending = await asyncio.wait(set(tasks), timeout=self.stop_grace)
            if pending:
                logger.warning("worker %s: stop grace over; cancelling %d handlers", self.worker_id, len(pending))
        stop_all.set()
        if tasks:
            await asyncio.wait(set(tasks))

    async def _execute(self, raw: JSON, polled_at: float, slots: asyncio.Semaphore, stop_all: asyncio.Event) -> None:
        try:
            ctx = RunContext.from_json(raw)
        except (KeyError, TypeError, ValueError) as exc:
            slots.release()
            logger.error("worker %s: unreadable run in a poll answer: %s", self.worker_id, exc)
            return
        try:
            fn = self.handlers.get(ctx.workflow_type)
            if fn is None:
                await self._report(ctx, _failure(FAILURE_UNKNOWN_TYPE, f"no handler is registered for workflow type "
                                                 f"{ctx.workflow_type!r} on worker {self.worker_id}"))
                return
            result = await self._supervise(fn, ctx, polled_at, stop_all)
            if result is not None:
                await self._report(ctx, result)
        finally:
            slots.release()

    async def _supervise(self, fn: Handler, ctx: RunContext, polled_at: float, stop_all: asyncio.Event) -> _Result | None:
        """Runs the handler beside its heartbeats; None when the run is no
        longer this worker's (nothing to report)."""
        handler = asyncio.ensure_future(self._call_handler(fn, ctx))
        lost = asyncio.Event()
        heartbeats = asyncio.ensure_future(self._heartbeat(ctx, polled_at, handler, lost))
        stopper = asyncio.ensure_future(self._stop_when(stop_all, ctx, handler))
        try:
            try:
                output = await asyncio.shield(handler)
            except asyncio.CancelledError:
                if not handler.cancelled():
                    raise  # this task itself was cancelled: not the handler
                if lost.is_set():
                    return None
                if stop_all.is_set():
                    return _failure(FAILURE_STOPPED, f"worker {self.worker_id} stopped before the run finished")
                return _failure(FAILURE_CANCELLED, "the handler was cancelled after cancellation was requested")
            except NonRetryable as exc:
                return _failure(exc.failure_type, str(exc), non_retryable=True)
            except Exception as exc:  # a handler's failure is the run's, never the worker's
                if lost.is_set():
                    return None
                if stop_all.is_set():
                    return _failure(FAILURE_STOPPED, f"worker {self.worker_id} stopped before the run finished: {exc}")
                if ctx.cancelled.is_set():
                    return _failure(FAILURE_CANCELLED, str(exc) or type(exc).__name__)
                failure_type = getattr(exc, "failure_type", None) or type(exc).__name__
                return _failure(str(failure_type), str(exc) or type(exc).__name__)
            if lost.is_set():
                return None
            try:
                json.dumps(output)
            except (TypeError, ValueError) as exc:
                return _failure(FAILURE_BAD_OUTPUT, f"the handler's output is not JSON: {exc}")
            return _Result(output=output)
        finally:
            heartbeats.cancel()
            stopper.cancel()

    @staticmethod
    async def _call_handler(fn: Handler, ctx: RunContext) -> Any:
        if inspect.iscoroutinefunction(fn):
            return await fn(ctx)
        result = await asyncio.to_thread(fn, ctx)
        if inspect.isawaitable(result):
            return await result
        return result

    async def _stop_when(self, stop_all: asyncio.Event, ctx: RunContext, handler: asyncio.Future[Any]) -> None:
        await stop_all.wait()
        ctx.cancelled.set()
        handler.cancel()

    async def _heartbeat(self, ctx: RunContext, polled_at: float, handler: asyncio.Future[Any], lost: asyncio.Event) -> None:
        """Extends the lease every third of it. Cancellation requested: sets
        ``ctx.cancelled`` and cancels the handler after the cancel grace. The
        run gone (404/409), or no heartbeat through before the lease ran out
        (the server then hands the next attempt to someone else): cancels the
        handler at once and reports nothing."""
        lease = float(self.lease_seconds)
        lease_until = polled_at + lease
        canceller: asyncio.Task[None] | None = None
        try:
            while True:
                await asyncio.sleep(lease / 3)
                sent = time.monotonic()
                try:
                    answer = await self._call(_path("worker", "runs", ctx.run_id, "heartbeat"),
                                              self._body(lease_seconds=self.lease_seconds), timeout=max(lease / 3, 1.0))
                except Exception as exc:
                    if _run_gone(exc) or time.monotonic() >= lease_until:
                        logger.info("worker %s: run %s is no longer ours (%s); cancelling its handler", self.worker_id, ctx.run_id, exc)
                        lost.set()
                        ctx.cancelled.set()
                        handler.cancel()
                        return
                    logger.warning("worker %s: heartbeat of run %s failed: %s", self.worker_id, ctx.run_id, exc)
                    continue
                lease_until = sent + lease
                if answer.get("cancel_requested") and not ctx.cancelled.is_set():
                    logger.info("worker %s: cancellation of run %s requested", self.worker_id, ctx.run_id)
                    ctx.cancelled.set()
                    canceller = asyncio.ensure_future(self._cancel_after(handler, self.cancel_grace))
        finally:
            if canceller is not None:
                canceller.cancel()

    @staticmethod
    async def _cancel_after(handler: asyncio.Future[Any], grace: float) -> None:
        await asyncio.sleep(grace)
        handler.cancel()

    async def _report(self, ctx: RunContext, result: _Result) -> None:
        """Tells the server how the run ended, retrying transient failures;
        a stopping worker still hands in the results it has."""
        if result.failed:
            path = _path("worker", "runs", ctx.run_id, "fail")
            body = self._body(message=result.message, type=result.type, non_retryable=result.non_retryable)
        else:
            path = _path("worker", "runs", ctx.run_id, "complete")
            body = self._body(output=result.output)
        deadline = time.monotonic() + REPORT_RETRY_SECONDS
        attempt = 0
        while True:
            attempt += 1
            try:
                await self._call(path, body, timeout=30.0)
                logger.info("worker %s: run %s %s", self.worker_id, ctx.run_id,
                            f"failed ({result.type})" if result.failed else "completed")
                return
            except Exception as exc:
                if _run_gone(exc):
                    logger.info("worker %s: run %s ended on the server before its result was reported: %s",
                                self.worker_id, ctx.run_id, exc)
                    return
                pause = min(max(_backoff(attempt), _retry_after(exc)), 15.0)
                if not _transient(exc) or time.monotonic() + pause > deadline:
                    logger.error("worker %s: could not report run %s: %s", self.worker_id, ctx.run_id, exc)
                    return
                logger.warning("worker %s: reporting run %s failed (attempt %d); retrying: %s",
                               self.worker_id, ctx.run_id, attempt, exc)
                await asyncio.sleep(pause)


class SyncWorker:
    """The blocking facade of :class:`Worker`, on a :class:`SyncClient`'s
    event loop: ``run()`` blocks until ``stop()`` (from another thread) or
    Ctrl-C, which stops gracefully too. Handlers may be sync (run in
    threads) or async."""

    def __init__(
        self,
        client: SyncClient,
        *,
        queue: str = "default",
        handlers: Mapping[str, Handler],
        concurrency: int = 1,
        connection: str = "default",
        worker_id: str | None = None,
        lease_seconds: int = 30,
        poll_wait_seconds: int = 20,
        cancel_grace: float = 30.0,
        stop_grace: float = 30.0,
    ) -> None:
        self._runner = client._runner
        self.worker = Worker(client._target, queue=queue, handlers=handlers, concurrency=concurrency, connection=connection,
                             worker_id=worker_id, lease_seconds=lease_seconds, poll_wait_seconds=poll_wait_seconds,
                             cancel_grace=cancel_grace, stop_grace=stop_grace)

    @property
    def worker_id(self) -> str:
        return self.worker.worker_id

    def run(self) -> None:
        future = asyncio.run_coroutine_threadsafe(self.worker.run(), self._runner.loop)
        try:
            future.result()
        except KeyboardInterrupt:
            self.worker.stop()
            future.result()

    def stop(self) -> None:
        self.worker.stop()


__all__ = ["Handler", "NonRetryable", "RunContext", "SyncWorker", "Worker"]
