"""A ranking as the terminal shows it and as data (`--json`): pure functions of a `Ranking`."""

from __future__ import annotations

from typing import Any

from grader import text
from grader.similarity.score import Pair, Ranking

SCHEMA = "grader.similar/1"
NOT_A_VERDICT = ("A score is a lead for a human look, never a verdict: nothing here changes a "
                 "grade. Code the course handed out is subtracted, and shared fragments count "
                 "by rarity.")


def _rests(pair: Pair, threshold: float) -> str:
    return ", ".join(pair.rests_on(threshold)) or "no single exercise"


def terminal(ranking: Ranking, top: int) -> str:
    """The ranking's first `top` pairs, its clusters and who was not compared."""
    lines = [f"Similar submissions of {ranking.assignment}: {ranking.compared} students "
             f"compared, {ranking.pairs_scored} pairs share a rare fragment, "
             f"{len(ranking.flagged)} flagged at {ranking.threshold:g}.", NOT_A_VERDICT, ""]
    if not ranking.pairs:
        lines.append("No pair scores above the floor.")
    for rank, pair in enumerate(ranking.pairs[:top], start=1):
        flag = "  flagged" if pair.flagged else ""
        lines.append(f"{rank:>3}. {text.visible(pair.a)} ~ {text.visible(pair.b)}  "
                     f"score {pair.score:.3f}  rests on {_rests(pair, ranking.threshold)}{flag}")
    if len(ranking.pairs) > top:
        lines.append(f"     ... {len(ranking.pairs) - top} more (--top N)")
    if ranking.clusters:
        lines += ["", "Clusters of flagged pairs:"]
        lines += [f"  {', '.join(map(text.visible, c.students))} (highest {c.score:.3f})"
                  for c in ranking.clusters]
    if ranking.not_compared:
        lines += ["", "Not compared:"]
        lines += [f"  {text.visible(n.student)}: {text.visible(n.why)}"
                  for n in ranking.not_compared]
    return "\n".join(lines) + "\n"


def to_dict(ranking: Ranking) -> dict[str, Any]:
    """The ranking as plain data, schema "grader.similar/1": keys may be added, never removed
    or renamed."""
    return {
        "schema": SCHEMA, "assignment": ranking.assignment, "note": NOT_A_VERDICT,
        "compared": ranking.compared, "pairs_scored": ranking.pairs_scored,
        "threshold": ranking.threshold, "common": ranking.common,
        "pairs": [{"students": [p.a, p.b], "score": p.score, "shared": p.shared,
                   "flagged": p.flagged, "rests_on": list(p.rests_on(ranking.threshold)),
                   "exercises": [{"name": e.name, "score": e.score, "shared": e.shared}
                                 for e in p.exercises],
                   "fragments": [{"tokens": f.text, "writers": f.writers, "weight": f.weight}
                                 for f in p.fragments]}
                  for p in ranking.pairs],
        "clusters": [{"students": list(c.students), "score": c.score}
                     for c in ranking.clusters],
        "not_compared": [{"student": n.student, "why": n.why} for n in ranking.not_compared],
    }
