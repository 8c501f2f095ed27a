"""Cell errors across a class: the same exception and message, whoever's notebook raised it.

Pure: results in, groups out. A cell's message lists each failing statement
("line 3: TypeError: ...; line 9: ..."); each is one error. Two errors are the same when
their exception type and message agree once numbers are set aside (shapes and sizes differ
from notebook to notebook); the line is where it happened, not what it is, since students
add lines of their own, so the places are listed, not compared.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from grader.pipeline import hints
from grader.results import CellResult, CellStatus, Result

MAX_MESSAGE = 200


@dataclass(frozen=True)
class ErrorPlace:
    """Where in the notebook a group of cell errors happened."""

    where: str
    """The cell as a student counts them, "code cell 3", or "the module"."""
    line: int | None
    """The line in that cell, when the message says it."""
    students: int
    """How many students hit the error there."""


@dataclass(frozen=True)
class CellErrorGroup:
    """One error that several students' cells raised: the same exception and message, once
    numbers are set aside."""

    error: str
    """The exception's type ("TypeError"), or "Timeout" or "Crash"."""
    message: str
    """The message with numbers replaced by #, as grouped."""
    example: str
    """One student's message in full, line included."""
    names: tuple[str, ...]
    """The students who hit it, sorted."""
    places: tuple[ErrorPlace, ...]
    """Where, the most common place first."""
    hint: str
    """The known outside cause and its fix (NumPy 2's float() of an array), or empty."""

    @property
    def students(self) -> int:
        """How many students hit it."""
        return len(self.names)


_NOTE = re.compile(r"; (?=line \d+: )")
_LINE = re.compile(r"line (\d+): (.*)", re.S)
_EXCEPTION = re.compile(r"([A-Z][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))"
                        r": ?(.*)", re.S)
_GRADER_NOTES = re.compile(r"; (the grader ran the rest|the \d+ statement\(s\) after it|"
                           r"the cell did not run|only this statement was lost"
                           r"|execution went on).*$", re.S)
_SYNTAX_LINE = re.compile(r"\(line (\d+)\)")
# A number, but not one that is part of a word ("0-dimensional", "length-1", "float64").
_NUMBER = re.compile(r"\b0x[0-9a-fA-F]+\b|(?<![\w.-])\d+(?:\.\d+)?(?![\w-])")


def notes(message: str) -> list[tuple[int | None, str, str]]:
    """The errors in a cell's message, each as (line, exception type, message): a cell that
    went on after an error lists each failing statement, as "line 3: TypeError: ...; line 9:
    ...". Timeouts are "Timeout", lost interpreters "Crash"; skipped magics are no error."""
    found: list[tuple[int | None, str, str]] = []
    for part in _NOTE.split(message):
        matched = _LINE.match(part)
        line = int(matched.group(1)) if matched else None
        body = matched.group(2) if matched else part
        full = body
        body = _GRADER_NOTES.sub("", body)
        exception = _EXCEPTION.match(body)
        if exception:
            kind, text = exception.group(1), exception.group(2)
            syntax = _SYNTAX_LINE.search(text) if line is None else None
            line = int(syntax.group(1)) if syntax else line
        elif "stopped after" in full or "time limit" in full:
            kind, text = "Timeout", body
        elif "only this statement was lost" in full:
            kind, text = "Crash", body
        else:
            continue  # a skipped shell escape or magic, or a note of the grader's
        found.append((line, kind, text.strip()))
    return found


def _where(cell: CellResult) -> str:
    number, index = cell.number, cell.index
    where = f"code cell {number}" if number else "the module" if index else "the file"
    return f"{PurePath(cell.file).name}, {where}" if cell.file else where


def groups(results: Mapping[str, Result]) -> tuple[CellErrorGroup, ...]:
    """The errors in the cells of results (student -> result), grouped, the most frequent
    first."""
    students: dict[tuple[str, str], set[str]] = defaultdict(set)
    places: dict[tuple[str, str], Counter[tuple[str, int | None]]] = defaultdict(Counter)
    shown: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    examples: dict[tuple[str, str], str] = {}
    found_hint: dict[tuple[str, str], str] = {}
    for student, result in results.items():
        for cell in result.cells:
            if cell.status not in (CellStatus.ERROR, CellStatus.TIMEOUT, CellStatus.CRASHED):
                continue
            seen = set()
            for line, kind, text in notes(cell.message):
                hint = hints.NUMPY2_SCALAR if hints.NUMPY2_SCALAR in text else ""
                text = text.replace(f" ({hints.NUMPY2_SCALAR})", "")
                normal = _NUMBER.sub("#", text)[:MAX_MESSAGE]
                # NumPy's two wordings of the same float() failure are one group.
                key = (kind, hint or normal)
                if (key, line) in seen:
                    continue
                seen.add((key, line))
                if student not in students[key]:
                    places[key][(_where(cell), line)] += 1
                students[key].add(student)
                shown[key][normal] += 1
                found_hint[key] = hint
                at = f"line {line}: " if line is not None else ""
                examples.setdefault(key, f"{_where(cell)}, {at}{kind}: {text}"[:2 * MAX_MESSAGE])
    found = [CellErrorGroup(
        error=key[0], message=shown[key].most_common(1)[0][0], example=examples[key],
        names=tuple(sorted(who)),
        places=tuple(ErrorPlace(where, line, count)
                     for (where, line), count in places[key].most_common()),
        hint=found_hint[key]) for key, who in students.items()]
    found.sort(key=lambda g: (-g.students, g.error, g.message))
    return tuple(found)
