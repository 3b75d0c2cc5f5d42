"""Typed, immutable views of the API's JSON objects (apijson/apijson.go).

Every `from_json` reads the keys it knows and ignores the rest, so a newer
server that adds fields does not break an older client. Times arrive as
RFC 3339 UTC strings and become aware `datetime`s in UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

JSON = dict[str, Any]


def parse_time(raw: str) -> datetime:
    """Parses an RFC 3339 instant into an aware UTC datetime."""
    value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"time {raw!r} has no UTC offset")
    return value.astimezone(timezone.utc)


def parse_optional_time(raw: str | None) -> datetime | None:
    return None if raw is None else parse_time(raw)


def format_time(value: datetime) -> str:
    """Renders an aware datetime as RFC 3339 UTC; naive ones are refused
    rather than guessed."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("datetime must be timezone-aware (e.g. datetime(..., tzinfo=timezone.utc))")
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _strings(raw: Mapping[str, Any] | None) -> Mapping[str, str]:
    return {str(k): str(v) for k, v in (raw or {}).items()}


@dataclass(frozen=True, slots=True)
class Interval:
    """A fixed-length repetition: ISO-8601 durations, e.g. every="PT1H", offset="PT5M"."""

    every: str
    offset: str | None = None

    @classmethod
    def from_json(cls, d: JSON) -> Interval:
        return cls(every=d["every"], offset=d.get("offset") or None)

    def to_json(self) -> JSON:
        out: JSON = {"every": self.every}
        if self.offset:
            out["offset"] = self.offset
        return out


@dataclass(frozen=True, slots=True)
class Spec:
    """When a schedule fires: the earliest of its cron expressions and intervals."""

    cron_expressions: tuple[str, ...] = ()
    intervals: tuple[Interval, ...] = ()
    timezone: str = "UTC"
    # Bounds and one-off instants, RFC 3339 strings kept as written so a
    # spec read and written back is unchanged (CONTRACT §18).
    start_at: str = ""
    end_at: str = ""
    at: tuple[str, ...] = ()
    # Calendars of the namespace whose dates the spec does not fire on, and
    # what an excluded occurrence does: "skip" (default),
    # "previous_business_day" or "next_business_day" (CONTRACT §19).
    exclude_calendars: tuple[str, ...] = ()
    on_excluded: str = ""

    @classmethod
    def from_json(cls, d: JSON) -> Spec:
        return cls(
            cron_expressions=tuple(d.get("cron_expressions") or ()),
            intervals=tuple(Interval.from_json(i) for i in d.get("intervals") or ()),
            timezone=d.get("timezone") or "UTC",
            start_at=d.get("start_at") or "",
            end_at=d.get("end_at") or "",
            at=tuple(d.get("at") or ()),
            exclude_calendars=tuple(d.get("exclude_calendars") or ()),
            on_excluded=d.get("on_excluded") or "",
        )

    def to_json(self) -> JSON:
        out: JSON = {
            "cron_expressions": list(self.cron_expressions),
            "intervals": [i.to_json() for i in self.intervals],
            "timezone": self.timezone,
        }
        if self.start_at:
            out["start_at"] = self.start_at
        if self.end_at:
            out["end_at"] = self.end_at
        if self.at:
            out["at"] = list(self.at)
        if self.exclude_calendars:
            out["exclude_calendars"] = list(self.exclude_calendars)
        if self.on_excluded:
            out["on_excluded"] = self.on_excluded
        return out


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a failed attempt is retried (CONTRACT §10); None takes the
    server's default."""

    max_attempts: int | None = None
    initial_interval_seconds: int | None = None
    backoff_coefficient: float | None = None
    max_interval_seconds: int | None = None
    non_retryable_error_types: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: JSON) -> RetryPolicy:
        return cls(
            max_attempts=d.get("max_attempts"),
            initial_interval_seconds=d.get("initial_interval_seconds"),
            backoff_coefficient=d.get("backoff_coefficient"),
            max_interval_seconds=d.get("max_interval_seconds"),
            non_retryable_error_types=tuple(d.get("non_retryable_error_types") or ()),
        )

    def to_json(self) -> JSON:
        out: JSON = {
            "max_attempts": self.max_attempts,
            "initial_interval_seconds": self.initial_interval_seconds,
            "backoff_coefficient": self.backoff_coefficient,
            "max_interval_seconds": self.max_interval_seconds,
        }
        out = {k: v for k, v in out.items() if v is not None}
        if self.non_retryable_error_types:
            out["non_retryable_error_types"] = list(self.non_retryable_error_types)
        return out


