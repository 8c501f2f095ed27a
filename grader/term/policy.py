"""The time policy: the deadline that applies to a student, and the late penalty it brings.

It is computed at every export from the recorded submission time and never stored in the
raw score, so that changing the policy and exporting again changes the grades and nothing
else. The rules, chosen once:
- lateness is real elapsed time after the deadline (a day is 24 hours, also across a
  daylight-saving change); a submission exactly on the deadline is on time;
- a late policy is a percentage of the points the student earned, per hour or per day
  *started*: 1 second late is 1 unit, 24 h 1 s late is 2 days;
- a grace period forgives lateness up to its length; past it, units count from the
  deadline, not from the end of the grace period;
- the cap bounds the percentage; after the hard deadline there is no credit (-100%), and a
  student's extension later than the hard deadline moves it to the extension.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader import isotime, text
from grader.errors import UsageError

UNITS = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d)$")
_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class LatePolicy:
    """A percentage off per hour or day started, with a cap and a grace period."""

    percent: float
    """Percent of the earned points taken per unit started."""
    unit: str
    """"hour" or "day"."""
    cap: float | None = None
    """The most that is taken, in percent; None for no cap (at most 100)."""
    grace: timedelta = timedelta(0)
    """Lateness up to this is forgiven."""


@dataclass(frozen=True)
class Policy:
    """Everything that decides a student's penalty, but the student's own deadline."""

    due: datetime | None = None
    """The assignment's deadline (aware); None: no late policy at all."""
    late: LatePolicy | None = None
    """How lateness is charged; None: late work loses nothing (until `hard`)."""
    hard: datetime | None = None
    """No credit after this (aware), or None."""


@dataclass(frozen=True)
class Lateness:
    """How late a submission was, against which deadline, and what it costs."""

    deadline: datetime | None
    """The deadline that applied (the student's extension, or the assignment's)."""
    extended: bool
    """Whether it is an extension."""
    late_by: timedelta
    """Time after the deadline; zero when on time."""
    percent: float
    """Percent of the earned points taken off (0 to 100)."""
    explanation: str
    """One line: the deadline that applied and how the penalty was computed."""


