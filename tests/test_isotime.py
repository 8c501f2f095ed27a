"""ISO 8601 times as instructors and platforms write them, read alike (`fromisoformat` alone
refuses a lower-case `z` and surrounding space)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from grader import isotime

PACIFIC = timezone(timedelta(hours=-8))


@pytest.mark.parametrize("written, normal, meant", [
    ("2026-03-02T22:00:00Z", "2026-03-02T22:00:00+00:00",
     datetime(2026, 3, 2, 22, tzinfo=UTC)),
    (" 2026-03-02T22:00:00-0800\n", "2026-03-02T22:00:00-08:00",
     datetime(2026, 3, 2, 22, tzinfo=PACIFIC)),
    ("2026-03-02T22:00:00.5-08:00", "2026-03-02T22:00:00.500000-08:00",
     datetime(2026, 3, 2, 22, 0, 0, 500000, tzinfo=PACIFIC)),
    ("2026-03-02T22:00:00.1234567z", "2026-03-02T22:00:00.123456+00:00",
     datetime(2026, 3, 2, 22, 0, 0, 123456, tzinfo=UTC)),
    ("2026-03-02T22:00:00+05:30", "2026-03-02T22:00:00+05:30",
     datetime(2026, 3, 2, 22, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
    ("2026-03-02", "2026-03-02", datetime(2026, 3, 2)),  # a date's dashes are no offset
])
def test_what_instructors_and_platforms_write_is_read(written, normal, meant):
    assert isotime.normal(written) == normal
    assert isotime.parse(written) == meant


def test_what_is_no_time_is_refused():
    with pytest.raises(ValueError):
        isotime.parse("next Tuesday")