@dataclass(frozen=True, slots=True)
class Target:
    """Who executes a run (CONTRACT §15): ``kind="worker"`` (a worker polling
    the run queue) or ``kind="http"`` (the server calls ``url``).

    ``secret`` is write-only: answers never carry it, only ``secret_set``.
    Leaving it None on an update keeps the stored secret, ``""`` removes it,
    a new value rotates it — so a target read from a schedule can be sent
    back unchanged without losing its secret.
    """

    kind: str = "worker"
    url: str = ""
    method: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: str = ""
    timeout_seconds: int | None = None
    secret: str | None = None
    secret_set: bool = False

    @classmethod
    def http(
        cls,
        url: str,
        *,
        method: str = "",
        headers: Mapping[str, str] | None = None,
        auth: str = "",
        timeout_seconds: int | None = None,
        secret: str | None = None,
    ) -> Target:
        return cls(
            kind="http",
            url=url,
            method=method,
            headers=dict(headers or {}),
            auth=auth,
            timeout_seconds=timeout_seconds,
            secret=secret,
        )

    @classmethod
    def from_json(cls, d: JSON) -> Target:
        return cls(
            kind=d.get("kind") or "worker",
            url=d.get("url") or "",
            method=d.get("method") or "",
            headers=_strings(d.get("headers")),
            auth=d.get("auth") or "",
            timeout_seconds=d.get("timeout_seconds"),
            secret_set=bool(d.get("secret_set")),
        )

    def to_json(self) -> JSON:
        out: JSON = {"kind": self.kind}
        if self.kind != "http":
            return out
        out["url"] = self.url
        if self.method:
            out["method"] = self.method
        if self.headers:
            out["headers"] = dict(self.headers)
        if self.auth:
            out["auth"] = self.auth
        if self.timeout_seconds is not None:
            out["timeout_seconds"] = self.timeout_seconds
        if self.secret is not None:
            out["secret"] = self.secret
        return out


def _target(raw: JSON | None) -> Target | None:
    """None stands for the default target, a worker: answers always name
    the target, and an Action read back compares equal to the one sent."""
    if not raw or (raw.get("kind") or "worker") == "worker":
        return None
    return Target.from_json(raw)


@dataclass(frozen=True, slots=True)
class Action:
    """What a fire starts. `input` is any JSON value handed to the workflow.

    ``retry_policy`` and ``target`` are part of the action: an update that
    sends an Action replaces them too, so read the schedule's action and
    change it with ``dataclasses.replace`` to keep them.
    """

    workflow_type: str
    workflow_class: str = ""
    input: Any = None
    execution_timeout_seconds: int | None = None
    run_timeout_seconds: int | None = None
    retry_policy: RetryPolicy | None = None
    target: Target | None = None

    @classmethod
    def from_json(cls, d: JSON) -> Action:
        return cls(
            workflow_type=d["workflow_type"],
            workflow_class=d.get("workflow_class") or "",
            input=d.get("input"),
            execution_timeout_seconds=d.get("execution_timeout_seconds"),
            run_timeout_seconds=d.get("run_timeout_seconds"),
            retry_policy=RetryPolicy.from_json(d["retry_policy"]) if d.get("retry_policy") else None,
            target=_target(d.get("target")),
        )

    def to_json(self) -> JSON:
        out: JSON = {
            "workflow_type": self.workflow_type,
            "execution_timeout_seconds": self.execution_timeout_seconds,
            "run_timeout_seconds": self.run_timeout_seconds,
        }
        if self.workflow_class:
            out["workflow_class"] = self.workflow_class
        if self.input is not None:
            out["input"] = self.input
        if self.retry_policy is not None:
            out["retry_policy"] = self.retry_policy.to_json()
        if self.target is not None:
            out["target"] = self.target.to_json()
        return out