def parse_zone(name: str | None) -> ZoneInfo | None:
    """An IANA time zone (`--timezone America/New_York`); a UsageError for an unknown one."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"--timezone {name!r} is not a time zone; give an IANA name such as "
                         "America/New_York or Europe/Paris") from None


def parse_time(value: str, zone: ZoneInfo | None, where: str) -> datetime:
    """An ISO 8601 date and time: with its offset, or local to `zone`. `where` names the
    flag or file and line in the error."""
    try:
        found = isotime.parse(value)
    except ValueError:
        raise UsageError(f"{where}: {value!r} is not a date and time; write ISO 8601 with an "
                         "offset, for example 2026-03-01T23:59:00-05:00") from None
    if found.tzinfo is not None:
        return found
    if zone is None:
        raise UsageError(f"{where}: {value!r} has no offset; add one "
                         "(2026-03-01T23:59:00-05:00) or pass --timezone America/New_York")
    first, second = found.replace(tzinfo=zone, fold=0), found.replace(tzinfo=zone, fold=1)
    if first.utcoffset() != second.utcoffset():
        back = first.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
        why = "does not exist" if back != found else "happens twice"
        raise UsageError(f"{where}: {value} {why} in {zone.key} (a daylight-saving change); "
                         "give the offset, for example "
                         f"{found.isoformat()}{_offset(first)}")
    return first


def parse_duration(value: str, where: str) -> timedelta:
    """`15m`, `2h`, `1d`, `30s`."""
    found = _DURATION.match(value.strip())
    if not found:
        raise UsageError(f"{where}: {value!r} is not a duration; write 30s, 15m, 2h or 1d")
    return timedelta(seconds=float(found.group(1)) * _SECONDS[found.group(2)])


def parse_late(value: str) -> LatePolicy:
    """`--late "10%/day,cap=50%,grace=15m"`."""
    where = f"--late {value!r}"
    rate, *options = [part.strip() for part in value.split(",")]
    found = re.match(r"^(\d+(?:\.\d+)?)%\s*(?:/|per\s+)(hour|day)$", rate)
    if not found:
        raise UsageError(f"{where}: start with a rate such as 10%/day or 2%/hour")
    cap, grace = None, timedelta(0)
    for option in options:
        name, _, setting = option.partition("=")
        if name == "cap" and re.match(r"^\d+(\.\d+)?%$", setting):
            cap = float(setting[:-1])
        elif name == "grace":
            grace = parse_duration(setting, where)
        else:
            raise UsageError(f"{where}: {option!r} is not an option; use cap=50% or grace=15m")
    percent = float(found.group(1))
    if percent > 100 or (cap is not None and cap > 100):
        raise UsageError(f"{where}: a percentage is at most 100")
    return LatePolicy(percent, found.group(2), cap, grace)


def assess(policy: Policy, submitted_at: datetime | None,
           extension: datetime | None = None) -> Lateness:
    """The lateness and penalty of one submission; `extension` replaces the due date."""
    deadline = extension or policy.due
    label = " (extension)" if extension else ""
    if deadline is None:
        return Lateness(None, False, timedelta(0), 0.0, "")
    shown = f"the deadline of {when(deadline)}{label}"
    if submitted_at is None:
        return Lateness(deadline, bool(extension), timedelta(0), 0.0,
                        f"no submission time recorded: no penalty against {shown}")
    # In UTC: Python subtracts and compares two times of one ZoneInfo by their wall clocks,
    # which would make the night of a daylight-saving change 24 hours long.
    submitted = _utc(submitted_at)
    late_by = max(submitted - _utc(deadline), timedelta(0))
    hard = policy.hard if policy.hard is None or extension is None else max(
        policy.hard, extension, key=_utc)
    if hard is not None and submitted > _utc(hard):
        return Lateness(deadline, bool(extension), late_by, 100.0,
                        f"submitted {duration(late_by)} after {shown}, after the hard "
                        f"deadline of {when(hard)}: no credit, -100%")
    if not late_by:
        return Lateness(deadline, bool(extension), late_by, 0.0,
                        f"submitted on time for {shown}")
    head = f"submitted {duration(late_by)} after {shown}"
    late = policy.late
    if late is None:
        return Lateness(deadline, bool(extension), late_by, 0.0, f"{head}; no late penalty")
    if late_by <= late.grace:
        return Lateness(deadline, bool(extension), late_by, 0.0,
                        f"{head}, within the {duration(late.grace)} grace period: no penalty")
    units = math.ceil(late_by / UNITS[late.unit])
    percent = min(late.percent * units, 100.0)
    rule = f"{text.points(late.percent)}% per {late.unit} started, {units} {late.unit}" \
           f"{'s' if units > 1 else ''}: -{text.points(percent)}%"
    if late.cap is not None and percent > late.cap:
        percent = late.cap
        rule += f", capped at -{text.points(late.cap)}%"
    return Lateness(deadline, bool(extension), late_by, percent, f"{head}; {rule}")


def when(moment: datetime) -> str:
    """`2026-03-01 23:59 -05:00`, in the moment's own offset (seconds only when set)."""
    clock = "%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M"
    return f"{moment.strftime(clock)} {_offset(moment)}"


def duration(span: timedelta) -> str:
    """`1 s`, `59 s`, `1 h 05 min`, `2 d 0 h 01 min`."""
    seconds = int(span.total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)} s" if span.total_seconds() == seconds else \
            f"{span.total_seconds():g} s"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h {minutes:02d} min"
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


def _offset(moment: datetime) -> str:
    offset = moment.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def student_times(path: Path, rows: Sequence[Sequence[str]], zone: ZoneInfo | None,
                  column: str, headers: Collection[str], example: str,
                  what: str) -> dict[str, datetime]:
    """A CSV of `student,<column>` lines (a first line whose second cell is one of `headers`
    is a header): student, in lower case -> the time. `--extensions` (`column` "due") and
    `--times` (`column` "submitted_at") read theirs here."""
    found: dict[str, datetime] = {}
    for line, cells in enumerate(rows, start=1):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != 2:
            raise UsageError(f"{path}: line {line}: write two cells, student,{column} (for "
                             f"example {example})")
        student, when = (cell.strip() for cell in cells)
        if line == 1 and when.lower() in headers:
            continue
        if student.lower() in found:
            raise UsageError(f"{path}: line {line}: {student} has {what} above already; keep "
                             "one line per student")
        found[student.lower()] = parse_time(when, zone, f"{path}: line {line}")
    return found
