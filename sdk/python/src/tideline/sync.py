"""A blocking wrapper of :class:`tideline.Client` for scripts.

The async client runs on a private event loop in a daemon thread that the
SyncClient owns; each method submits its coroutine there and waits. So the
wrapper shares every request, parser and type with the async client (there
is one implementation of the API), and it also works where an event loop is
already running in the calling thread (Jupyter, an async app's sync helper),
which ``asyncio.run`` per call would refuse.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

import httpx

from .client import Client, ScheduleHandle

P = ParamSpec("P")
T = TypeVar("T")
A = TypeVar("A")


class _LoopThread:
    """An event loop running forever in its own daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="tideline-sync", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        async def next_item() -> T:
            return await anext(items)

        try:
            while True:
                try:
                    yield self.run(next_item())
                except StopAsyncIteration:
                    return
        finally:
            # Closing an iterator early (break) closes the async generator on
            # its loop; never wait for the loop from inside it.
            aclose = getattr(items, "aclose", None)
            if aclose is not None and not self.loop.is_closed() and threading.current_thread() is not self._thread:
                self.run(aclose())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class _Blocking(Generic[A]):
    """Holds the async object whose methods the blocking ones call."""

    def __init__(self, target: A, runner: _LoopThread) -> None:
        self._target = target
        self._runner = runner


def _blocking(method: Callable[Concatenate[A, P], Coroutine[Any, Any, T]]) -> Callable[Concatenate[_Blocking[A], P], T]:
    @functools.wraps(method)
    def call(self: _Blocking[A], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._runner.run(method(self._target, *args, **kwargs))

    return call


def _blocking_iter(method: Callable[Concatenate[A, P], AsyncIterator[T]]) -> Callable[Concatenate[_Blocking[A], P], Iterator[T]]:
    @functools.wraps(method)
    def call(self: _Blocking[A], /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        return self._runner.iterate(method(self._target, *args, **kwargs))

    return call


class SyncClient(_Blocking[Client]):
    """The same API as :class:`Client`, blocking; the async iterators become
    plain iterators. Use it as ``with SyncClient(url, token=...) as client:``
    or call :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        namespace: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retries: int = 5,
    ) -> None:
        super().__init__(
            Client(base_url, token=token, namespace=namespace, timeout=timeout, retries=retries), _LoopThread()
        )
        self.namespace = namespace
        self._closed = False

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self._target.aclose())
        finally:
            self._runner.stop()

    def get_schedule(self, schedule_id: str) -> SyncScheduleHandle:
        """A handle on one schedule; it makes no request until you use it."""
        return SyncScheduleHandle(self._target.get_schedule(schedule_id), self._runner)

    create_schedule = _blocking(Client.create_schedule)
    describe_schedule = _blocking(Client.describe_schedule)
    list_schedules_page = _blocking(Client.list_schedules_page)
    list_schedules = _blocking_iter(Client.list_schedules)
    update_schedule = _blocking(Client.update_schedule)
    pause_schedule = _blocking(Client.pause_schedule)
    resume_schedule = _blocking(Client.resume_schedule)
    trigger_schedule = _blocking(Client.trigger_schedule)
    backfill_schedule = _blocking(Client.backfill_schedule)
    start_backfill = _blocking(Client.start_backfill)
    list_backfills_page = _blocking(Client.list_backfills_page)
    list_backfills = _blocking_iter(Client.list_backfills)
    get_backfill = _blocking(Client.get_backfill)
    pause_backfill = _blocking(Client.pause_backfill)
    resume_backfill = _blocking(Client.resume_backfill)
    cancel_backfill = _blocking(Client.cancel_backfill)
    wait_backfill = _blocking(Client.wait_backfill)
    delete_schedule = _blocking(Client.delete_schedule)
    get_schedule_history = _blocking(Client.get_schedule_history)
    iter_schedule_history = _blocking_iter(Client.iter_schedule_history)
    list_schedule_versions = _blocking(Client.list_schedule_versions)
    get_schedule_version = _blocking(Client.get_schedule_version)
    diff_schedule_versions = _blocking(Client.diff_schedule_versions)
    plan_revert_schedule = _blocking(Client.plan_revert_schedule)
    revert_schedule = _blocking(Client.revert_schedule)
    list_calendars = _blocking(Client.list_calendars)
    create_calendar = _blocking(Client.create_calendar)
    get_calendar = _blocking(Client.get_calendar)
    update_calendar = _blocking(Client.update_calendar)
    delete_calendar = _blocking(Client.delete_calendar)
    list_runs_page = _blocking(Client.list_runs_page)
    list_runs = _blocking_iter(Client.list_runs)
    get_run = _blocking(Client.get_run)
    cancel_run = _blocking(Client.cancel_run)
    terminate_run = _blocking(Client.terminate_run)


class SyncScheduleHandle(_Blocking[ScheduleHandle]):
    """The blocking twin of :class:`ScheduleHandle`."""

    @property
    def schedule_id(self) -> str:
        return self._target.schedule_id

    def __repr__(self) -> str:
        return f"SyncScheduleHandle({self.schedule_id!r})"

    describe = _blocking(ScheduleHandle.describe)
    update = _blocking(ScheduleHandle.update)
    pause = _blocking(ScheduleHandle.pause)
    resume = _blocking(ScheduleHandle.resume)
    trigger = _blocking(ScheduleHandle.trigger)
    backfill = _blocking(ScheduleHandle.backfill)
    delete = _blocking(ScheduleHandle.delete)
    history = _blocking(ScheduleHandle.history)
    iter_history = _blocking_iter(ScheduleHandle.iter_history)
    versions = _blocking(ScheduleHandle.versions)
    version = _blocking(ScheduleHandle.version)
    diff = _blocking(ScheduleHandle.diff)
    revert = _blocking(ScheduleHandle.revert)
    runs = _blocking_iter(ScheduleHandle.runs)
