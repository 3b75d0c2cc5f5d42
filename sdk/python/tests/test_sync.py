"""SyncClient: the same operations and types, blocking."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone

import pytest

import tideline
from support import ACTION, Server


def test_sync_client_end_to_end(server: Server, ns: str) -> None:
    with tideline.SyncClient(server.url, token=server.tokens.admin, namespace=ns) as client:
        created = client.create_schedule("sync", cron="0 * * * *", action=ACTION)
        assert isinstance(created, tideline.Schedule) and created.namespace == ns

        handle = client.get_schedule("sync")
        assert isinstance(handle, tideline.SyncScheduleHandle) and handle.schedule_id == "sync"
        assert handle.describe() == created
        assert handle.pause(reason="r").status == "paused"
        assert client.resume_schedule("sync").status == "active"
        trigger = handle.trigger()
        assert isinstance(trigger, tideline.TriggerResult) and trigger.run_id is not None
        start = datetime(2026, 3, 1, tzinfo=timezone.utc)
        plan = handle.backfill(start=start, end=start + timedelta(hours=3), dry_run=True)
        assert isinstance(plan, tideline.BackfillReport)  # a dry run; otherwise the job
        assert (plan.outcome, plan.occurrences) == ("dry_run", 3)
        assert handle.update(note="sync note").note == "sync note"

        page = client.get_schedule_history("sync", limit=2)
        assert isinstance(page, tideline.ScheduleHistoryPage)
        assert [e.sequence for e in page.events] == [1, 2] and page.next_cursor == 2
        events = list(client.iter_schedule_history("sync", limit=2))
        assert [e.event_type for e in events] == ["ScheduleCreated", "SchedulePaused", "ScheduleResumed",
                                                  "ScheduleTriggered", "ScheduleUpdated"]
        assert [e.sequence for e in handle.iter_history(after_sequence=3)] == [4, 5]

        assert [s.schedule_id for s in client.list_schedules()] == ["sync"]
        runs = list(handle.runs())
        assert [r.run_id for r in runs] == [trigger.run_id]
        assert client.get_run(trigger.run_id).run == runs[0]
        assert handle.delete().status == "deleted"

        with pytest.raises(tideline.NotFound) as info:
            client.describe_schedule("sync")
        assert info.value.code == "schedule_not_found"


def test_breaking_out_of_an_iterator_and_closing_twice(server: Server, ns: str) -> None:
    client = tideline.SyncClient(server.url, token=server.tokens.admin, namespace=ns)
    for i in range(3):
        client.create_schedule(f"s{i}", cron="@daily", action=ACTION)
    for schedule in client.list_schedules(page_size=1):
        assert schedule.schedule_id == "s0"
        break
    assert [s.schedule_id for s in client.list_schedules(page_size=2)] == ["s0", "s1", "s2"]
    client.close()
    client.close()
    assert not any(t.name == "tideline-sync" and t.is_alive() for t in threading.enumerate() if t is not threading.current_thread())


async def test_sync_client_works_inside_a_running_event_loop(server: Server, ns: str) -> None:
    assert asyncio.get_running_loop() is not None
    with tideline.SyncClient(server.url, token=server.tokens.viewer, namespace=ns) as client:
        with pytest.raises(tideline.NotFound):
            client.describe_schedule("nothing-here")
        assert list(client.list_schedules()) == []