@dataclass(frozen=True, slots=True)
class BufferedAction:
    instance_id: str
    occurrence_time: datetime
    kind: str
    buffered_at: datetime

    @classmethod
    def from_json(cls, d: JSON) -> BufferedAction:
        return cls(d["instance_id"], parse_time(d["occurrence_time"]), d["kind"], parse_time(d["buffered_at"]))


@dataclass(frozen=True, slots=True)
class LastRun:
    """The schedule's last finished run (CONTRACT §10)."""

    run_id: str
    status: str
    finished_at: datetime | None
    error_message: str | None

    @classmethod
    def from_json(cls, d: JSON) -> LastRun:
        return cls(d["run_id"], d["status"], parse_optional_time(d.get("finished_at")), d.get("error_message"))


@dataclass(frozen=True, slots=True)
class RecentRun:
    """One of the schedule's last 10 finished runs, newest first."""

    run_id: str
    status: str
    occurrence_time: datetime | None
    duration_ms: int | None

    @classmethod
    def from_json(cls, d: JSON) -> RecentRun:
        return cls(d["run_id"], d["status"], parse_optional_time(d.get("occurrence_time")), d.get("duration_ms"))


@dataclass(frozen=True, slots=True)
class RecentAction:
    instance_id: str
    run_id: str
    outcome: str
    fired_at: datetime
    occurrence_time: datetime
    fire_lag_ms: int
    reason: str

    @classmethod
    def from_json(cls, d: JSON) -> RecentAction:
        return cls(
            instance_id=d["instance_id"],
            run_id=d["run_id"],
            outcome=d["outcome"],
            fired_at=parse_time(d["fired_at"]),
            occurrence_time=parse_time(d["occurrence_time"]),
            fire_lag_ms=d.get("fire_lag_ms", 0),
            reason=d.get("reason") or "",
        )


