"""Similar submissions: pairs and clusters of students ranked by the rare code they share.

Template-aware (`template`: what the course handed out is subtracted), rename-proof
(`tokens`: names, docstrings, comments, prints and layout normalised away), by fragments
(`winnow`: winnowed k-grams, the method behind MOSS), at scale (`index`: only students who
share a rare fragment are compared) and weighed by rarity (`score`). The files come from
`sources`; everything else is pure. A score is a lead for a human look, never a verdict:
nothing here changes a grade.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from grader.course import registry
from grader.gradebook import Row
from grader.gradebook.origins import Origin
from grader.similarity import index, sources, template
from grader.similarity.score import (
    THRESHOLD,
    Cluster,
    ExerciseScore,
    Fragment,
    Line,
    NotCompared,
    Pair,
    Ranking,
    Side,
    rank,
)
from grader.similarity.tokens import Definition

__all__ = ["THRESHOLD", "Cluster", "ExerciseScore", "Fragment", "Line", "NotCompared", "Pair",
           "Ranking", "Side", "compare", "of_batch", "rank"]


def compare(assignment: str, students: Sequence[tuple[str, Sequence[Definition]]],
            given: Sequence[Definition], exercises: Iterable[str],
            not_compared: Sequence[NotCompared] = (), threshold: float = THRESHOLD
            ) -> Ranking:
    """Rank the pairs of a class: each student's definitions, the template's definitions
    (subtracted), the assignment's exercise names. Pure."""
    names = tuple(exercises)
    subtract = template.kgrams(given)
    everyone = []
    left = list(not_compared)
    for student, own in students:
        prints = index.prints(student, own, names, subtract)
        if prints.whole:
            everyone.append(prints)
        else:
            left.append(NotCompared(student, "wrote nothing beyond the template to compare"))
    return rank(assignment, everyone, left, threshold)


def of_batch(assignment: str, rows: Sequence[Row], origin: Origin, stubs: Path,
             threshold: float = THRESHOLD) -> Ranking:
    """The ranking of the students a batch graded: their files found again where it read
    them (`origin`), the stubs in `stubs` subtracted, the assignment's exercises named."""
    exercises = [e.name for e in registry.get(assignment).exercises]
    given = sources.stubs(assignment, stubs)
    students, left = sources.read_class([r for r in rows if r.assignment == assignment],
                                        origin)
    return compare(assignment, students, given, exercises, left, threshold)
