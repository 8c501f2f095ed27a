"""What every student received, as k-grams to subtract before any comparison.

The released stubs (`exercises/<assignment>*.py` and `.ipynb`: signatures, docstrings, the
`raise NotImplementedError` line, and the functions the notebook gives ready-made, such as
the book's `softmax_cols`) are normalised exactly as a student's code is, and every k-gram of
every definition in them is collected. Those k-grams are removed from each student's
fingerprints first, so that code the course handed out is never evidence, however many
students kept it. The check data (`grade release`'s `.check.npz`) holds inputs and outputs,
no code: there is nothing of it to subtract.
"""

from __future__ import annotations

from collections.abc import Iterable

from grader.similarity import winnow
from grader.similarity.tokens import Definition


def kgrams(definitions: Iterable[Definition]) -> set[int]:
    """Every k-gram hash of some definitions (not only the winnowed ones: any student k-gram
    that the template has is the template's)."""
    found: set[int] = set()
    for made in definitions:
        found.update(winnow.kgrams([winnow.token_id(t.text) for t in made.tokens]))
    return found