@dataclass(frozen=True, slots=True)
class Schedule:
    """A schedule as describe, create, update and list answer it (CONTRACT §2).

    `future_fire_times` and `spec_description` are only filled by describe,
    create and update; list rows and pause/resume/delete answers leave them
    empty.
    """

    id: str
    schedule_id: str
    namespace: str
    status: str
    spec: Spec
    action: Action
    overlap_policy: str
    jitter_seconds: int
    max_runs: int | None
    remaining_actions: int | None
    connection: str | None
    queue: str | None
    labels: Mapping[str, str]
    memo: Mapping[str, str]
    search_attributes: Mapping[str, str]
    note: str
    fires_count: int
    failures_count: int
    skipped_trigger_count: int
    last_skip_reason: str | None
    last_skipped_at: datetime | None
    next_fire_at: datetime | None
    # Active with no occurrence left: end_at or the last at time passed.
    ended: bool
    next_nominal_at: datetime | None
    last_fired_at: datetime | None
    latest_instance_id: str | None
    latest_run_id: str | None
    buffered_actions: tuple[BufferedAction, ...]
    recent_actions: tuple[RecentAction, ...]
    paused_at: datetime | None
    pause_reason: str | None
    paused_by: str | None
    paused_until: datetime | None
    deleted_at: datetime | None
    created_at: datetime
    updated_at: datetime
    future_fire_times: tuple[datetime, ...] = ()
    spec_description: str | None = None
    # Run outcomes (CONTRACT §10-§12); defaults for servers that predate them.
    consecutive_failures: int = 0
    start_failures_count: int = 0
    last_run: LastRun | None = None
    recent_runs: tuple[RecentRun, ...] = ()
    pause_after_failures: int | None = None
    catchup_window_seconds: int | None = None
    start_deadline_seconds: int | None = None

    @classmethod
    def from_json(cls, d: JSON) -> Schedule:
        return cls(
            id=d["id"],
            schedule_id=d["schedule_id"],
            namespace=d["namespace"],
            status=d["status"],
            spec=Spec.from_json(d["spec"]),
            action=Action.from_json(d["action"]),
            overlap_policy=d["overlap_policy"],
            jitter_seconds=d.get("jitter_seconds", 0),
            max_runs=d.get("max_runs"),
            remaining_actions=d.get("remaining_actions"),
            connection=d.get("connection"),
            queue=d.get("queue"),
            labels=_strings(d.get("labels")),
            memo=_strings(d.get("memo")),
            search_attributes=_strings(d.get("search_attributes")),
            note=d.get("note") or "",
            fires_count=d.get("fires_count", 0),
            failures_count=d.get("failures_count", 0),
            skipped_trigger_count=d.get("skipped_trigger_count", 0),
            last_skip_reason=d.get("last_skip_reason"),
            last_skipped_at=parse_optional_time(d.get("last_skipped_at")),
            next_fire_at=parse_optional_time(d.get("next_fire_at")),
            ended=bool(d.get("ended", False)),
            next_nominal_at=parse_optional_time(d.get("next_nominal_at")),
            last_fired_at=parse_optional_time(d.get("last_fired_at")),
            latest_instance_id=d.get("latest_instance_id"),
            latest_run_id=d.get("latest_run_id"),
            buffered_actions=tuple(BufferedAction.from_json(b) for b in d.get("buffered_actions") or ()),
            recent_actions=tuple(RecentAction.from_json(a) for a in d.get("recent_actions") or ()),
            paused_at=parse_optional_time(d.get("paused_at")),
            deleted_at=parse_optional_time(d.get("deleted_at")),
            created_at=parse_time(d["created_at"]),
            updated_at=parse_time(d["updated_at"]),
            pause_reason=d.get("pause_reason"),
            paused_by=d.get("paused_by"),
            paused_until=parse_optional_time(d.get("paused_until")),
            future_fire_times=tuple(parse_time(t) for t in d.get("future_fire_times") or ()),
            spec_description=d.get("spec_description"),
            consecutive_failures=d.get("consecutive_failures", 0),
            start_failures_count=d.get("start_failures_count", 0),
            last_run=LastRun.from_json(d["last_run"]) if d.get("last_run") else None,
            recent_runs=tuple(RecentRun.from_json(r) for r in d.get("recent_runs") or ()),
            pause_after_failures=d.get("pause_after_failures"),
            catchup_window_seconds=d.get("catchup_window_seconds"),
            start_deadline_seconds=d.get("start_deadline_seconds"),
        )


@dataclass(frozen=True, slots=True)
class SchedulePage:
    schedules: tuple[Schedule, ...]
    next_cursor: str | None
    has_more: bool

    @classmethod
    def from_json(cls, d: JSON) -> SchedulePage:
        return cls(tuple(Schedule.from_json(s) for s in d["schedules"]), d.get("next_cursor"), bool(d["has_more"]))


@dataclass(frozen=True, slots=True)
class ScheduleHistoryEvent:
    """One entry of a schedule's audit stream (CONTRACT §6); `sequence` is 1, 2, 3… without gaps."""

    id: str
    sequence: int
    event_type: str
    payload: Mapping[str, Any]
    workflow_instance_id: str | None
    workflow_run_id: str | None
    recorded_at: datetime

    @property
    def command_context(self) -> Mapping[str, Any] | None:
        """Who caused the event ({source, actor, request_id, reason}), when recorded."""
        value = self.payload.get("command_context")
        return value if isinstance(value, Mapping) else None

    @classmethod
    def from_json(cls, d: JSON) -> ScheduleHistoryEvent:
        return cls(
            id=d["id"],
            sequence=d["sequence"],
            event_type=d["event_type"],
            payload=d.get("payload") or {},
            workflow_instance_id=d.get("workflow_instance_id"),
            workflow_run_id=d.get("workflow_run_id"),
            recorded_at=parse_time(d["recorded_at"]),
        )


