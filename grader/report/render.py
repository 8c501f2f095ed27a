"""The Jinja2 environment of the reports: templates ship inside the package."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from grader import __version__, text
from grader.model import Visibility
from grader.report import heatmap
from grader.report.advice import handed_in, is_tip, label, parts
from grader.results import CheckResult, ExerciseResult, Result, ResultStatus

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#])")


def md_escape(value: object) -> str:
    """Untrusted text made inert inside a line of Markdown (a table cell, after a label): on
    one line, so that it never starts a block, and with no markup, no HTML, no table breaks."""
    return _MD_SPECIAL.sub(r"\\\1", text.one_line(str(value)))


def fence(value: object) -> str:
    """A code fence longer than any run of backticks inside the text."""
    runs = [len(run) for run in re.findall(r"`+", str(value))]
    return "`" * max(3, max(runs, default=0) + 1)


@dataclass(frozen=True)
class Failure:
    """Failing checks of one exercise that fail the same way, said once."""

    check: CheckResult
    """The one shown in full: a public one when there is one, since it may show details."""
    also: tuple[CheckResult, ...]
    """The others that fail the same way, named."""
    own: tuple[CheckResult, ...] = ()
    """Those of `also` whose own message says more than the one shown (other values, or a
    hidden check's details once they are due), shown on request."""
    tip: bool = False
    """They are advice, worth no points (`is_tip`): drawn as a tip, not as a failure."""

    @property
    def label(self) -> str:
        """What the diagnosis box is headed (`label`)."""
        return label(self.check, self.tip)


def failures(exercise: ExerciseResult, hidden_shown: bool = False) -> tuple[Failure, ...]:
    """The failing checks of an exercise, grouped by what went wrong: the same diagnosis, or
    with none, the same status and message. Fifteen "not written yet" boxes become one.
    Failures come first, then tips (`is_tip`), each group all one or all the other.
    `hidden_shown`: hidden checks' messages hold their details (after show_hidden_after)."""
    groups: dict[tuple[object, ...], list[CheckResult]] = {}
    for check in exercise.checks:
        if check.passed:
            continue
        key: tuple[object, ...] = ((is_tip(exercise, check), check.diagnosis.id, check.status)
                                   if check.diagnosis
                                   else (is_tip(exercise, check), None, check.status,
                                         check.message))
        groups.setdefault(key, []).append(check)
    found = []
    for (tip, *_), checks in groups.items():
        lead = next((c for c in checks if c.visibility is Visibility.PUBLIC), checks[0])
        also = tuple(c for c in checks if c is not lead)
        own = tuple(c for c in also if c.message and c.message != lead.message
                    and (hidden_shown or c.visibility is Visibility.PUBLIC))
        found.append(Failure(lead, also, own, bool(tip)))
    return tuple(sorted(found, key=lambda failure: failure.tip))  # failures first, then tips


def cautions(exercise: ExerciseResult) -> tuple[str, ...]:
    """The warning about how its checks passed (`ExerciseResult.caution`), once or none."""
    return (exercise.caution,) if exercise.caution else ()


@cache
def environment() -> Environment:
    """Templates with autoescaping for HTML and undefined names as errors."""
    env = Environment(loader=PackageLoader("grader", "templates"),
                      autoescape=select_autoescape(["html", "html.j2", "svg.j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    env.filters["md"] = md_escape
    env.filters["fence"] = fence
    env.filters["basename"] = lambda value: PurePath(str(value)).name
    env.filters["points"] = lambda value: f"{value:.4g}"
    env.globals.update(version=__version__, ResultStatus=ResultStatus, pair=heatmap.pair,
                       failures=failures, cautions=cautions, is_tip=is_tip, parts=parts,
                       handed_in=handed_in)
    return env


def render(template: str, result: Result, **extra: object) -> str:
    """Render a report template for one result, every string of it `clean`ed first."""
    return environment().get_template(template).render(result=text.clean_fields(result),
                                                       **extra)
