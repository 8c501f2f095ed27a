"""Seeded input generators shared by the assignment declarations.

A case's `make_inputs` is any function of a `numpy.random.Generator` that returns the tuple
of positional arguments; the makers here build such functions, so that a case's inputs are
rebuilt identically from its seed whenever they are needed.

- `normal(*shapes)`, `offset_normal`, `fixed(*values)`: float arrays, and literal values
  (lists become float arrays);
- `exactly(*values)`: the values as given (lists stay lists, integer arrays integer);
- one argument each: `floats(shape)`, `integers(shape, low, high)` (both ends included),
  `booleans(shape)`, `lower_triangular(shape)` (a causal mask), `size(name)`, and
  `weights({name: (shape, dtype)})` (a module's state_dict); each is a maker on its own too;
- `combined(*parts, sizes={...})`: the arguments of one call, each drawn by its maker, a plain
  value (`None`, `3`, `"text"`) kept as it is; a shape entry, a bound of `integers` or a
  `size` may name a size (`"batch"`, `"keys - 1"`), drawn once per case from `sizes`, so that
  arguments that share a size keep sharing it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.errors import SpecError
from grader.model import Inputs

Maker = Callable[[np.random.Generator], Inputs]
Dim = int | str
"""A size: a number, or the name of a size of `combined(sizes=...)`, maybe minus a number."""
_NAMED = re.compile(r"^(.+?)\s*([-+])\s*(\d+)$")


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
    """The same literal inputs whatever the seed (used for the course notebooks' examples);
    a list becomes a float array (`exactly` keeps it a list)."""

    def make(rng: np.random.Generator) -> Inputs:
        return tuple(np.array(v, dtype=float) if isinstance(v, list) else v for v in values)

    return make


def exactly(*values: object) -> Maker:
    """The very values whatever the seed: lists stay lists, arrays keep their dtype."""

    def make(rng: np.random.Generator) -> Inputs:
        return tuple(np.array(v) if isinstance(v, np.ndarray) else v for v in values)

    return make


def _resolve(dim: Dim, sizes: Mapping[str, int]) -> int:
    """A size's number: itself, or the named size drawn for this case (plus its offset)."""
    if not isinstance(dim, str):
        return int(dim)
    match = _NAMED.match(dim)
    name, sign, offset = (match.group(1), match.group(2), int(match.group(3))) if match \
        else (dim, "+", 0)
    if name not in sizes:
        known = ", ".join(repr(known) for known in sizes) or "none"
        raise SpecError(f"the size {name!r} is not declared (declared: {known}); wrap the "
                        f"makers in combined(..., sizes={{{name!r}: (low, high)}})")
    return sizes[name] + (offset if sign == "+" else -offset)


@dataclass(frozen=True)
class Argument:
    """The maker of one argument; called on a generator, the 1-tuple of it (a case's
    `make_inputs` on its own)."""

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        """The argument, with the sizes drawn for this case."""
        raise NotImplementedError

    def __call__(self, rng: np.random.Generator) -> Inputs:
        return (self.draw(rng, {}),)

    def _shape(self, shape: Sequence[Dim], sizes: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(_resolve(dim, sizes) for dim in shape)


@dataclass(frozen=True)
class _Floats(Argument):
    shape: tuple[Dim, ...]
    scale: float
    dtype: str

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        values = rng.normal(size=self._shape(self.shape, sizes)) * self.scale
        return values.astype(self.dtype)


@dataclass(frozen=True)
class _Integers(Argument):
    shape: tuple[Dim, ...]
    low: Dim
    high: Dim
    dtype: str

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        high = _resolve(self.high, sizes)
        low = min(_resolve(self.low, sizes), high)
        return rng.integers(low, high, size=self._shape(self.shape, sizes), dtype=self.dtype,
                            endpoint=True)


@dataclass(frozen=True)
class _Booleans(Argument):
    shape: tuple[Dim, ...]
    p: float
    each_row: bool = False

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        drawn = rng.random(self._shape(self.shape, sizes)) < self.p
        if self.each_row and drawn.ndim and drawn.shape[-1]:
            empty = ~drawn.any(axis=-1)
            pick = rng.integers(0, drawn.shape[-1], size=empty.shape)
            drawn[..., :][empty, pick[empty]] = True
        return drawn


@dataclass(frozen=True)
class _LowerTriangular(Argument):
    shape: tuple[Dim, ...]

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        shape = self._shape(self.shape, sizes)
        return np.broadcast_to(np.tril(np.ones(shape[-2:], dtype=bool)), shape).copy()


@dataclass(frozen=True)
class _Weights(Argument):
    shapes: Mapping[str, tuple[tuple[Dim, ...], str]]

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        state = {}
        for name, (dims, dtype) in self.shapes.items():
            shape = self._shape(dims, sizes)
            if np.dtype(dtype).kind != "f":  # a counter such as num_batches_tracked
                state[name] = np.zeros(shape, dtype=dtype)
            elif len(shape) >= 2:
                state[name] = (rng.normal(size=shape) / np.sqrt(shape[-1])).astype(dtype)
            elif name.endswith("weight"):  # a norm's gain
                state[name] = (1 + 0.1 * rng.normal(size=shape)).astype(dtype)
            else:
                state[name] = (0.1 * rng.normal(size=shape)).astype(dtype)
        return state


@dataclass(frozen=True)
class _Size(Argument):
    name: str

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
        return _resolve(self.name, sizes)


def floats(shape: Sequence[Dim], scale: float = 1.0, dtype: str = "float64") -> Argument:
    """One float array of the shape, entries drawn from N(0, scale^2)."""
    return _Floats(tuple(shape), scale, dtype)


def integers(shape: Sequence[Dim], low: Dim, high: Dim, dtype: str = "int64") -> Argument:
    """One integer array of the shape, entries drawn from low..high, both included (a bound
    may name a size: `integers(("batch",), 1, "keys")` for valid lengths)."""
    return _Integers(tuple(shape), low, high, dtype)


def booleans(shape: Sequence[Dim], p: float = 0.5, each_row: bool = False) -> Argument:
    """One boolean array of the shape, each entry True with probability p; with `each_row`,
    each row (along the last axis) holds at least one True: a mask under which every query
    sees some key."""
    return _Booleans(tuple(shape), p, each_row)


def lower_triangular(shape: Sequence[Dim]) -> Argument:
    """One boolean array of the shape whose last two axes are a lower triangle, diagonal
    included (a causal mask: query i sees keys 0..i), repeated over the leading axes."""
    return _LowerTriangular(tuple(shape))


def weights(shapes: Mapping[str, tuple[Sequence[Dim], str]]) -> Argument:
    """A module's state_dict: `{parameter name: (shape, dtype)}`, each float parameter drawn
    as PyTorch would scale it (a matrix N(0, 1/fan_in), a bias N(0, 0.01), a 1-D weight
    1 + N(0, 0.01)), any other (a counter) zeros. The first input of a class's case."""
    return _Weights({name: (tuple(shape), dtype) for name, (shape, dtype) in shapes.items()})


def size(name: str) -> Argument:
    """An int argument equal to a size of `combined(sizes=...)` (`"heads"`, `"keys - 1"`)."""
    return _Size(name)


def _draw(part: Any, rng: np.random.Generator, sizes: Mapping[str, int]) -> Any:
    """One argument: drawn by its maker, a tuple or list of them drawn item by item, or a
    plain value as it is."""
    if isinstance(part, Argument):
        return part.draw(rng, sizes)
    if type(part) in (tuple, list) and any(isinstance(p, Argument | tuple | list)
                                           for p in part):
        return type(part)(_draw(p, rng, sizes) for p in part)
    return np.array(part) if isinstance(part, np.ndarray) else part


def _size(rng: np.random.Generator, spec: int | tuple[int, ...]) -> int:
    """A size drawn from its declaration: a number, (low, high) or (low, high, step)."""
    if not isinstance(spec, tuple):
        return int(spec)
    low, high, step = (*spec, 1)[:3]
    return int(low + step * rng.integers(0, (high - low) // step, endpoint=True))


def combined(*parts: Any, sizes: Mapping[str, int | tuple[int, ...]] | None = None) -> Maker:
    """The arguments of one call: each part is an argument's maker (`floats`, `integers`,
    `booleans`, `size`), a maker of several (`normal(...)`, spliced in), or a value kept as it
    is (`None`, a number, a string). `sizes` maps a name to a number, to (low, high) or to
    (low, high, step), drawn once per case, both ends included; shapes and bounds that name
    it share it."""
    declared = dict(sizes or {})

    def make(rng: np.random.Generator) -> Inputs:
        drawn = {name: _size(rng, spec) for name, spec in declared.items()}
        args: list[Any] = []
        for part in parts:
            if callable(part) and not isinstance(part, Argument):
                args.extend(part(rng))
            else:
                args.append(_draw(part, rng, drawn))
        return tuple(args)

    return make
