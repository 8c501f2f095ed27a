"""Geometry and colours of a heatmap, computed from an `ArrayView`; the template draws it.

Pure: numbers in, a plain description out. Colours follow a blue-white-red diverging scale
shared by the expected and obtained arrays, so that equal values look equal; mismatched
cells are outlined and marked in a corner, so that colour is never the only cue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.model import ArrayView

CELL = 28
MAX_TEXT_COLUMNS = 8
NEGATIVE = (33, 102, 172)
POSITIVE = (178, 24, 43)


@dataclass(frozen=True)
class HeatCell:
    """One drawn cell."""

    x: int
    """Left edge in pixels."""
    y: int
    """Top edge in pixels."""
    fill: str
    """Background colour, "#rrggbb"."""
    ink: str
    """Text colour with enough contrast on `fill`."""
    text: str
    """The value, short; empty when the matrix is too wide to print values."""
    mismatched: bool
    """Outside tolerance."""
    label: str
    """"row 1, column 2: 0.25", for screen readers."""


@dataclass(frozen=True)
class Heatmap:
    """One matrix, ready to draw."""

    title: str
    """For example "expected weights"."""
    width: int
    """In pixels."""
    height: int
    """In pixels."""
    cells: tuple[HeatCell, ...]
    """Row by row."""
    description: str
    """Text alternative: shape, range and which cells differ."""


def _mix(weight: float, colour: tuple[int, int, int]) -> tuple[int, int, int]:
    return tuple(round(255 + (c - 255) * weight) for c in colour)  # type: ignore[return-value]


def _ink(rgb: tuple[int, int, int]) -> str:
    r, g, b = (c / 255 for c in rgb)
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if luminance > 0.4 else "#ffffff"


def _short(value: float) -> str:
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.2g}" if abs(value) < 100 else f"{value:.0f}"


def heatmap(values: np.ndarray, mismatched: np.ndarray, title: str, scale: float) -> Heatmap:
    """Draw one 2-D array on a colour scale from -scale to +scale."""
    rows, cols = values.shape
    cells = []
    for i in range(rows):
        for j in range(cols):
            value = float(values[i, j])
            if np.isfinite(value):
                amount = min(abs(value) / scale, 1.0) if scale > 0 else 0.0
                rgb = _mix(amount, POSITIVE if value >= 0 else NEGATIVE)
            else:
                rgb = (110, 110, 110)
            cells.append(HeatCell(
                x=j * CELL, y=i * CELL, fill="#{:02x}{:02x}{:02x}".format(*rgb), ink=_ink(rgb),
                text=_short(value) if cols <= MAX_TEXT_COLUMNS else "",
                mismatched=bool(mismatched[i, j]),
                label=f"row {i}, column {j}: {_short(value)}"))
    wrong = [f"({i}, {j})" for i, j in zip(*np.nonzero(mismatched), strict=True)]
    listed = ", ".join(wrong[:12]) + (" and more" if len(wrong) > 12 else "")
    finite = values[np.isfinite(values)]
    span = (f"values from {_short(float(finite.min()))} to {_short(float(finite.max()))}"
            if finite.size else "no finite values")
    description = (f"{title}: a {rows} by {cols} matrix with {span}. "
                   + (f"{len(wrong)} cell(s) differ from the reference: {listed}."
                      if wrong else "No cell differs."))
    return Heatmap(title, cols * CELL, rows * CELL, tuple(cells), description)


def pair(view: ArrayView) -> tuple[Heatmap, Heatmap]:
    """Expected and obtained on one shared colour scale."""
    both = np.concatenate([view.expected.ravel(), view.obtained.ravel()])
    finite = np.abs(both[np.isfinite(both)])
    scale = float(finite.max()) if finite.size else 1.0
    label = view.label or "output"
    no_marks = np.zeros_like(view.mismatched)
    return (heatmap(view.expected, no_marks, f"expected {label}", scale),
            heatmap(view.obtained, view.mismatched, f"your {label}", scale))