@dataclass(frozen=True, slots=True)
class ScheduleHistoryPage:
    """One page of an audit stream; pass `next_cursor` as `after_sequence` for the next."""

    schedule_id: str
    namespace: str
    events: tuple[ScheduleHistoryEvent, ...]
    next_cursor: int | None
    has_more: bool

    @classmethod
    def from_json(cls, d: JSON) -> ScheduleHistoryPage:
        return cls(
            schedule_id=d["schedule_id"],
            namespace=d["namespace"],
            events=tuple(ScheduleHistoryEvent.from_json(e) for e in d["events"]),
            next_cursor=d.get("next_cursor"),
            has_more=bool(d["has_more"]),
        )


@dataclass(frozen=True, slots=True)
class TriggerResult:
    """The answer to a manual trigger: outcome triggered, buffered or skipped."""

    outcome: str
    instance_id: str | None
    run_id: str | None
    reason: str | None
    buffer_depth: int

    @classmethod
    def from_json(cls, d: JSON) -> TriggerResult:
        return cls(d["outcome"], d.get("instance_id"), d.get("run_id"), d.get("reason"), d.get("buffer_depth", 0))


@dataclass(frozen=True, slots=True)
class BackfillOccurrence:
    """One occurrence of a backfill: outcome started, buffered, skipped, failed, or planned (dry run)."""

    occurrence_time: datetime
    instance_id: str | None
    run_id: str | None
    outcome: str
    reason: str | None

    @classmethod
    def from_json(cls, d: JSON) -> BackfillOccurrence:
        return cls(parse_time(d["occurrence_time"]), d.get("instance_id"), d.get("run_id"), d["outcome"], d.get("reason"))


@dataclass(frozen=True, slots=True)
class BackfillReport:
    """outcome is completed, dry_run or max_runs_exhausted; `occurrences` counts [start, end)."""

    outcome: str
    occurrences: int
    results: tuple[BackfillOccurrence, ...]

    @classmethod
    def from_json(cls, d: JSON) -> BackfillReport:
        return cls(d["outcome"], d["occurrences"], tuple(BackfillOccurrence.from_json(r) for r in d["results"]))


def _time_or_none(raw: str | None) -> datetime | None:
    return None if raw is None else parse_time(raw)


@dataclass(frozen=True, slots=True)
class BackfillJob:
    """A durable backfill job (SPEC §18): status is running, paused,
    completed, cancelled or failed; ``eta`` is set while it runs."""

    id: str
    namespace: str
    schedule_id: str
    status: str
    start: datetime
    end: datetime
    overlap_policy: str | None
    max_per_minute: int | None
    max_concurrent_runs: int | None
    total: int
    started: int
    skipped: int
    buffered: int
    failed: int
    remaining: int
    cursor: datetime | None
    eta: datetime | None
    error: str | None
    created_by: str
    reason: str
    created_at: datetime
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status not in ("running", "paused")

    @classmethod
    def from_json(cls, d: JSON) -> BackfillJob:
        return cls(
            d["id"], d["namespace"], d["schedule_id"], d["status"], parse_time(d["from"]), parse_time(d["to"]),
            d.get("overlap_policy"), d.get("max_per_minute"), d.get("max_concurrent_runs"),
            d["total"], d["started"], d["skipped"], d["buffered"], d["failed"], d["remaining"],
            _time_or_none(d.get("cursor")), _time_or_none(d.get("eta")), d.get("error"),
            d.get("created_by", ""), d.get("reason", ""), parse_time(d["created_at"]), _time_or_none(d.get("finished_at")),
        )


