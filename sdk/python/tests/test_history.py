"""The audit stream read contract (CONTRACT §6) through the SDK, over 521 events."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timezone

import httpx
import pytest

import tideline
from support import Server

# ScheduleCreated, 500 ScheduleTriggered from one backfill (cheap: one
# request), then 10 pause/resume pairs.
BACKFILLED = 500
EVENTS = 1 + BACKFILLED + 20


@dataclass(frozen=True)
class Stream:
    namespace: str
    schedule_id: str


@pytest.fixture(scope="session")
def stream(server: Server) -> Stream:
    """One schedule with exactly 521 audit events, written with plain HTTP
    calls so the SDK under test does not seed its own fixture."""
    s = Stream(namespace=f"history-{secrets.token_hex(4)}", schedule_id="audit-521")
    headers = {"Authorization": f"Bearer {server.tokens.admin}", "X-Namespace": s.namespace}
    with httpx.Client(base_url=f"{server.url}/waterline/api/v2", headers=headers, timeout=30) as http:
        body = {"schedule_id": s.schedule_id, "cron": "* * * * *", "action": {"workflow_type": "audit"}}
        http.post("/schedules", json=body).raise_for_status()
        window = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T08:20:00Z", "overlap_policy": "allow_all"}
        response = http.post(f"/schedules/{s.schedule_id}/backfill", json=window)
        response.raise_for_status()  # returns None on Debian's httpx 0.23
        job = response.json()["backfill"]
        assert job["total"] == BACKFILLED
        while job["status"] == "running":  # done at once unless the machine is slow
            job = http.get(f"/backfills/{job['id']}").json()["backfill"]
        assert job["status"] == "completed" and job["started"] == BACKFILLED
        for i in range((EVENTS - 1 - BACKFILLED) // 2):
            http.post(f"/schedules/{s.schedule_id}/pause", json={"reason": f"pause {i}"}).raise_for_status()
            http.post(f"/schedules/{s.schedule_id}/resume", json={}).raise_for_status()
    return s


@pytest.fixture
async def history_client(server: Server, stream: Stream) -> AsyncIterator[tideline.Client]:
    async with tideline.Client(server.url, token=server.tokens.viewer, namespace=stream.namespace) as c:
        yield c


async def read_pages(client: tideline.Client, schedule_id: str, limit: int) -> list[tideline.ScheduleHistoryPage]:
    pages = [await client.get_schedule_history(schedule_id, limit=limit)]
    while pages[-1].has_more:
        pages.append(await client.get_schedule_history(schedule_id, limit=limit, after_sequence=pages[-1].next_cursor))
    return pages


@pytest.mark.parametrize("limit", [100, 7])
async def test_pages_follow_next_cursor(history_client: tideline.Client, stream: Stream, limit: int) -> None:
    pages = await read_pages(history_client, stream.schedule_id, limit)

    full, rest = divmod(EVENTS, limit)
    assert [len(p.events) for p in pages] == [limit] * full + ([rest] if rest else [])
    for number, page in enumerate(pages, start=1):
        last = page.events[-1].sequence
        assert last == min(number * limit, EVENTS)
        if number < len(pages):
            assert (page.has_more, page.next_cursor) == (True, last)
        else:
            assert (page.has_more, page.next_cursor) == (False, None)
        assert (page.schedule_id, page.namespace) == (stream.schedule_id, stream.namespace)
    sequences = [e.sequence for p in pages for e in p.events]
    assert sequences == list(range(1, EVENTS + 1))


@pytest.mark.parametrize("limit", [None, 100, 7, 500])
async def test_iter_yields_every_event_once_in_order(history_client: tideline.Client, stream: Stream, limit: int | None) -> None:
    events = [e async for e in history_client.iter_schedule_history(stream.schedule_id, limit=limit)]

    assert [e.sequence for e in events] == list(range(1, EVENTS + 1))
    assert len({e.id for e in events}) == EVENTS
    assert events[0].event_type == "ScheduleCreated"
    assert {e.event_type for e in events[1 : 1 + BACKFILLED]} == {"ScheduleTriggered"}
    assert [e.event_type for e in events[1 + BACKFILLED :]] == ["SchedulePaused", "ScheduleResumed"] * 10
    run_ids = [e.workflow_run_id for e in events[1 : 1 + BACKFILLED]]
    assert None not in run_ids and len(set(run_ids)) == BACKFILLED


async def test_after_sequence_resumes(history_client: tideline.Client, stream: Stream) -> None:
    tail = [e.sequence async for e in history_client.iter_schedule_history(stream.schedule_id, limit=7, after_sequence=500)]
    assert tail == list(range(501, EVENTS + 1))

    page = await history_client.get_schedule_history(stream.schedule_id, after_sequence=200, limit=3)
    assert [e.sequence for e in page.events] == [201, 202, 203]
    assert (page.has_more, page.next_cursor) == (True, 203)

    last = await history_client.get_schedule_history(stream.schedule_id, after_sequence=EVENTS - 1)
    assert [e.sequence for e in last.events] == [EVENTS]
    assert (last.has_more, last.next_cursor) == (False, None)

    past_end = await history_client.get_schedule_history(stream.schedule_id, after_sequence=EVENTS)
    assert (past_end.events, past_end.has_more, past_end.next_cursor) == ((), False, None)
    assert [e async for e in history_client.iter_schedule_history(stream.schedule_id, after_sequence=EVENTS)] == []


@pytest.mark.parametrize(("limit", "served"), [(None, 100), (0, 1), (-5, 1), (1, 1), (499, 499), (500, 500), (501, 500), (10_000, 500)])
async def test_limit_is_clamped_to_1_through_500(history_client: tideline.Client, stream: Stream, limit: int | None, served: int) -> None:
    page = await history_client.get_schedule_history(stream.schedule_id, limit=limit)
    assert len(page.events) == served
    assert page.next_cursor == served


async def test_events_are_typed(history_client: tideline.Client, stream: Stream) -> None:
    created, triggered = (await history_client.get_schedule_history(stream.schedule_id, limit=2)).events
    (paused,) = (await history_client.get_schedule_history(stream.schedule_id, limit=1, after_sequence=1 + BACKFILLED)).events

    assert isinstance(created, tideline.ScheduleHistoryEvent)
    assert created.recorded_at.tzinfo is timezone.utc
    assert created.recorded_at <= triggered.recorded_at <= paused.recorded_at
    assert created.payload["spec"]["cron_expressions"] == ["* * * * *"]
    assert created.payload["overlap_policy"] == "skip"
    assert triggered.payload["outcome"] == "backfilled"
    assert triggered.payload["occurrence_time"] == "2026-01-01T00:00:00.000000Z"
    assert triggered.workflow_run_id is not None and triggered.workflow_run_id == triggered.payload["workflow_run_id"]
    assert (paused.event_type, paused.payload["reason"]) == ("SchedulePaused", "pause 0")
    assert paused.command_context is not None
    assert paused.command_context["source"] == "api"
    assert paused.command_context["actor"] == "sdk-admin"
    assert (created.workflow_instance_id, created.workflow_run_id) == (None, None)


async def test_handle_history_matches_client(history_client: tideline.Client, stream: Stream) -> None:
    handle = history_client.get_schedule(stream.schedule_id)

    page = await handle.history(limit=7, after_sequence=14)
    assert page == await history_client.get_schedule_history(stream.schedule_id, limit=7, after_sequence=14)
    assert [e.sequence for e in page.events] == list(range(15, 22))

    sequences = [e.sequence async for e in handle.iter_history(limit=100, after_sequence=420)]
    assert sequences == list(range(421, EVENTS + 1))


async def test_history_stays_readable_after_delete(client: tideline.Client) -> None:
    await client.create_schedule("doomed", cron="@daily", action={"workflow_type": "x"})
    await client.trigger_schedule("doomed")
    await client.delete_schedule("doomed")

    events = [e async for e in client.iter_schedule_history("doomed", limit=1)]
    assert [e.event_type for e in events] == ["ScheduleCreated", "ScheduleTriggered", "ScheduleDeleted"]
    assert events[1].workflow_run_id is not None
    assert events[1].payload["outcome"] == "manual"
    assert events[2].payload["reason"] == "deleted"
    with pytest.raises(tideline.NotFound):
        await client.describe_schedule("doomed")
