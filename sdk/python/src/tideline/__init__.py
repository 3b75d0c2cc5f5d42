"""Python client for Tideline's schedules API.

    async with tideline.Client("http://127.0.0.1:8080", token=TOKEN, namespace="payments") as client:
        async for event in client.iter_schedule_history("nightly-sync"):
            print(event.sequence, event.event_type)

`tideline.SyncClient` offers the same methods, blocking. `tideline.Worker`
(and its blocking twin `tideline.SyncWorker`) runs Python handlers for runs.
"""

from .client import API_PREFIX, UNSET, Client, ScheduleHandle, Unset, __version__
from .errors import BadRequest, Conflict, Forbidden, NotFound, Redirected, TidelineError, Unauthorized, ValidationFailed
from .sync import SyncClient, SyncScheduleHandle
from .worker import NonRetryable, RunContext, SyncWorker, Worker
from .types import (
    Action,
    Calendar,
    CalendarChange,
    BackfillJob,
    BackfillOccurrence,
    BackfillPage,
    BackfillReport,
    BufferedAction,
    FieldChange,
    Interval,
    LastRun,
    RecentAction,
    RecentRun,
    RetryPolicy,
    RevertPlan,
    Run,
    RunDetail,
    RunEvent,
    RunPage,
    Schedule,
    ScheduleHistoryEvent,
    ScheduleHistoryPage,
    SchedulePage,
    ScheduleVersion,
    ScheduleVersionDetail,
    Spec,
    Target,
    TriggerResult,
    VersionDiff,
)

__all__ = [
    "Calendar",
    "CalendarChange",
    "API_PREFIX",
    "UNSET",
    "Action",
    "BackfillJob",
    "BackfillOccurrence",
    "BackfillPage",
    "BackfillReport",
    "BadRequest",
    "BufferedAction",
    "Client",
    "Conflict",
    "FieldChange",
    "Forbidden",
    "Interval",
    "NonRetryable",
    "NotFound",
    "Redirected",
    "LastRun",
    "RecentAction",
    "RecentRun",
    "RetryPolicy",
    "RevertPlan",
    "Run",
    "RunDetail",
    "RunEvent",
    "RunContext",
    "RunPage",
    "Schedule",
    "ScheduleHandle",
    "ScheduleHistoryEvent",
    "ScheduleHistoryPage",
    "SchedulePage",
    "ScheduleVersion",
    "ScheduleVersionDetail",
    "Spec",
    "SyncClient",
    "SyncScheduleHandle",
    "SyncWorker",
    "TidelineError",
    "Target",
    "TriggerResult",
    "Unauthorized",
    "Unset",
    "VersionDiff",
    "ValidationFailed",
    "Worker",
    "__version__",
]
