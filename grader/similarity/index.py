"""Each student's fingerprints, how many students share each, and the pairs worth scoring.

An inverted index (fingerprint -> the students who have it) yields the candidate pairs: only
students who share a fragment are ever compared, never all pairs of files. A fragment that
more than `common` students wrote is no evidence (as MOSS's `-m` option ignores passages
found in more than m files, default 10), and it proposes no pair, which is what keeps a class
of 10,000 from turning into 50 million pairs.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from grader.similarity import winnow
from grader.similarity.tokens import Definition

COMMON_MIN = 10
"""A fragment that at least this many students wrote is no evidence (the floor of `common`)."""
COMMON_SHARE = 0.02
"""...nor one that this share of a large class wrote."""


@dataclass(frozen=True)
class Prints:
    """One student's fingerprints, with the template's subtracted."""

    student: str
    """The student's name."""
    definitions: tuple[Definition, ...]
    """Their top-level definitions, normalised."""
    where: Mapping[int, tuple[tuple[int, int], ...]]
    """Fingerprint -> (index in `definitions`, first token of its k-gram), each place."""
    exercises: Mapping[str, frozenset[int]]
    """Exercise -> the fingerprints of its function and the helpers it calls."""
    whole: frozenset[int]
    """All their fingerprints."""


def prints(student: str, definitions: Sequence[Definition], exercises: Iterable[str],
           given: set[int] | frozenset[int]) -> Prints:
    """A student's winnowed fingerprints, per definition and exercise, minus the template's."""
    where: dict[int, list[tuple[int, int]]] = defaultdict(list)
    own: list[set[int]] = []
    for number, made in enumerate(definitions):
        hashes = winnow.kgrams([winnow.token_id(t.text) for t in made.tokens])
        kept = {h for h, _ in winnow.winnow(hashes)} - given
        for position, value in enumerate(hashes):
            if value in kept:
                where[value].append((number, position))
        own.append(kept)
    by_name = {made.name: number for number, made in enumerate(definitions)}
    per_exercise = {}
    for name in exercises:
        if name in by_name:
            per_exercise[name] = frozenset().union(
                *(own[n] for n in _reached(by_name[name], definitions, by_name)))
    return Prints(student, tuple(definitions), {h: tuple(p) for h, p in where.items()},
                  per_exercise, frozenset().union(*own))


def _reached(start: int, definitions: Sequence[Definition], by_name: Mapping[str, int]
             ) -> set[int]:
    """The definition and every top-level helper it calls, directly or not."""
    seen, todo = {start}, [start]
    while todo:
        for name in definitions[todo.pop()].calls:
            number = by_name.get(name)
            if number is not None and number not in seen:
                seen.add(number)
                todo.append(number)
    return seen


def common(students: int) -> int:
    """How many students writing a fragment make it no evidence, in a class of this size."""
    return max(COMMON_MIN, math.ceil(students * COMMON_SHARE))


def rarity(writers: int, most: int) -> float:
    """The weight of a fragment that `writers` students wrote: 1 for a fragment of one or
    two students, falling with the log of how many wrote it (inverse document frequency) to
    0 at `most`."""
    if writers <= 2:
        return 1.0
    return max(0.0, math.log(most / writers) / math.log(most / 2))


def frequencies(everyone: Sequence[Prints]) -> Counter[int]:
    """Fingerprint -> how many students have it."""
    counts: Counter[int] = Counter()
    for student in everyone:
        counts.update(student.whole)
    return counts


def candidates(everyone: Sequence[Prints], writers: Mapping[int, int], most: int
               ) -> dict[tuple[int, int], float]:
    """(i, j) -> the rarity-weighted fragments students i < j share, for every pair that
    shares at least one fragment rarer than `most`."""
    index: dict[int, list[int]] = defaultdict(list)
    for number, student in enumerate(everyone):
        for value in student.whole:
            if writers[value] < most and writers[value] > 1:
                index[value].append(number)
    shared: dict[tuple[int, int], float] = defaultdict(float)
    for who in index.values():
        weight = rarity(len(who), most)
        for pair in combinations(who, 2):
            shared[pair] += weight
    return shared