@dataclass(frozen=True, slots=True)
class BackfillPage:
    """One page of GET /backfills, newest first."""

    backfills: tuple[BackfillJob, ...]
    next_cursor: str | None
    has_more: bool

    @classmethod
    def from_json(cls, d: JSON) -> BackfillPage:
        return cls(tuple(BackfillJob.from_json(b) for b in d["backfills"]), d.get("next_cursor"), d["has_more"])


@dataclass(frozen=True, slots=True)
class Run:
    """One execution of a workflow (CONTRACT §7)."""

    run_id: str
    instance_id: str
    namespace: str
    schedule_id: str | None
    workflow_type: str
    workflow_class: str
    status: str
    trigger: str
    connection: str
    queue: str
    attempt: int
    input: Any
    output: Any
    occurrence_time: datetime | None
    worker_id: str | None
    lease_expires_at: datetime | None
    run_deadline_at: datetime | None
    execution_deadline_at: datetime | None
    cancel_requested: bool
    failure_message: str | None
    failure_type: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def from_json(cls, d: JSON) -> Run:
        return cls(
            run_id=d["run_id"],
            instance_id=d["instance_id"],
            namespace=d["namespace"],
            schedule_id=d.get("schedule_id"),
            workflow_type=d["workflow_type"],
            workflow_class=d.get("workflow_class") or "",
            status=d["status"],
            trigger=d.get("trigger") or "",
            connection=d.get("connection") or "",
            queue=d.get("queue") or "",
            attempt=d.get("attempt", 0),
            input=d.get("input"),
            output=d.get("output"),
            occurrence_time=parse_optional_time(d.get("occurrence_time")),
            worker_id=d.get("worker_id"),
            lease_expires_at=parse_optional_time(d.get("lease_expires_at")),
            run_deadline_at=parse_optional_time(d.get("run_deadline_at")),
            execution_deadline_at=parse_optional_time(d.get("execution_deadline_at")),
            cancel_requested=bool(d.get("cancel_requested")),
            failure_message=d.get("failure_message"),
            failure_type=d.get("failure_type"),
            created_at=parse_time(d["created_at"]),
            started_at=parse_optional_time(d.get("started_at")),
            finished_at=parse_optional_time(d.get("finished_at")),
        )


@dataclass(frozen=True, slots=True)
class RunPage:
    runs: tuple[Run, ...]
    next_cursor: str | None
    has_more: bool

    @classmethod
    def from_json(cls, d: JSON) -> RunPage:
        return cls(tuple(Run.from_json(r) for r in d["runs"]), d.get("next_cursor"), bool(d["has_more"]))


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One entry of a run's own history (e.g. ScheduleTriggered provenance)."""

    sequence: int
    event_type: str
    payload: Mapping[str, Any]
    recorded_at: datetime

    @classmethod
    def from_json(cls, d: JSON) -> RunEvent:
        return cls(d["sequence"], d["event_type"], d.get("payload") or {}, parse_time(d["recorded_at"]))


@dataclass(frozen=True, slots=True)
class RunDetail:
    """A run with its whole history, as GET /runs/{run_id} answers."""

    run: Run
    history: tuple[RunEvent, ...] = field(default=())

    @classmethod
    def from_json(cls, d: JSON) -> RunDetail:
        return cls(Run.from_json(d), tuple(RunEvent.from_json(e) for e in d.get("history") or ()))


@dataclass(frozen=True, slots=True)
class ScheduleVersion:
    """One version of a schedule (CONTRACT §15): its creation (n=1) or an update.

    `source` is where it came from: console, api, cli, apply, revert (or
    scheduler); `unrecorded_fields` are settings the audit stream does not
    hold for it (recorded before versions existed)."""

    n: int
    sequence: int
    event_type: str
    recorded_at: datetime
    actor: str
    source: str
    command_context: Mapping[str, Any] | None
    changed_fields: tuple[str, ...]
    reverted_to: int | None
    unrecorded_fields: tuple[str, ...]

    @classmethod
    def from_json(cls, d: JSON) -> ScheduleVersion:
        return cls(
            n=d["n"],
            sequence=d["sequence"],
            event_type=d["event_type"],
            recorded_at=parse_time(d["recorded_at"]),
            actor=d.get("actor") or "",
            source=d.get("source") or "",
            command_context=d.get("command_context"),
            changed_fields=tuple(d.get("changed_fields") or ()),
            reverted_to=d.get("reverted_to"),
            unrecorded_fields=tuple(d.get("unrecorded_fields") or ()),
        )


