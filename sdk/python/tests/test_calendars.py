"""Calendars (CONTRACT §19): create, a schedule that skips a listed date, an
edit that re-plans it, the refused delete while it is in use."""

from __future__ import annotations

import pytest

import tideline
from support import ACTION


async def test_calendar_lifecycle(client: tideline.Client) -> None:
    cal = await client.create_calendar("hol", dates=["2099-12-25", "2099-01-01"], description="holidays")
    assert (cal.name, cal.dates, cal.weekend, cal.version) == ("hol", ("2099-01-01", "2099-12-25"), ("sun", "sat"), 1)

    spec = tideline.Spec(cron_expressions=("0 9 * * *",), exclude_calendars=("hol",), on_excluded="next_business_day")
    created = await client.create_schedule("holiday-aware", spec=spec, action=ACTION)
    assert created.spec.exclude_calendars == ("hol",)
    assert created.spec.on_excluded == "next_business_day"
    assert "except days in hol" in created.spec_description

    got = await client.get_calendar("hol")
    assert got.used_by == ("holiday-aware",)
    assert [c["name"] for c in await client.list_calendars()] == ["hol"]

    next_fire = created.next_fire_at
    assert next_fire is not None
    change = await client.update_calendar("hol", dates=[next_fire.date().isoformat()])
    assert change.calendar.version == 2
    assert [r[0] for r in change.replanned] == ["holiday-aware"]

    with pytest.raises(tideline.Conflict) as in_use:
        await client.delete_calendar("hol")
    assert in_use.value.code == "calendar_in_use"

    with pytest.raises(tideline.ValidationFailed) as bad:
        await client.create_calendar("bad", dates=["2099-13-01"])
    assert "dates[0]" in bad.value.fields

    await client.delete_schedule("holiday-aware")
    await client.delete_calendar("hol")
    with pytest.raises(tideline.NotFound):
        await client.get_calendar("hol")
