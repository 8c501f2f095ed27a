"""Seeded input generators shared by the assignment declarations.

Each returns a function of a `numpy.random.Generator`, so that a case's inputs are rebuilt
identically from its seed whenever they are needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from grader.model import Inputs

Maker = Callable[[np.random.Generator], Inputs]


def normal(*shapes: Sequence[int], scale: float = 1.0) -> Maker:
    """Arrays of the given shapes with entries drawn from N(0, scale^2)."""

    def make(rng: np.random.Generator) -> Inputs:
        return tuple(rng.normal(size=tuple(shape)) * scale for shape in shapes)

    return make


def offset_normal(shape: Sequence[int], offset: float) -> Maker:
    """One array of the given shape: N(0, 1) entries plus `offset` times a random sign per
    row, so that values are large (exp() overflows) while a row's entries differ by about 1."""

    def make(rng: np.random.Generator) -> Inputs:
        values = rng.normal(size=tuple(shape))
        signs = rng.choice([-1.0, 1.0], size=(*tuple(shape)[:-1], 1))
        return (values + offset * signs,)

    return make


def fixed(*values: object) -> Maker:
    """The same literal inputs whatever the seed (used for the course notebooks' examples)."""

    def make(rng: np.random.Generator) -> Inputs:
        return tuple(np.array(v, dtype=float) if isinstance(v, list) else v for v in values)

    return make
