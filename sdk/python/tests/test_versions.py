"""Versions of a schedule (CONTRACT §15): list, read one, diff, revert."""

from __future__ import annotations

import pytest

import tideline
from support import ACTION


async def test_versions_diff_and_revert(client: tideline.Client) -> None:
    await client.create_schedule("v", cron="0 2 * * *", action=ACTION, note="first")
    await client.update_schedule("v", note="second", jitter_seconds=30)
    handle = client.get_schedule("v")

    versions = await handle.versions()
    assert [(v.n, v.event_type, v.source) for v in versions] == [(1, "ScheduleCreated", "api"), (2, "ScheduleUpdated", "api")]
    assert versions[1].changed_fields == ("jitter_seconds", "note")
    assert versions[0].unrecorded_fields == () and versions[0].reverted_to is None

    one = await handle.version(1)
    assert one.version.n == 1
    assert one.definition["note"] == "first" and one.definition["schedule_id"] == "v"

    diff = await handle.diff()
    assert (diff.from_version, diff.to_version) == (1, 2)
    assert [(c.field, c.before, c.after) for c in diff.changes] == [("jitter_seconds", "0", "30"), ("note", "first", "second")]

    plan = await client.plan_revert_schedule("v", 1)
    assert plan.changed_fields == ("jitter_seconds", "note")
    assert len(plan.fire_times_before) == 5 and plan.fire_times_before == plan.fire_times_after
    assert len(await handle.versions()) == 2, "a plan writes nothing"

    reverted = await handle.revert(1, reason="undo")
    assert (reverted.note, reverted.jitter_seconds) == ("first", 0)
    last = (await handle.versions())[-1]
    assert (last.n, last.source, last.reverted_to) == (3, "revert", 1)
    assert last.command_context is not None and last.command_context["reason"] == "undo"

    with pytest.raises(tideline.Conflict) as refused:
        await handle.revert(3)
    assert refused.value.code == "no_change"
    with pytest.raises(tideline.NotFound) as missing:
        await client.get_schedule_version("v", 9)
    assert missing.value.code == "version_not_found"