@dataclass(frozen=True, slots=True)
class ScheduleVersionDetail:
    """A version with its whole definition, in the shape `schedule export`
    writes (and create accepts)."""

    version: ScheduleVersion
    definition: Mapping[str, Any]

    @classmethod
    def from_json(cls, d: JSON) -> ScheduleVersionDetail:
        return cls(version=ScheduleVersion.from_json(d), definition=d.get("definition") or {})


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One changed field, both values in the diff's display spelling."""

    field: str
    before: str
    after: str

    @classmethod
    def from_json(cls, d: JSON) -> FieldChange:
        return cls(field=d["field"], before=d.get("from", ""), after=d.get("to", ""))


@dataclass(frozen=True, slots=True)
class VersionDiff:
    """Two versions of a schedule compared field by field (only the changed ones)."""

    schedule_id: str
    from_version: int
    to_version: int
    changes: tuple[FieldChange, ...]

    @classmethod
    def from_json(cls, d: JSON) -> VersionDiff:
        return cls(
            schedule_id=d["schedule_id"],
            from_version=d["from"],
            to_version=d["to"],
            changes=tuple(FieldChange.from_json(c) for c in d.get("changes") or ()),
        )


@dataclass(frozen=True, slots=True)
class RevertPlan:
    """What a revert would do; empty `changed_fields` means nothing (the revert would be refused)."""

    version: int
    changed_fields: tuple[str, ...]
    changes: tuple[FieldChange, ...]
    fire_times_before: tuple[datetime, ...]
    fire_times_after: tuple[datetime, ...]
    schedule: Schedule

    @classmethod
    def from_json(cls, d: JSON) -> RevertPlan:
        return cls(
            version=d["version"],
            changed_fields=tuple(d.get("changed_fields") or ()),
            changes=tuple(FieldChange.from_json(c) for c in d.get("changes") or ()),
            fire_times_before=tuple(parse_time(t) for t in d.get("fire_times_before") or ()),
            fire_times_after=tuple(parse_time(t) for t in d.get("fire_times_after") or ()),
            schedule=Schedule.from_json(d["schedule"]),
        )


@dataclass(frozen=True, slots=True)
class Calendar:
    """A namespace's calendar (CONTRACT §19): dates schedules listing it in
    ``Spec.exclude_calendars`` do not fire on, and the weekend days a
    business-day move steps over. ``used_by`` is filled by ``get_calendar``."""

    namespace: str
    name: str
    description: str
    dates: tuple[str, ...]
    weekend: tuple[str, ...]
    version: int
    used_by: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: JSON) -> Calendar:
        return cls(
            namespace=d["namespace"],
            name=d["name"],
            description=d.get("description") or "",
            dates=tuple(d.get("dates") or ()),
            weekend=tuple(d.get("weekend") or ()),
            version=int(d["version"]),
            used_by=tuple(d.get("used_by") or ()),
        )


@dataclass(frozen=True, slots=True)
class CalendarChange:
    """What ``update_calendar`` did: the calendar, and the schedules whose
    next fire it re-planned, as ``(schedule_id, from, to)`` (RFC 3339 or None)."""

    calendar: Calendar
    replanned: tuple[tuple[str, str | None, str | None], ...]

    @classmethod
    def from_json(cls, d: JSON) -> CalendarChange:
        return cls(
            calendar=Calendar.from_json(d["calendar"]),
            replanned=tuple((r["schedule_id"], r.get("from"), r.get("to")) for r in d.get("replanned") or ()),
        )
