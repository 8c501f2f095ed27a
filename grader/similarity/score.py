"""Pairs and clusters of students ranked by how much rare code they share: a lead for a
human look, never a verdict.

The score of a pair is a rarity-weighted Dice coefficient of their fingerprints (the
template's subtracted): twice the weight of the fragments both wrote, over the weight of all
the fragments each wrote, every fragment weighed by `index.rarity` (1 for a fragment only they
wrote, 0 for one that `index.common` students wrote). Code the whole class shares thus counts
on neither side: two full copies score 1 whatever else the class wrote, and two honest
solutions that meet on the idioms everyone writes score little. The same score is taken per
exercise (its function and the helpers it calls); a pair "rests on" the exercises whose own
score reaches the threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from grader.similarity import index, winnow
from grader.similarity.index import Prints

THRESHOLD = 0.5
"""A pair scoring at least this is flagged (`--threshold`)."""
MIN_SHARED = 8.0
"""...if the rare fragments they share weigh at least this (about three statements): a
shorter copy is what anyone might write."""
FLOOR = 0.2
"""Pairs scoring less are not ranked at all."""
DECIMALS = 3


@dataclass(frozen=True)
class Line:
    """One source line of a flagged pair's code, as shown side by side."""

    cell: int
    """The 1-based code cell."""
    number: int
    """The line in that cell."""
    text: str
    """The line as written."""
    writers: int
    """How many students wrote the rarest shared fragment on it; 0 when none is on it."""


@dataclass(frozen=True)
class Side:
    """One student's code of a flagged pair: the definitions that hold shared fragments."""

    student: str
    """The student's name."""
    definitions: tuple[tuple[str, tuple[Line, ...]], ...]
    """(definition's name, its lines), in the order of the file."""


@dataclass(frozen=True)
class ExerciseScore:
    """A pair's score on one exercise."""

    name: str
    """The exercise."""
    score: float
    """The rarity-weighted Dice coefficient of its fingerprints, 0 to 1."""
    shared: float
    """The rarity-weighted count of fragments of it both wrote."""


@dataclass(frozen=True)
class Fragment:
    """A fingerprint two students share, and how common it is."""

    text: str
    """Its normalised tokens, as compared."""
    writers: int
    """How many students in the class wrote it."""
    weight: float
    """Its rarity weight, 0 to 1."""


@dataclass(frozen=True)
class Pair:
    """Two students, and what they share."""

    a: str
    """One student (the first by name)."""
    b: str
    """The other."""
    score: float
    """Over the whole submission, 0 to 1."""
    shared: float
    """The rarity-weighted count of fragments both wrote."""
    exercises: tuple[ExerciseScore, ...]
    """Every exercise both wrote, highest score first."""
    flagged: bool
    """Whether the score reaches the threshold on enough rare code."""
    fragments: tuple[Fragment, ...] = ()
    """The fragments they share, rarest first (flagged pairs only)."""
    sides: tuple[Side, ...] = ()
    """Both students' code with the shared lines marked (flagged pairs only)."""

    def rests_on(self, threshold: float) -> tuple[str, ...]:
        """The exercises whose own score reaches `threshold`."""
        return tuple(e.name for e in self.exercises if e.score >= threshold)


@dataclass(frozen=True)
class Cluster:
    """Students joined by flagged pairs."""

    students: tuple[str, ...]
    """Sorted."""
    score: float
    """The highest score of a flagged pair in it."""


@dataclass(frozen=True)
class NotCompared:
    """A student left out of the comparison, and why."""

    student: str
    """The student's name."""
    why: str
    """What stopped it (unreadable, past the limits, changed since it was graded)."""


@dataclass(frozen=True)
class Ranking:
    """The similarity of one class's submissions."""

    assignment: str
    """The assignment."""
    compared: int
    """Students compared."""
    pairs_scored: int
    """Candidate pairs the index proposed (pairs sharing a rare fragment); all other pairs
    share nothing rare and score 0."""
    threshold: float
    """The score that flags a pair."""
    common: int
    """Fragments written by this many students or more are no evidence."""
    pairs: tuple[Pair, ...]
    """Pairs scoring at least `FLOOR`, highest first."""
    clusters: tuple[Cluster, ...]
    """Groups of flagged pairs, largest and highest first."""
    not_compared: tuple[NotCompared, ...]
    """Students left out, by name."""

    @property
    def flagged(self) -> tuple[Pair, ...]:
        """The pairs that reach the threshold."""
        return tuple(pair for pair in self.pairs if pair.flagged)


