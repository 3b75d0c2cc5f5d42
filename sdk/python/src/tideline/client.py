"""The asyncio client of Tideline's JSON API (CONTRACT §8, §14)."""

from __future__ import annotations

import asyncio
import enum
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, overload
from urllib.parse import quote

import httpx

from .errors import error_from_response, redirect_error
from .types import (
    Calendar,
    CalendarChange,
    JSON,
    Action,
    BackfillJob,
    BackfillPage,
    BackfillReport,
    Run,
    RunDetail,
    RevertPlan,
    RunPage,
    Schedule,
    ScheduleHistoryEvent,
    ScheduleHistoryPage,
    SchedulePage,
    ScheduleVersion,
    ScheduleVersionDetail,
    Spec,
    TriggerResult,
    VersionDiff,
    format_time,
)

__version__ = "0.1.0"

# The versioned prefix that web/openapi.json documents; the namespace goes in
# X-Namespace (see README.md, "Namespaces").
API_PREFIX = "/waterline/api/v2"

# Answers a retry may get past: rate limited, a proxy without its upstream,
# or the server's database restarting or failing over (503
# database_unavailable, with Retry-After).
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Methods whose repetition has the effect of one call. POST is not among
# them: a trigger or backfill sent twice could start runs twice, and a
# create whose commit was cut could answer its own retry with a conflict.
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
# The most a server's Retry-After may hold one retry, in seconds.
_MAX_RETRY_AFTER = 10.0


def default_backoff(attempt: int) -> float:
    """The wait before retry ``attempt`` (1-based): 0.2 s doubling up to 5 s."""
    return float(min(0.2 * 2 ** (attempt - 1), 5.0))


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(max(float(response.headers.get("Retry-After", "0")), 0.0), _MAX_RETRY_AFTER)
    except ValueError:  # an HTTP date: not something Tideline sends
        return 0.0


class Unset(enum.Enum):
    """Marks an update field the caller left out (distinct from None, which clears)."""

    UNSET = enum.auto()


UNSET = Unset.UNSET


def _path(*segments: str) -> str:
    return "/".join(quote(s, safe="") for s in segments)


def _action_json(action: Action | Mapping[str, Any]) -> JSON:
    return action.to_json() if isinstance(action, Action) else dict(action)


def _spec_json(spec: Spec | Mapping[str, Any]) -> JSON:
    return spec.to_json() if isinstance(spec, Spec) else dict(spec)


def _statuses(status: str | Sequence[str] | None) -> list[str] | None:
    if status is None:
        return None
    return [status] if isinstance(status, str) else list(status)


