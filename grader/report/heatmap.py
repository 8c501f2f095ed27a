"""Geometry and colours of a heatmap, computed from an `ArrayView`; the template draws it.

Pure: numbers in, a plain description out. Colours follow a blue-white-red diverging scale
shared by the expected and obtained arrays, so that equal values look equal; mismatched
cells are outlined and marked in a corner, so that colour is never the only cue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.results import ArrayView

CELL = 40
FONT = 11
ROW_HEADER = 28  # room for the row numbers at the left
COLUMN_HEADER = 18  # and the column numbers on top
MAX_TEXT_COLUMNS = 10
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
class Header:
    """A row or column number at the edge of the matrix."""

    x: float
    """Anchor in pixels (the text is centred on it)."""
    y: float
    """Baseline in pixels."""
    text: str
    """The index, from 0 as Python counts."""


@dataclass(frozen=True)
class Heatmap:
    """One matrix, ready to draw."""

    title: str
    """For example "expected weights"."""
    width: int
    """In pixels, headers included."""
    height: int
    """In pixels, headers included."""
    cells: tuple[HeatCell, ...]
    """Row by row."""
    description: str
    """Text alternative: shape, range and which cells differ."""
    headers: tuple[Header, ...] = ()
    """Row and column numbers."""
    axes: str = ""
    """What rows and columns are, in words: "rows are queries, columns are keys"."""
    marks: str = ""
    """How differing cells are shown, or that every value differs."""
    cell: int = CELL
    """Side of a cell in pixels."""
    font: int = FONT
    """Font size of values and headers in pixels."""
    outline: bool = True
    """Whether differing cells are outlined (not when every cell differs: an outline on
    every cell would hide the colours and tell nothing)."""


def _mix(weight: float, colour: tuple[int, int, int]) -> tuple[int, int, int]:
    return tuple(round(255 + (c - 255) * weight) for c in colour)  # type: ignore[return-value]


def _ink(rgb: tuple[int, int, int]) -> str:
    r, g, b = (c / 255 for c in rgb)
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if luminance > 0.4 else "#ffffff"


def _short(value: float) -> str:
    """At most five characters, so that a value never runs into the next cell."""
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    size = abs(value)
    if size < 0.005:
        return "0"
    if size < 1:
        return f"{value:.2f}" if size < 0.995 else f"{value:.1f}"  # "-0.29": five at most
    if size < 9.95:
        return f"{value:.1f}"
    if size < 999.5:
        return f"{value:.0f}"
    return f"{value:.0e}".replace("e+0", "e").replace("e+", "e")


def _plural(word: str) -> str:
    if word.endswith("s"):
        return word
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def heatmap(values: np.ndarray, mismatched: np.ndarray, title: str, scale: float,
            rows_are: str = "row", columns_are: str = "column",
            reference: bool = False) -> Heatmap:
    """Draw one 2-D array on a colour scale from -scale to +scale, with its row and column
    numbers, and say what rows and columns are. The `reference` map (the expected values)
    marks no cell, and its description says which cells of the student's differ from it."""
    rows, cols = values.shape
    outline = bool(mismatched.any()) and not bool(mismatched.all()) and not reference
    cells = []
    for i in range(rows):
        for j in range(cols):
            value = float(values[i, j])
            if np.isfinite(value):
                amount = min(abs(value) / scale, 1.0) if scale > 0 else 0.0
                rgb = _mix(amount, POSITIVE if value >= 0 else NEGATIVE)
            else:
                rgb = (235, 235, 235)  # light, so that a dark "−∞" reads well
            cells.append(HeatCell(
                x=ROW_HEADER + j * CELL, y=COLUMN_HEADER + i * CELL,
                fill="#{:02x}{:02x}{:02x}".format(*rgb), ink=_ink(rgb),
                text=_short(value) if cols <= MAX_TEXT_COLUMNS else "",
                mismatched=bool(mismatched[i, j]) and outline,
                label=f"{rows_are} {i}, {columns_are} {j}: {_short(value)}"))
    headers = tuple(
        [Header(ROW_HEADER + j * CELL + CELL / 2, COLUMN_HEADER - 5, str(j)) for j in range(cols)]
        + [Header(ROW_HEADER / 2, COLUMN_HEADER + i * CELL + CELL / 2 + 4, str(i))
           for i in range(rows)])
    wrong = [f"({i}, {j})" for i, j in zip(*np.nonzero(mismatched), strict=True)]
    listed = ", ".join(wrong[:12]) + (" and more" if len(wrong) > 12 else "")
    finite = values[np.isfinite(values)]
    span = (f"values from {_short(float(finite.min()))} to {_short(float(finite.max()))}"
            if finite.size else "no finite values")
    axes = (f"rows are {_plural(rows_are)}, columns are {_plural(columns_are)}"
            if (rows_are, columns_are) != ("row", "column") else "")
    if reference:
        differ = (f"{len(wrong)} cell(s) of yours differ from it: {listed}." if wrong
                  else "Every cell of yours equals it.")
    else:
        differ = (f"{len(wrong)} cell(s) differ from the reference: {listed}." if wrong
                  else "No cell differs.")
    description = (f"{title}: a {rows} by {cols} matrix with {span}"
                   + (f"; {axes}" if axes else "") + ". " + differ)
    if not wrong or reference:
        marks = ""
    elif outline:
        marks = "outlined cells with a corner mark differ from the expected ones"
    else:
        marks = "every value differs from the expected one"
    return Heatmap(title, ROW_HEADER + cols * CELL, COLUMN_HEADER + rows * CELL, tuple(cells),
                   description, headers, axes, marks, outline=outline)


def pair(view: ArrayView) -> tuple[Heatmap, Heatmap]:
    """Expected and obtained on one shared colour scale, titled with the slice's index when
    the output has more than 2 dimensions ("expected weights [1, :, :]")."""
    both = np.concatenate([view.expected.ravel(), view.obtained.ravel()])
    finite = np.abs(both[np.isfinite(both)])
    scale = float(finite.max()) if finite.size else 1.0
    label = (view.label or "output") + (f" {view.index}" if view.index else "")
    return (heatmap(view.expected, view.mismatched, f"expected {label}", scale, view.rows,
                    view.columns, reference=True),
            heatmap(view.obtained, view.mismatched, f"your {label}", scale, view.rows,
                    view.columns))
