"""Python client for Tideline's schedules API.

    async with tideline.Client("http://127.0.0.1:8080", token=TOKEN, namespace="payments") as client:
        async for event in client.iter_schedule_history("nightly-sync"):
            print(event.sequence, event.event_type)

`tideline.SyncClient` offers the same methods, blocking.
"""

from .client import API_PREFIX, UNSET, Client, ScheduleHandle, Unset, __version__
from .errors import BadRequest, Conflict, Forbidden, NotFound, TidelineError, Unauthorized, ValidationFailed
from .sync import SyncClient, SyncScheduleHandle
from .types import (
    Action,
    BackfillOccurrence,
    BackfillReport,
    BufferedAction,
    Interval,
    LastRun,
    RecentAction,
    RecentRun,
    Run,
    RunDetail,
    RunEvent,
    RunPage,
    Schedule,
    ScheduleHistoryEvent,
    ScheduleHistoryPage,
    SchedulePage,
    Spec,
    TriggerResult,
)

__all__ = [
    "API_PREFIX",
    "UNSET",
    "Action",
    "BackfillOccurrence",
    "BackfillReport",
    "BadRequest",
    "BufferedAction",
    "Client",
    "Conflict",
    "Forbidden",
    "Interval",
    "NotFound",
    "LastRun",
    "RecentAction",
    "RecentRun",
    "Run",
    "RunDetail",
    "RunEvent",
    "RunPage",
    "Schedule",
    "ScheduleHandle",
    "ScheduleHistoryEvent",
    "ScheduleHistoryPage",
    "SchedulePage",
    "Spec",
    "SyncClient",
    "SyncScheduleHandle",
    "TidelineError",
    "TriggerResult",
    "Unauthorized",
    "Unset",
    "ValidationFailed",
    "__version__",
]