class Client:
    """An async client bound to one server, token and namespace.

    Use it as ``async with Client(url, token=...) as client: ...`` so its
    connection pool is closed, or call :meth:`aclose` yourself.

    ``namespace`` is sent as X-Namespace on every request; without it the
    server picks the token's only namespace, else ``default``.

    Idempotent calls (GET, PUT, DELETE, dry runs) are tried up to ``retries``
    times in all on connection errors and 429/502/503/504 answers, waiting
    ``backoff(n)`` before retry n, or the answer's Retry-After when longer
    (a database restart or failover answers 503 ``database_unavailable``
    with Retry-After: 1). Other calls are sent once. ``retries=1`` disables
    retrying.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        namespace: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retries: int = 5,
        backoff: Callable[[int], float] = default_backoff,
    ) -> None:
        self._attempts = max(retries, 1)
        self._backoff = backoff
        headers = {"Accept": "application/json", "User-Agent": f"tideline-python/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if namespace:
            headers["X-Namespace"] = namespace
        self.namespace = namespace
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + API_PREFIX + "/",
            headers=headers,
            timeout=timeout,
            # Never: a redirect would carry the token and the body along
            # (see Redirected).
            follow_redirects=False,
        )

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: JSON | None = None,
        idempotent: bool | None = None,
        timeout: float | None = None,
    ) -> JSON:
        """Sends one call; ``idempotent`` (default: by method) allows retries.
        The worker protocol's reports (heartbeat, complete, fail) pass
        ``idempotent=True``: a repeat of one that was applied answers 409
        ``run_not_running``, never a second effect."""
        # Bodies are always JSON with an explicit Content-Type (the server
        # answers 415 to others), and optional bodies are sent as {}.
        content: bytes | None = None
        headers: dict[str, str] = {}
        if method in ("POST", "PATCH", "PUT"):
            content = json.dumps(body or {}, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        # A per-call timeout is for the worker's long polls (tideline.Worker).
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        if idempotent is None:
            idempotent = method in _IDEMPOTENT_METHODS
        attempts = self._attempts if idempotent else 1
        attempt = 1
        while True:
            try:
                response = await self._http.request(method, path, params=query, content=content, headers=headers, **extra)
            except httpx.TransportError:
                if attempt >= attempts:
                    raise
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                continue
            if response.status_code in _RETRY_STATUSES and attempt < attempts:
                await asyncio.sleep(max(self._backoff(attempt), _retry_after(response)))
                attempt += 1
                continue
            break
        if 300 <= response.status_code < 400:
            raise redirect_error(method, str(response.request.url.copy_with(query=None)), response)
        if response.is_error:
            raise error_from_response(response)
        if response.status_code == 204:
            return {}
        data = response.json()
        if not isinstance(data, dict):
            raise ValueError(f"{method} {path}: expected a JSON object, got {type(data).__name__}")
        return data

    # Schedules

    def get_schedule(self, schedule_id: str) -> ScheduleHandle:
        """A handle on one schedule; it makes no request until you use it."""
        return ScheduleHandle(self, schedule_id)

    async def create_schedule(
        self,
        schedule_id: str | None = None,
        *,
        action: Action | Mapping[str, Any],
        spec: Spec | Mapping[str, Any] | None = None,
        cron: str | None = None,
        overlap_policy: str | None = None,
        jitter_seconds: int | None = None,
        max_runs: int | None = None,
        connection: str | None = None,
        queue: str | None = None,
        labels: Mapping[str, str] | None = None,
        memo: Mapping[str, str] | None = None,
        search_attributes: Mapping[str, str] | None = None,
        note: str | None = None,
        paused: bool = False,
    ) -> Schedule:
        """Creates a schedule (``cron`` is shorthand for one cron expression in
        ``spec``) and returns its describe object. Without ``schedule_id`` the
        server generates ``sch-<ulid>``."""
        body: JSON = {"action": _action_json(action)}
        optional: JSON = {
            "schedule_id": schedule_id,
            "spec": None if spec is None else _spec_json(spec),
            "cron": cron,
            "overlap_policy": overlap_policy,
            "jitter_seconds": jitter_seconds,
            "max_runs": max_runs,
            "connection": connection,
            "queue": queue,
            "labels": None if labels is None else dict(labels),
            "memo": None if memo is None else dict(memo),
            "search_attributes": None if search_attributes is None else dict(search_attributes),
            "note": note,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        if paused:
            body["paused"] = True
        return Schedule.from_json(await self._request("POST", "schedules", body=body))

    async def describe_schedule(self, schedule_id: str) -> Schedule:
        """All fields plus the next 5 fire times and the spec's description.
        A deleted schedule is NotFound here (its history stays readable)."""
        return Schedule.from_json(await self._request("GET", _path("schedules", schedule_id)))

    async def list_schedules_page(
        self,
        *,
        status: str | Sequence[str] | None = None,
        query: str | None = None,
        workflow_type: str | None = None,
        label: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> SchedulePage:
        """One page of schedules, ordered by schedule_id. ``status`` defaults to
        active and paused on the server; ``"all"`` includes deleted ones.
        ``label`` is ``key=value``; ``limit`` is 1..200 (default 50)."""
        params = {
            "status": _statuses(status),
            "q": query,
            "workflow_type": workflow_type,
            "label": label,
            "limit": limit,
            "cursor": cursor,
        }
        return SchedulePage.from_json(await self._request("GET", "schedules", params=params))

    async def list_schedules(
        self,
        *,
        status: str | Sequence[str] | None = None,
        query: str | None = None,
        workflow_type: str | None = None,
        label: str | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[Schedule]:
        """Every matching schedule, fetched page by page."""
        cursor: str | None = None
        while True:
            page = await self.list_schedules_page(
                status=status, query=query, workflow_type=workflow_type, label=label, limit=page_size, cursor=cursor
            )
            for schedule in page.schedules:
                yield schedule
            if not page.has_more or page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def update_schedule(
        self,
        schedule_id: str,
        *,
        spec: Spec | Mapping[str, Any] | Unset = UNSET,
        action: Action | Mapping[str, Any] | Unset = UNSET,
        overlap_policy: str | Unset = UNSET,
        jitter_seconds: int | Unset = UNSET,
        max_runs: int | None | Unset = UNSET,
        connection: str | None | Unset = UNSET,
        queue: str | None | Unset = UNSET,
        labels: Mapping[str, str] | Unset = UNSET,
        memo: Mapping[str, str] | Unset = UNSET,
        search_attributes: Mapping[str, str] | Unset = UNSET,
        note: str | Unset = UNSET,
    ) -> Schedule:
        """Changes only the given fields (PATCH); ``spec`` and ``action`` are
        replaced whole. ``None`` clears max_runs, connection or queue."""
        fields: dict[str, Any] = {
            "spec": spec if isinstance(spec, Unset) else _spec_json(spec),
            "action": action if isinstance(action, Unset) else _action_json(action),
            "overlap_policy": overlap_policy,
            "jitter_seconds": jitter_seconds,
            "max_runs": max_runs,
            "connection": connection,
            "queue": queue,
            "labels": labels if isinstance(labels, Unset) else dict(labels),
            "memo": memo if isinstance(memo, Unset) else dict(memo),
            "search_attributes": search_attributes if isinstance(search_attributes, Unset) else dict(search_attributes),
            "note": note,
        }
        body = {k: v for k, v in fields.items() if not isinstance(v, Unset)}
        return Schedule.from_json(await self._request("PATCH", _path("schedules", schedule_id), body=body))

    async def pause_schedule(
        self, schedule_id: str, *, reason: str | None = None, until: datetime | None = None
    ) -> Schedule:
        """Pauses an active schedule; ``until`` (aware, in the future) ends the
        pause by itself. The reason is kept as ``pause_reason``, never as the note."""
        body: JSON = {}
        if reason is not None:
            body["reason"] = reason
        if until is not None:
            body["paused_until"] = format_time(until)
        return Schedule.from_json(await self._request("POST", _path("schedules", schedule_id, "pause"), body=body))

    async def resume_schedule(self, schedule_id: str) -> Schedule:
        return Schedule.from_json(await self._request("POST", _path("schedules", schedule_id, "resume")))

    async def trigger_schedule(self, schedule_id: str, *, overlap_policy: str | None = None) -> TriggerResult:
        """Fires now, applying the schedule's overlap policy (or this override)."""
        body = {} if overlap_policy is None else {"overlap_policy": overlap_policy}
        return TriggerResult.from_json(await self._request("POST", _path("schedules", schedule_id, "trigger"), body=body))

    @overload
    async def backfill_schedule(
        self, schedule_id: str, *, start: datetime, end: datetime, overlap_policy: str | None = ..., dry_run: Literal[True]
    ) -> BackfillReport: ...

    @overload
    async def backfill_schedule(
        self, schedule_id: str, *, start: datetime, end: datetime, overlap_policy: str | None = ..., dry_run: Literal[False] = ...
    ) -> BackfillJob: ...

    @overload
    async def backfill_schedule(
        self, schedule_id: str, *, start: datetime, end: datetime, overlap_policy: str | None = ..., dry_run: bool = ...
    ) -> BackfillReport | BackfillJob: ...

    async def backfill_schedule(
        self,
        schedule_id: str,
        *,
        start: datetime,
        end: datetime,
        overlap_policy: str | None = None,
        dry_run: bool = False,
    ) -> BackfillReport | BackfillJob:
        """With ``dry_run`` lists every canonical occurrence in [start, end)
        (a :class:`BackfillReport`, outcome ``planned``); otherwise starts a
        backfill job (:meth:`start_backfill`). Times must be aware."""
        if not dry_run:
            return await self.start_backfill(schedule_id, start=start, end=end, overlap_policy=overlap_policy)
        body: JSON = {"from": format_time(start), "to": format_time(end), "dry_run": True}
        if overlap_policy is not None:
            body["overlap_policy"] = overlap_policy
        return BackfillReport.from_json(
            await self._request("POST", _path("schedules", schedule_id, "backfill"), body=body, idempotent=dry_run)
        )

    async def start_backfill(
        self,
        schedule_id: str,
        *,
        start: datetime,
        end: datetime,
        overlap_policy: str | None = None,
        max_per_minute: int | None = None,
        max_concurrent_runs: int | None = None,
        reason: str | None = None,
    ) -> BackfillJob:
        """Starts a durable backfill job over [start, end): the server answers
        at once (its first slice done) and works the rest in paced slices.
        ``max_per_minute`` caps the starts in any minute; ``max_concurrent_runs``
        the job's runs pending or running at once."""
        body: JSON = {"from": format_time(start), "to": format_time(end)}
        for key, value in (("overlap_policy", overlap_policy), ("max_per_minute", max_per_minute),
                           ("max_concurrent_runs", max_concurrent_runs), ("reason", reason)):
            if value is not None:
                body[key] = value
        doc = await self._request("POST", _path("schedules", schedule_id, "backfill"), body=body)
        return BackfillJob.from_json(doc["backfill"])

    async def list_backfills_page(
        self,
        *,
        schedule_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> BackfillPage:
        """One page of backfill jobs, newest first; ``limit`` is 1..200 (default 50)."""
        params = {"schedule_id": schedule_id, "status": status, "limit": limit, "cursor": cursor}
        return BackfillPage.from_json(await self._request("GET", "backfills", params=params))

    async def list_backfills(
        self, *, schedule_id: str | None = None, status: str | None = None, page_size: int | None = None
    ) -> AsyncIterator[BackfillJob]:
        """Every matching backfill job, newest first, fetched page by page."""
        cursor: str | None = None
        while True:
            page = await self.list_backfills_page(schedule_id=schedule_id, status=status, limit=page_size, cursor=cursor)
            for job in page.backfills:
                yield job
            if not page.has_more or page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def get_backfill(self, backfill_id: str) -> BackfillJob:
        """A backfill job with its progress and ETA."""
        return BackfillJob.from_json((await self._request("GET", _path("backfills", backfill_id)))["backfill"])

    async def pause_backfill(self, backfill_id: str, *, reason: str | None = None) -> BackfillJob:
        return await self._backfill_action(backfill_id, "pause", reason)

    async def resume_backfill(self, backfill_id: str, *, reason: str | None = None) -> BackfillJob:
        return await self._backfill_action(backfill_id, "resume", reason)

    async def cancel_backfill(self, backfill_id: str, *, reason: str | None = None) -> BackfillJob:
        """Ends the job for good; the runs it started are left alone."""
        return await self._backfill_action(backfill_id, "cancel", reason)

    async def wait_backfill(self, backfill_id: str, *, poll_seconds: float = 1.0, timeout: float | None = None) -> BackfillJob:
        """Polls the job until it ends (completed, cancelled or failed)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            job = await self.get_backfill(backfill_id)
            if job.finished:
                return job
            if deadline is not None and loop.time() >= deadline:
                raise TimeoutError(f"backfill {backfill_id} still {job.status} after {timeout} s")
            await asyncio.sleep(poll_seconds)

    async def _backfill_action(self, backfill_id: str, action: str, reason: str | None) -> BackfillJob:
        body = {} if reason is None else {"reason": reason}
        doc = await self._request("POST", _path("backfills", backfill_id, action), body=body)
        return BackfillJob.from_json(doc["backfill"])

    async def delete_schedule(self, schedule_id: str) -> Schedule:
        """Soft-deletes (idempotent); the audit stream stays readable."""
        return Schedule.from_json(await self._request("DELETE", _path("schedules", schedule_id)))

    # Calendars (CONTRACT §19)

    async def list_calendars(self) -> list[JSON]:
        """The namespace's calendars by name, dates by count (``date_count``)."""
        out: list[JSON] = []
        cursor: str | None = None
        while True:
            page = await self._request("GET", "calendars", params={"limit": 200, "cursor": cursor})
            out.extend(page.get("calendars") or [])
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                return out

    async def create_calendar(
        self, name: str, *, dates: Sequence[str] = (), weekend: Sequence[str] | None = None, description: str | None = None
    ) -> Calendar:
        """Creates a calendar (admins); ``weekend`` defaults to sat, sun."""
        body: JSON = {"name": name, "dates": list(dates)}
        if weekend is not None:
            body["weekend"] = list(weekend)
        if description is not None:
            body["description"] = description
        return Calendar.from_json(await self._request("POST", "calendars", body=body))

    async def get_calendar(self, name: str) -> Calendar:
        """A calendar with ``used_by``, the live schedules that list it."""
        return Calendar.from_json(await self._request("GET", _path("calendars", name)))

    async def update_calendar(
        self, name: str, *, dates: Sequence[str] | None = None, weekend: Sequence[str] | None = None, description: str | None = None
    ) -> CalendarChange:
        """Changes the given fields; every schedule using the calendar is
        re-planned in the same transaction (``CalendarChange.replanned``)."""
        body: JSON = {}
        if dates is not None:
            body["dates"] = list(dates)
        if weekend is not None:
            body["weekend"] = list(weekend)
        if description is not None:
            body["description"] = description
        return CalendarChange.from_json(await self._request("PATCH", _path("calendars", name), body=body))

    async def delete_calendar(self, name: str) -> None:
        """Deletes a calendar no live schedule lists; else ``Conflict`` with
        code ``calendar_in_use``."""
        await self._request("DELETE", _path("calendars", name))

    # Audit stream

    async def get_schedule_history(
        self, schedule_id: str, *, limit: int | None = None, after_sequence: int | None = None
    ) -> ScheduleHistoryPage:
        """One page of the audit stream, ascending by sequence. The server
        clamps ``limit`` to 1..500 (default 100); ``after_sequence`` is the
        previous page's ``next_cursor``."""
        params = {"limit": limit, "after_sequence": after_sequence}
        return ScheduleHistoryPage.from_json(
            await self._request("GET", _path("schedules", schedule_id, "history"), params=params)
        )

    async def iter_schedule_history(
        self, schedule_id: str, *, limit: int | None = None, after_sequence: int | None = None
    ) -> AsyncIterator[ScheduleHistoryEvent]:
        """Every event after ``after_sequence`` (default: from the start),
        fetched page by page of ``limit`` events."""
        cursor = after_sequence
        while True:
            page = await self.get_schedule_history(schedule_id, limit=limit, after_sequence=cursor)
            for event in page.events:
                yield event
            if not page.has_more or page.next_cursor is None:
                return
            cursor = page.next_cursor

    # Runs

    # Versions (CONTRACT §15)

    async def list_schedule_versions(self, schedule_id: str) -> list[ScheduleVersion]:
        """Every version of a schedule, oldest first."""
        data = await self._request("GET", _path("schedules", schedule_id, "versions"))
        return [ScheduleVersion.from_json(v) for v in data.get("versions") or ()]

    async def get_schedule_version(self, schedule_id: str, n: int) -> ScheduleVersionDetail:
        """Version ``n`` with its whole definition (the export shape)."""
        return ScheduleVersionDetail.from_json(
            await self._request("GET", _path("schedules", schedule_id, "versions", str(n)))
        )

    async def diff_schedule_versions(
        self, schedule_id: str, *, from_version: int | None = None, to_version: int | None = None
    ) -> VersionDiff:
        """Two versions field by field; by default the latest against the one before it."""
        params = {"from": from_version, "to": to_version}
        return VersionDiff.from_json(
            await self._request("GET", _path("schedules", schedule_id, "versions", "diff"), params=params)
        )

    async def plan_revert_schedule(self, schedule_id: str, n: int) -> RevertPlan:
        """What reverting to version ``n`` would change, with the next fire times before and after; writes nothing."""
        path = _path("schedules", schedule_id, "versions", str(n), "revert")
        return RevertPlan.from_json(await self._request("POST", path, params={"dry_run": "true"}))

    async def revert_schedule(self, schedule_id: str, n: int, *, reason: str | None = None) -> Schedule:
        """Updates the schedule back to version ``n`` (a new version, ``reverted_to: n``).
        Raises :class:`Conflict` with code ``no_change`` when nothing would change."""
        body: JSON = {} if reason is None else {"reason": reason}
        path = _path("schedules", schedule_id, "versions", str(n), "revert")
        return Schedule.from_json(await self._request("POST", path, body=body))

    async def list_runs_page(
        self,
        *,
        schedule_id: str | None = None,
        status: str | Sequence[str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> RunPage:
        """One page of runs, newest first; ``limit`` is 1..200 (default 50)."""
        params = {"schedule_id": schedule_id, "status": _statuses(status), "limit": limit, "cursor": cursor}
        return RunPage.from_json(await self._request("GET", "runs", params=params))

    async def list_runs(
        self,
        *,
        schedule_id: str | None = None,
        status: str | Sequence[str] | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[Run]:
        """Every matching run, newest first, fetched page by page."""
        cursor: str | None = None
        while True:
            page = await self.list_runs_page(schedule_id=schedule_id, status=status, limit=page_size, cursor=cursor)
            for run in page.runs:
                yield run
            if not page.has_more or page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def get_run(self, run_id: str) -> RunDetail:
        """A run with its history."""
        return RunDetail.from_json(await self._request("GET", _path("runs", run_id)))

    async def cancel_run(self, run_id: str, *, reason: str | None = None) -> Run:
        """Requests graceful cancellation (the worker sees it on its next heartbeat)."""
        body = {} if reason is None else {"reason": reason}
        return Run.from_json(await self._request("POST", _path("runs", run_id, "cancel"), body=body))

    async def terminate_run(self, run_id: str, *, reason: str | None = None) -> Run:
        """Stops a run at once."""
        body = {} if reason is None else {"reason": reason}
        return Run.from_json(await self._request("POST", _path("runs", run_id, "terminate"), body=body))


class ScheduleHandle:
    """One schedule of a :class:`Client`; every method is one API call."""

    def __init__(self, client: Client, schedule_id: str) -> None:
        self.client = client
        self.schedule_id = schedule_id

    def __repr__(self) -> str:
        return f"ScheduleHandle({self.schedule_id!r})"

    async def describe(self) -> Schedule:
        return await self.client.describe_schedule(self.schedule_id)

    async def update(self, /, **fields: Any) -> Schedule:
        """Same keyword arguments as :meth:`Client.update_schedule`."""
        return await self.client.update_schedule(self.schedule_id, **fields)

    async def pause(self, *, reason: str | None = None, until: datetime | None = None) -> Schedule:
        return await self.client.pause_schedule(self.schedule_id, reason=reason, until=until)

    async def resume(self) -> Schedule:
        return await self.client.resume_schedule(self.schedule_id)

    async def trigger(self, *, overlap_policy: str | None = None) -> TriggerResult:
        return await self.client.trigger_schedule(self.schedule_id, overlap_policy=overlap_policy)

    @overload
    async def backfill(
        self, *, start: datetime, end: datetime, overlap_policy: str | None = ..., dry_run: Literal[True]
    ) -> BackfillReport: ...

    @overload
    async def backfill(
        self, *, start: datetime, end: datetime, overlap_policy: str | None = ..., dry_run: Literal[False] = ...
    ) -> BackfillJob: ...

    @overload
    async def backfill(
        self, *, start: datetime, end: datetime, overlap_policy: str | None = ..., dry_run: bool = ...
    ) -> BackfillReport | BackfillJob: ...

    async def backfill(
        self, *, start: datetime, end: datetime, overlap_policy: str | None = None, dry_run: bool = False
    ) -> BackfillReport | BackfillJob:
        return await self.client.backfill_schedule(
            self.schedule_id, start=start, end=end, overlap_policy=overlap_policy, dry_run=dry_run
        )

    async def delete(self) -> Schedule:
        return await self.client.delete_schedule(self.schedule_id)

    async def history(self, *, limit: int | None = None, after_sequence: int | None = None) -> ScheduleHistoryPage:
        return await self.client.get_schedule_history(self.schedule_id, limit=limit, after_sequence=after_sequence)

    def iter_history(
        self, *, limit: int | None = None, after_sequence: int | None = None
    ) -> AsyncIterator[ScheduleHistoryEvent]:
        return self.client.iter_schedule_history(self.schedule_id, limit=limit, after_sequence=after_sequence)

    async def versions(self) -> list[ScheduleVersion]:
        return await self.client.list_schedule_versions(self.schedule_id)

    async def version(self, n: int) -> ScheduleVersionDetail:
        return await self.client.get_schedule_version(self.schedule_id, n)

    async def diff(self, *, from_version: int | None = None, to_version: int | None = None) -> VersionDiff:
        return await self.client.diff_schedule_versions(self.schedule_id, from_version=from_version, to_version=to_version)

    async def revert(self, n: int, *, reason: str | None = None) -> Schedule:
        return await self.client.revert_schedule(self.schedule_id, n, reason=reason)

    def runs(self, *, status: str | Sequence[str] | None = None, page_size: int | None = None) -> AsyncIterator[Run]:
        return self.client.list_runs(schedule_id=self.schedule_id, status=status, page_size=page_size)
