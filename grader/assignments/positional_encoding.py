"""Assignment `positional_encoding`: Positional encodings (numpy, rows are positions).

Declared by `grade assign` from solutions/positional_encoding_master.ipynb (the public cases
are the calls the master makes), then completed by hand: hidden cases, misconceptions,
properties.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grader.assignments import properties as prop
from grader.assignments.inputs import fixed, normal
from grader.assignments.variants import (
    QK_SWAPPED_ROWS,
    causal,
    hard_weights,
    misconception,
    rows_attention,
    uniform_weights,
)
from grader.assignments.variants import softmax as stable_softmax
from grader.model import PRACTICE_NOTE, Assignment, Case, Exercise, Visibility

PUBLIC = Visibility.PUBLIC
POSITION_ZERO = ("one position: position 0 is [0, 1, 0, 1, ...] whatever the frequencies, so "
                 "a wrong base cannot be told apart there; worth no points")
ONE_TOKEN = ("one token: checks that N = 1 works, worth no points, since any attention over a "
             "single token returns V")
FEATURES = {"output": ("position", "feature")}


def encoding(seq_len: int, d_model: int, *, base: float = 10000.0, start: int = 0,
             swap: bool = False, per_column: bool = False,
             wrong_axis: bool = False) -> np.ndarray:
    """Sinusoidal encodings with one mistake switched on by a keyword."""
    positions = np.arange(start, start + seq_len, dtype=float)[:, np.newaxis]
    columns = np.arange(d_model)
    pairs = columns - columns % 2  # 2i for both columns of pair i
    if wrong_axis:  # the loop's indices swapped: 2i / base^(pos / d_model)
        angles = pairs[np.newaxis, :] / np.power(base, positions / d_model)
    else:
        angles = positions / np.power(base, (columns if per_column else pairs) / d_model)
    even, odd = (np.cos, np.sin) if swap else (np.sin, np.cos)
    return np.where(columns % 2 == 0, even(angles), odd(angles))


# Each mistake of the encoding, as keywords of `encoding`: the three exercises share them.
ENCODING_MISTAKES: tuple[tuple[str, dict[str, object]], ...] = (
    ("sin-cos-swapped", {"swap": True}),
    ("wrong-exponent-base", {"base": 1000.0}),  # a zero dropped
    ("wrong-exponent-base", {"base": np.e}),  # exp(-2i/d) without the log(10000)
    ("exponent-per-column", {"per_column": True}),
    ("positions-from-one", {"start": 1}),
    ("frequency-wrong-axis", {"wrong_axis": True}),
)


def _encoded(mistake: dict[str, object]) -> Callable[[int, int], np.ndarray]:
    return lambda seq_len, d_model: encoding(seq_len, d_model, **mistake)  # type: ignore[arg-type]


def _added(mistake: dict[str, object]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda X: X + encoding(*X.shape, **mistake)  # type: ignore[arg-type]


def _attention(mistake: dict[str, object] | None = None, mask=causal, added: bool = True,
               **wrong: object):
    """causal_attention_with_positions with one mistake in its encoding or its attention."""

    def variant(X, W_q, W_k, W_v):
        H = X + encoding(*X.shape, **(mistake or {})) if added else X  # type: ignore[arg-type]
        return rows_attention(H @ W_q, H @ W_k, H @ W_v, mask(len(X)), **wrong)

    return variant


sinusoidal_encoding = Exercise(
    name="sinusoidal_encoding",
    signature="(seq_len, d_model)",
    points=2,
    axes=FEATURES,
    summary="The (seq_len, d_model) sinusoidal position encodings of Vaswani et al. (2017).",
    cases=(
        Case("notebook-example", fixed(4, 6), visibility=PUBLIC,
             note="the example in the notebook"),
        Case("notebook-example-2", fixed(50, 16), visibility=PUBLIC,
             note="the relative-position example in the notebook"),
        Case("practice", fixed(7, 10), seed=31, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("more-features-than-positions", fixed(5, 32)),
        Case("long-sequence", fixed(200, 8), note="positions up to 199"),
        Case("one-position", fixed(1, 8), scored=False, note=POSITION_ZERO),
    ),
    misconceptions=tuple(misconception(id, _encoded(mistake))
                         for id, mistake in ENCODING_MISTAKES),
)

add_positional_encoding = Exercise(
    name="add_positional_encoding",
    signature="(X)",
    points=1,
    axes=FEATURES,
    summary="The embeddings X (seq_len, d_model) with their position encodings added.",
    cases=(
        Case("notebook-example", fixed([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8],
                                        [0.9, 1.0, 1.1, 1.2]]), visibility=PUBLIC,
             note="the example in the notebook"),
        Case("practice", normal((5, 8)), seed=44, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("random", normal((6, 10)), seed=41),
        Case("more-positions", normal((12, 4)), seed=42),
        Case("one-position", normal((1, 6)), seed=43, scored=False, note=POSITION_ZERO),
    ),
    misconceptions=tuple(misconception(id, _added(mistake))
                         for id, mistake in ENCODING_MISTAKES),
    trivial=(("return the encoding alone", lambda X: encoding(*X.shape)),),
)

causal_attention_with_positions = Exercise(
    name="causal_attention_with_positions",
    signature="(X, W_q, W_k, W_v)",
    points=3,
    outputs=("weights", "output"),
    axes={"weights": ("query", "key"), "output": ("query", "feature")},
    summary="Causal scaled dot-product self-attention over X plus its position encodings.",
    cases=(
        Case("notebook-example", fixed(np.full((4, 4), 0.5), np.eye(4), np.eye(4), np.eye(4)),
             visibility=PUBLIC, note="the example in the notebook: four identical tokens"),
        Case("practice", normal((7, 10), (10, 5), (10, 5), (10, 2)), seed=54,
             visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("random", normal((5, 8), (8, 4), (8, 4), (8, 3)), seed=51,
             note="5 tokens, d_model=8, d_k=4 and d_v=3"),
        Case("longer", normal((9, 6), (6, 6), (6, 6), (6, 6)), seed=52),
        Case("one-token", normal((1, 4), (4, 4), (4, 4), (4, 4)), seed=53, scored=False,
             note=ONE_TOKEN),
    ),
    misconceptions=(
        misconception("positions-not-added", _attention(added=False)),
        *(misconception(id, _attention(mistake)) for id, mistake in ENCODING_MISTAKES),
        misconception("missing-scale", _attention(scale=1.0)),
        misconception("mask-includes-diagonal", _attention(
            mask=lambda n: np.triu(np.full((n, n), -np.inf), k=0))),
        misconception("mask-wrong-direction", _attention(
            mask=lambda n: np.tril(np.full((n, n), -np.inf), k=-1))),
        misconception("softmax-wrong-axis", _attention(
            norm=lambda s: stable_softmax(s, axis=-2))),
        misconception("transposed-weights", _attention(transpose=True)),
        misconception("qk-swapped", _attention(swap=True), QK_SWAPPED_ROWS),
    ),
    trivial=(("return V", lambda X, W_q, W_k, W_v: (
        np.eye(len(X)), (X + encoding(*X.shape)) @ W_v)),
             ("uniform attention", _attention(norm=uniform_weights)),
             ("hard attention (an argmax for the softmax)", _attention(norm=hard_weights))),
    properties=(prop.no_future(), prop.sums_to_one()),
)

ASSIGNMENT = Assignment(
    name="positional_encoding",
    title="Positional encodings (numpy, rows are positions)",
    exercises=(sinusoidal_encoding, add_positional_encoding, causal_attention_with_positions),
    layout="rows are positions, X and its encoding have shape (seq_len, d_model) and "
           "Q = (X + PE) @ W_q; the scores are Q @ K.T",
)
