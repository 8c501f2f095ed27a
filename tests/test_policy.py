"""The time policy: deadlines, time zones, daylight saving, grace, cap, hard deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from grader.errors import UsageError
from grader.term import policy

NY = policy.parse_zone("America/New_York")
DUE = datetime.fromisoformat("2026-03-01T23:59:00-05:00")
TEN_A_DAY = policy.Policy(DUE, policy.parse_late("10%/day,cap=50%,grace=15m"))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_exactly_on_the_deadline_is_on_time_and_one_second_later_is_a_day_started():
    strict = policy.Policy(DUE, policy.parse_late("10%/day"))
    on_time = policy.assess(strict, at("2026-03-02T04:59:00+00:00"))  # the same instant, UTC
    assert (on_time.percent, on_time.late_by) == (0.0, timedelta(0))
    assert on_time.explanation == "submitted on time for the deadline of 2026-03-01 23:59 -05:00"
    late = policy.assess(strict, at("2026-03-01T23:59:01-05:00"))
    assert (late.percent, late.late_by) == (10.0, timedelta(seconds=1))
    assert late.explanation == ("submitted 1 s after the deadline of 2026-03-01 23:59 -05:00; "
                                "10% per day started, 1 day: -10%")


def test_the_grace_period_forgives_up_to_its_length_then_counts_from_the_deadline():
    within = policy.assess(TEN_A_DAY, DUE + timedelta(minutes=15))
    assert within.percent == 0.0
    assert within.explanation.endswith("within the 15 min grace period: no penalty")
    past = policy.assess(TEN_A_DAY, DUE + timedelta(minutes=15, seconds=1))
    assert past.percent == 10.0
    two_days = policy.assess(TEN_A_DAY, DUE + timedelta(days=1, seconds=1))
    assert two_days.percent == 20.0 and "2 days: -20%" in two_days.explanation


def test_the_cap_bounds_the_penalty():
    week = policy.assess(TEN_A_DAY, DUE + timedelta(days=6, hours=1))
    assert week.percent == 50.0
    assert week.explanation.endswith("10% per day started, 7 days: -70%, capped at -50%")


def test_per_hour_counts_hours_started():
    hourly = policy.Policy(DUE, policy.parse_late("2%/hour"))
    assessed = policy.assess(hourly, DUE + timedelta(hours=1, minutes=5))
    assert assessed.percent == 4.0
    assert assessed.explanation == ("submitted 1 h 05 min after the deadline of 2026-03-01 "
                                    "23:59 -05:00; 2% per hour started, 2 hours: -4%")


def test_an_extension_replaces_the_deadline_and_says_so():
    extension = at("2026-03-03T23:59:00-05:00")
    assessed = policy.assess(TEN_A_DAY, DUE + timedelta(days=1), extension)
    assert assessed.percent == 0.0 and assessed.deadline == extension
    assert assessed.explanation == ("submitted on time for the deadline of 2026-03-03 23:59 "
                                    "-05:00 (extension)")
    late = policy.assess(TEN_A_DAY, extension + timedelta(hours=1, minutes=5), extension)
    assert late.explanation == ("submitted 1 h 05 min after the deadline of 2026-03-03 23:59 "
                                "-05:00 (extension); 10% per day started, 1 day: -10%")


def test_after_the_hard_deadline_there_is_no_credit_unless_an_extension_reaches_past_it():
    hard = at("2026-03-03T23:59:00-05:00")
    rules = policy.Policy(DUE, policy.parse_late("10%/day"), hard)
    before = policy.assess(rules, hard)
    assert before.percent == 20.0
    after = policy.assess(rules, hard + timedelta(seconds=1))
    assert after.percent == 100.0
    assert "after the hard deadline of 2026-03-03 23:59 -05:00: no credit, -100%" in \
        after.explanation
    extended = policy.assess(rules, hard + timedelta(hours=1), at("2026-03-05T12:00:00-05:00"))
    assert extended.percent == 0.0


def test_a_time_zone_name_places_a_naive_deadline_and_a_day_is_24_hours_across_dst():
    # America/New_York springs forward on 2026-03-08: 23:59 on the 7th is -05:00, on the
    # 8th it is -04:00, and the two are 23 hours apart: one day started, not two.
    due = policy.parse_time("2026-03-07T23:59:00", NY, "--due")
    assert due.utcoffset() == timedelta(hours=-5)
    next_evening = policy.parse_time("2026-03-08T23:59:00", NY, "test")
    assert next_evening.utcoffset() == timedelta(hours=-4)
    assert next_evening.astimezone(UTC) - due == timedelta(hours=23)
    rules = policy.Policy(due, policy.parse_late("10%/day"))
    assert policy.assess(rules, next_evening).percent == 10.0
    assert policy.assess(rules, next_evening + timedelta(hours=1, seconds=1)).percent == 20.0
    # The deadline is shown in its own offset, the submission's zone does not matter.
    shown = policy.assess(rules, next_evening.astimezone(UTC))
    assert "the deadline of 2026-03-07 23:59 -05:00" in shown.explanation


def test_a_local_time_that_daylight_saving_skips_or_repeats_is_refused():
    with pytest.raises(UsageError, match=r"--due: 2026-03-08T02:30:00 does not exist in "
                                         r"America/New_York .*give the offset"):
        policy.parse_time("2026-03-08T02:30:00", NY, "--due")
    with pytest.raises(UsageError, match="happens twice in America/New_York"):
        policy.parse_time("2026-11-01T01:30:00", NY, "--due")


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("time", "2026-03-01T23:59:00", "has no offset; add one"),
    ("time", "tomorrow", "is not a date and time; write ISO 8601"),
    ("late", "10%", "start with a rate such as 10%/day"),
    ("late", "10%/day,cap=lots", "'cap=lots' is not an option"),
    ("late", "10%/day,grace=soon", "'soon' is not a duration"),
    ("late", "150%/day", "a percentage is at most 100"),
    ("zone", "Mars/Olympus", "is not a time zone"),
])
def test_bad_policies_are_usage_errors_that_say_the_fix(flag, value, message):
    parse = {"time": lambda v: policy.parse_time(v, None, "--due"),
             "late": policy.parse_late, "zone": policy.parse_zone}[flag]
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("%", "%")):
        parse(value)


def test_no_submission_time_means_no_penalty_and_says_so():
    assessed = policy.assess(TEN_A_DAY, None)
    assert assessed.percent == 0.0
    assert assessed.explanation.startswith("no submission time recorded")
