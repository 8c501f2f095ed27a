"""Submission times from a file, for the downloads that carry none (Canvas, Moodle):
`grade batch --times FILE`.

Two formats, told apart by the header:
- Moodle's grading worksheet (Assignment > Submissions > "Download grading worksheet"):
  `Identifier` holds "Participant 123", the participant id of the submissions download, and
  `Last modified (submission)` the time in Moodle's English format, "Monday, 2 March 2026,
  11:05 PM", in the time zone of the account that downloaded it (to the minute; "-" when
  nothing was handed in). It carries no offset, so `--timezone` is required, and a time that a
  daylight-saving change repeats or skips is refused.
- A plain CSV of `student,submitted_at` (ISO 8601 with its offset, or local to `--timezone`),
  for any platform, e.g. built from Canvas's submissions API (`user_id`, `submitted_at`).

A student is matched to a download's student by its key, any of its platform ids, or its
name as the platform shows it, case-insensitively. A time in the file replaces the one the
download gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

from grader.batch.jobs import Job
from grader.errors import UsageError
from grader.ingest.handed import PERSON_IDS
from grader.term import policy, roster

MOODLE_ID, MOODLE_TIME = "Identifier", "Last modified (submission)"
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MOODLE_WHEN = re.compile(r"^(?P<day>[A-Za-z]+), (?P<date>\d{1,2}) (?P<month>[A-Za-z]+) "
                          r"(?P<year>\d{4}), (?P<hour>\d{1,2}):(?P<minute>\d{2}) "
                          r"(?P<half>AM|PM|am|pm)$")
_PARTICIPANT = re.compile(r"^Participant (\d+)$")
NOT_HANDED_IN = ("", "-")


@dataclass(frozen=True)
class Times:
    """A times file, read."""

    path: Path
    """Where it was read from."""
    kind: Literal["moodle", "plain"]
    """Moodle's grading worksheet, or `student,submitted_at`."""
    at: dict[str, datetime]
    """Student (lower case: a Moodle participant id, or the plain file's first cell) -> the
    time (aware)."""

    def match(self, student: str, aliases: Sequence[str]) -> str | None:
        """The file's name for a download's student, known by its key or any of `aliases`
        (its platform ids and name), or None when the file does not name them."""
        for name in (student, *aliases):
            if name and name.strip().lower() in self.at:
                return name.strip().lower()
        return None


def read(path: Path, zone: ZoneInfo | None) -> Times:
    """Read a times file; a UsageError names the file, the line and the fix."""
    rows = roster.csv_rows(path, "Moodle's grading worksheet or a CSV of student,submitted_at")
    header = [cell.strip() for cell in rows[0]] if rows else []
    if MOODLE_ID in header and MOODLE_TIME in header:
        return Times(Path(path), "moodle", _moodle(path, header, rows[1:], zone))
    if len(header) == 2:
        return Times(Path(path), "plain", _plain(path, rows, zone))
    raise UsageError(f"{path}: line 1: neither Moodle's grading worksheet (columns "
                     f"{MOODLE_ID!r} and {MOODLE_TIME!r}) nor two columns student,submitted_at"
                     "; download the worksheet from the assignment's Submissions page, or write "
                     "lines such as 1001,2026-03-02T23:05:00-05:00")


def _moodle(path: Path, header: list[str], rows: list[list[str]],
            zone: ZoneInfo | None) -> dict[str, datetime]:
    who, when = header.index(MOODLE_ID), header.index(MOODLE_TIME)
    found: dict[str, datetime] = {}
    for line, cells in enumerate(rows, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise UsageError(f"{path}: line {line}: {len(cells)} cells where the header has "
                             f"{len(header)}; download the grading worksheet again")
        participant = _PARTICIPANT.match(cells[who].strip())
        if participant is None:
            raise UsageError(f"{path}: line {line}: {MOODLE_ID} {cells[who].strip()!r} is not "
                             "'Participant <number>'; download the grading worksheet again")
        value = cells[when].strip()
        if value in NOT_HANDED_IN:
            continue
        if zone is None:
            raise UsageError(f"{path}: Moodle's worksheet gives times without a time zone; "
                             "pass --timezone, the zone of the Moodle account that downloaded "
                             "it (for example --timezone Europe/London)")
        found[participant.group(1)] = moodle_time(value, zone, f"{path}: line {line}")
    return found


def moodle_time(value: str, zone: ZoneInfo, where: str) -> datetime:
    """"Monday, 2 March 2026, 11:05 PM", local to `zone`; refused when it does not say one
    moment (a daylight-saving change skips or repeats it) or names a wrong weekday."""
    found = _MOODLE_WHEN.match(value)
    month = found.group("month").capitalize() if found else ""
    if found is None or month not in MONTHS:
        raise UsageError(f"{where}: {value!r} is not a time as Moodle writes it in English "
                         "('Monday, 2 March 2026, 11:05 PM'); download the worksheet with "
                         "the site's language set to English")
    hour = int(found.group("hour")) % 12 + (12 if found.group("half").upper() == "PM" else 0)
    try:
        local = datetime(int(found.group("year")), MONTHS.index(month) + 1,
                         int(found.group("date")), hour, int(found.group("minute")))
    except ValueError:
        raise UsageError(f"{where}: {value!r} is not a date; download the worksheet "
                         "again") from None
    if DAYS[local.weekday()] != found.group("day").capitalize():
        raise UsageError(f"{where}: {value!r}: {local:%d %B %Y} is a "
                         f"{DAYS[local.weekday()]}; download the worksheet again")
    try:
        return policy.parse_time(local.isoformat(), zone, where)
    except UsageError:  # it names no offset to add: the worksheet has none to give
        raise UsageError(f"{where}: {value!r} is ambiguous in {zone.key}: a daylight-saving "
                         "change skips or repeats that hour, and the worksheet does not say "
                         "which was meant; give this student's time with its offset in a "
                         "plain times file (student,submitted_at)") from None


def _plain(path: Path, rows: list[list[str]], zone: ZoneInfo | None) -> dict[str, datetime]:
    return policy.student_times(path, rows, zone, "submitted_at",
                                ("submitted_at", "submitted", "time", "when"),
                                "1001,2026-03-02T23:05:00-05:00", "a time")


def given(found: Sequence[Job], times: Times) -> tuple[list[Job], list[str]]:
    """A batch's jobs with the file's times (theirs replaced), and what to say about it."""
    used: set[str] = set()
    timed: list[Job] = []
    for job in found:
        aliases = [value for key, value in job.ids if key in PERSON_IDS]
        key = times.match(job.student, [*aliases, job.display_name])
        if key is not None:
            used.add(key)
            job = replace(job, submitted_at=times.at[key])
        timed.append(job)
    lines = [f"times: {len(used)} of {len(found)} students given a submission time by "
             f"{times.path}"]
    lines += [f"times: {times.path} names {name}, who is not in this download"
              for name in sorted(set(times.at) - used)]
    return timed, lines