def _dice(mine: frozenset[int], theirs: frozenset[int], weight: Mapping[int, float]
          ) -> tuple[float, float]:
    """(score, shared weight) of two sets of fingerprints."""
    both = sum(weight[h] for h in mine & theirs)
    total = sum(weight[h] for h in mine) + sum(weight[h] for h in theirs)
    return (2 * both / total if total else 0.0), both


def rank(assignment: str, everyone: Sequence[Prints], not_compared: Sequence[NotCompared],
         threshold: float = THRESHOLD) -> Ranking:
    """Score every pair that shares a rare fragment; rank, flag and cluster them."""
    writers = index.frequencies(everyone)
    most = index.common(len(everyone))
    weight = {h: index.rarity(n, most) for h, n in writers.items()}
    mass = [sum(weight[h] for h in student.whole) for student in everyone]
    shared = index.candidates(everyone, writers, most)
    pairs = []
    for (i, j), both in shared.items():
        total = mass[i] + mass[j]
        score = 2 * both / total if total else 0.0
        if score < FLOOR:
            continue
        a, b = sorted((everyone[i], everyone[j]), key=lambda s: s.student)
        exercises = []
        for name in a.exercises.keys() & b.exercises.keys():
            value, common_weight = _dice(a.exercises[name], b.exercises[name], weight)
            exercises.append(ExerciseScore(name, round(value, DECIMALS),
                                           round(common_weight, DECIMALS)))
        exercises.sort(key=lambda e: (-e.score, -e.shared, e.name))
        flagged = score >= threshold and both >= MIN_SHARED
        pair = Pair(a.student, b.student, round(score, DECIMALS), round(both, DECIMALS),
                    tuple(exercises), flagged)
        if flagged:
            pair = _shown(pair, a, b, writers, weight)
        pairs.append(pair)
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.a, p.b))
    return Ranking(assignment, len(everyone), len(shared), threshold, most, tuple(pairs),
                   _clusters(pairs), tuple(sorted(not_compared, key=lambda n: n.student)))


def _shown(pair: Pair, a: Prints, b: Prints, writers: Mapping[int, int],
           weight: Mapping[int, float]) -> Pair:
    """A flagged pair with its shared fragments and both sides' code."""
    both = [h for h in a.whole & b.whole if weight[h] > 0]
    both.sort(key=lambda h: (writers[h], h))
    fragments = []
    for value in both:
        number, position = a.where[value][0]
        tokens = a.definitions[number].tokens[position:position + winnow.K]
        fragments.append(Fragment(" ".join(t.text for t in tokens), writers[value],
                                  round(weight[value], DECIMALS)))
    return replace(pair, fragments=tuple(fragments),
                   sides=(_side(a, both, writers), _side(b, both, writers)))


def _side(student: Prints, shared: Sequence[int], writers: Mapping[int, int]) -> Side:
    """The definitions of a student that hold shared fragments, lines marked."""
    marks: dict[int, dict[tuple[int, int], int]] = {}
    for value in shared:
        for number, position in student.where.get(value, ()):
            tokens = student.definitions[number].tokens[position:position + winnow.K]
            lines = marks.setdefault(number, {})
            for token in tokens:
                key = (token.cell, token.line)
                lines[key] = min(lines.get(key, writers[value]), writers[value])
    definitions = []
    # The exercises in the assignment's order on both sides, then helpers as in the file: a
    # copy with its functions reordered still reads across.
    order = {name: place for place, name in enumerate(student.exercises)}
    for number in sorted(marks, key=lambda n: (order.get(student.definitions[n].name,
                                                         len(order)), n)):
        made = student.definitions[number]
        definitions.append((made.name, tuple(
            Line(made.cell, made.first_line + i, text,
                 marks[number].get((made.cell, made.first_line + i), 0))
            for i, text in enumerate(made.lines))))
    return Side(student.student, tuple(definitions))


def _clusters(pairs: Sequence[Pair]) -> tuple[Cluster, ...]:
    """Connected groups of flagged pairs (union-find)."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    best: dict[str, float] = {}
    for pair in pairs:
        if pair.flagged:
            parent[root(pair.a)] = root(pair.b)
    groups: dict[str, list[str]] = {}
    for name in list(parent):
        groups.setdefault(root(name), []).append(name)
    for pair in pairs:
        if pair.flagged:
            top = root(pair.a)
            best[top] = max(best.get(top, 0.0), pair.score)
    clusters = [Cluster(tuple(sorted(who)), best[top]) for top, who in groups.items()]
    clusters.sort(key=lambda c: (-len(c.students), -c.score, c.students))
    return tuple(clusters)
