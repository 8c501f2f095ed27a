"""The class report: pure functions from a `ClassReport` to HTML, Markdown and JSON.

Student names appear only inside `<details>` on the page (and in the JSON), so that the page
can be projected in class without them.
"""

from __future__ import annotations

import json
from typing import Any

from grader.classreport import charts, stats
from grader.classreport.stats import ClassReport
from grader.report.render import environment
from grader.similarity import shown

SCHEMA = "grader.class/1"


def _percent(share: float | None) -> str:
    """A share as a whole percentage, "—" when there is none."""
    return "—" if share is None else f"{100 * share:.0f}%"


def _render(template: str, report: ClassReport) -> str:
    return environment().get_template(template).render(
        report=report, percent=_percent, histogram=charts.histogram,
        distribution=charts.distribution, nearly=stats.NEARLY,
        min_flagged=stats.MIN_FLAGGED, min_nodes=stats.MIN_SIMILAR_NODES,
        not_a_verdict=shown.NOT_A_VERDICT)


def html(report: ClassReport) -> str:
    """One self-contained page: inline SVG, no script, nothing fetched."""
    return _render("class.html.j2", report)


def markdown(report: ClassReport) -> str:
    """The same in GitHub-flavoured Markdown."""
    return _render("class.md.j2", report)


def to_dict(report: ClassReport) -> dict[str, Any]:
    """The numbers as plain data, schema "grader.class/1": keys may be added, never removed
    or renamed. "misconceptions" are the class's own mistakes (scored checks of the students'
    own code); "advice" the diagnoses from the notebook's given code or unscored checks."""
    return {
        "schema": SCHEMA, "assignment": report.assignment, "submissions": report.submissions,
        "graded": report.graded, "max_score": report.max_score, "mean": report.mean,
        "median": report.median,
        "scores": [{"student": s.student, "score": s.score, "max_score": s.max_score,
                    "status": s.status.value, "submission": s.submission, "error": s.error}
                   for s in report.scores],
        "histogram": [{"low": b.low, "high": b.high, "count": b.count}
                      for b in report.histogram],
        "exercises": [{"name": e.name, "pass_rate": e.pass_rate, "mean_score": e.mean_score,
                       "max_score": e.max_score, "graded": e.graded, "attempted": e.attempted,
                       "passed": e.passed, "late": e.late,
                       "distribution": [{"points": p, "students": n}
                                        for p, n in e.distribution]}
                      for e in report.exercises],
        "cases": [{"exercise": c.exercise, "case": c.case, "pass_rate": c.pass_rate,
                   "flag": c.flag.value if c.flag else None, "visibility": c.visibility.value,
                   "scored": c.scored, "attempted": c.attempted, "passed": c.passed}
                  for c in report.cases],
        "misconceptions": [{"id": m.id, "exercise": m.exercise, "students": m.students,
                            "names": list(m.names), "share": m.share,
                            "explanation": m.explanation} for m in report.misconceptions],
        "advice": [{"id": a.id, "exercise": a.exercise, "source": a.source.value,
                    "students": a.students, "names": list(a.names), "share": a.share,
                    "explanation": a.explanation} for a in report.advice],
        "cell_errors": [{"error": g.error, "message": g.message, "students": g.students,
                         "names": list(g.names), "example": g.example, "hint": g.hint,
                         "places": [{"where": p.where, "line": p.line, "students": p.students}
                                    for p in g.places]} for g in report.cell_errors],
        "similar": [{"names": list(g.names), "exercises": list(g.exercises), "nodes": g.nodes}
                    for g in report.similar],
        "fingerprinted": report.fingerprinted, "provided": list(report.provided),
        "similarity": (shown.to_dict(report.similarity) if report.similarity else None),
    }


def render_json(report: ClassReport) -> str:
    """The numbers as a JSON document."""
    return json.dumps(to_dict(report), indent=2)
