"""Geometry of the class report's bar charts, computed from counts; the template draws them.

Pure: numbers in, a plain description out, as `heatmap` does for arrays. Each bar carries its
count as text, so that the chart reads without colour and on a projector; the text
alternative says every count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grader.classreport.stats import Bin

LEFT = 8
BOTTOM = 34  # room for the labels under the bars and the axis title
TOP = 20  # room for the count above the tallest bar
FONT = 12


@dataclass(frozen=True)
class Bar:
    """One drawn bar."""

    x: float
    """Left edge in pixels."""
    y: float
    """Top edge in pixels."""
    width: float
    """In pixels."""
    height: float
    """In pixels (0 for an empty bar, which shows its 0 only)."""
    count: int
    """The number it stands for, written above it."""
    label: str
    """What it counts, written under it ("4–5")."""


@dataclass(frozen=True)
class Chart:
    """A bar chart, ready to draw."""

    title: str
    """For example "Scores"."""
    width: int
    """In pixels."""
    height: int
    """In pixels."""
    bars: tuple[Bar, ...]
    """Left to right."""
    baseline: float
    """The y of the axis the bars stand on."""
    axis: str
    """What the labels under the bars are, written under them."""
    description: str
    """Text alternative: every bar's label and count."""
    font: int = FONT
    """Font size in pixels."""


def _points(value: float) -> str:
    return f"{value:.4g}"


def bars(title: str, labels: Sequence[str], counts: Sequence[int], axis: str,
         width: int = 560, height: int = 200) -> Chart:
    """Bars of `counts`, labelled, scaled so that the largest fills the height."""
    slot = (width - 2 * LEFT) / max(len(counts), 1)
    baseline = height - BOTTOM
    tallest = max(counts, default=0) or 1
    drawn = tuple(Bar(x=LEFT + i * slot + slot * 0.1, y=baseline - count / tallest *
                      (baseline - TOP), width=slot * 0.8,
                      height=count / tallest * (baseline - TOP), count=count, label=label)
                  for i, (label, count) in enumerate(zip(labels, counts, strict=True)))
    said = "; ".join(f"{label}: {count}" for label, count in zip(labels, counts, strict=True))
    return Chart(title, width, height, drawn, baseline, axis,
                 f"{title}, how many students per {axis}: {said or 'none'}.")


def histogram(bins: Sequence[Bin]) -> Chart:
    """The score distribution."""
    labels = [f"{_points(b.low)}–{_points(b.high)}" if b.high > b.low else _points(b.low)
              for b in bins]
    return bars("Scores", labels, [b.count for b in bins], "score (points)", width=640,
                height=240)


def distribution(name: str, points: Sequence[tuple[float, int]]) -> Chart:
    """How many students earned each number of points on one exercise."""
    return bars(f"Points on {name}", [_points(p) for p, _ in points],
                [count for _, count in points], "points", width=max(120, 44 * len(points)),
                height=96)
