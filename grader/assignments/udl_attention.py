"""Assignment `udl_attention`: self-attention as in "Understanding Deep Learning" (seed 002).

Columns are tokens: X has shape (D, N).
"""

from __future__ import annotations

import numpy as np

from grader.assignments import properties as prop
from grader.assignments.inputs import normal
from grader.assignments.variants import (
    COLUMNS,
    LARGE,
    MATRIX,
    QK_SWAPPED_COLUMNS,
    cols_attention,
    hard_weights,
    misconception,
    naive_softmax,
    uniform_weights,
    whole_softmax,
)
from grader.assignments.variants import (
    softmax as stable_softmax,
)
from grader.model import PRACTICE_NOTE, Assignment, Case, Exercise, Visibility

PUBLIC = Visibility.PUBLIC
ONE_TOKEN = ("one token: checks that N = 1 works, worth no points, since any attention over a "
             "single token returns V")
ONE_ELEMENT = ("one element: checks that a single value works, worth no points, since any "
               "normalisation of one value gives [1]")
# The book's notebooks never ask for a softmax that survives huge inputs (their own
# softmax_cols does not subtract the maximum), so stability is advice here, never a cost.
STABILITY = ("advice, worth no points: values in the thousands overflow exp() unless the "
             "maximum is subtracted")
# Columns are tokens: X' has one column per token, one row per feature.
TOKEN_COLUMNS = {"output": ("feature", "token")}
# The book splits the unit across two notebooks; the released stubs follow it.
PART_1, PART_2 = "udl_attention_12_1.ipynb", "udl_attention_12_2.ipynb"
HEAD_ARGS = "omega_v, omega_q, omega_k, beta_v, beta_q, beta_k"


def single_head(D: int, N: int, scale: float = 1.0):
    """X (D, N) and one head's parameters, in the order of the exercise's signature."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        X = rng.normal(size=(D, N)) * scale
        omega_v, omega_q, omega_k = (rng.normal(size=(D, D)) for _ in range(3))
        beta_v, beta_q, beta_k = (rng.normal(size=(D, 1)) for _ in range(3))
        return X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k

    return make


def large_scores(D: int, N: int, offset: float):
    """One head whose scores all share a large offset (the first feature of every query and
    key is `offset`) and otherwise vary by about 1: exp() overflows unless the maximum is
    subtracted, and the weights stay far from one-hot, so that the scale still matters."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k = single_head(D, N)(rng)
        for omega, beta in ((omega_q, beta_q), (omega_k, beta_k)):
            omega[0, :] = 0.0
            beta[0, 0] = offset
        return X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k

    return make


def values(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    """A trivial answer: V itself, as if each token attended only to itself."""
    return omega_v @ X + beta_v


def multihead_values(X, *args):
    """A trivial answer: each head's V, stacked and mixed by omega_c, without attending."""
    return args[12] @ np.vstack([values(X, *args[0:6]), values(X, *args[6:12])])


def seed002_single_head(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The inputs of seed 002's first part, drawn exactly as the notebook draws them."""
    legacy = np.random.RandomState(3)
    X = np.hstack([legacy.normal(size=(4, 1)) for _ in range(3)])
    legacy = np.random.RandomState(0)
    omega_q, omega_k, omega_v = (legacy.normal(size=(4, 4)) for _ in range(3))
    beta_q, beta_k, beta_v = (legacy.normal(size=(4, 1)) for _ in range(3))
    return X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k


def _head_params(draw, head_dim: int, D: int) -> dict[str, np.ndarray]:
    # The notebook draws q, k, v weights and then q, k, v biases.
    omega_q, omega_k, omega_v = (draw(size=(head_dim, D)) for _ in range(3))
    beta_q, beta_k, beta_v = (draw(size=(head_dim, 1)) for _ in range(3))
    return dict(omega_v=omega_v, omega_q=omega_q, omega_k=omega_k,
                beta_v=beta_v, beta_q=beta_q, beta_k=beta_k)


def _multihead_args(X: np.ndarray, draw) -> tuple[np.ndarray, ...]:
    D = X.shape[0]
    heads = [_head_params(draw, D // 2, D) for _ in range(2)]
    omega_c = draw(size=(D, D))
    ordered = [heads[h][name] for h in range(2) for name in HEAD_ARGS.split(", ")]
    return (X, *ordered, omega_c)


def multihead(D: int, N: int):
    """X (D, N), two heads of size D/2 and omega_c, in the signature's order."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        return _multihead_args(rng.normal(size=(D, N)), rng.normal)

    return make


def seed002_multihead(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The inputs behind seed 002's "True values", drawn exactly as the notebook draws them."""
    X = np.random.RandomState(3).normal(size=(8, 6))
    return _multihead_args(X, np.random.RandomState(0).normal)


def catalogued(id: str, variant, message: str = "", conditional: str = ""):
    """A catalogued mistake in this unit's layout (columns are tokens: `variants.COLUMNS`)."""
    return misconception(id, variant, message, conditional, columns=True)


def _head(scaled: bool, **mistake):
    """One head of self-attention with one mistake; `scaled` divides by sqrt(D_q)."""

    def variant(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
        options = dict(mistake)
        d_q = omega_q.shape[0]
        scale = options.pop("scale", None)  # a function of D_q, when the mistake is the scale
        options["scale"] = scale(d_q) if scale else (np.sqrt(d_q) if scaled else 1.0)
        return cols_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, **options)

    return variant


def _multihead(order=(0, 1), project=True, **mistake):
    """Two-head attention with one mistake (in each head, the stacking or the projection)."""
    head = _head(True, **mistake)

    def variant(X, *args):
        heads = [head(X, *args[0:6]), head(X, *args[6:12])]
        stacked = np.vstack([heads[i] for i in order])
        return args[12] @ stacked if project else stacked

    return variant


# Attention that looks at no score: identity ("return V"), uniform, or all on one key.
HEAD_TRIVIAL = (("return V", values), ("uniform attention", _head(True, norm=uniform_weights)),
                ("hard attention (an argmax for the softmax)", _head(True, norm=hard_weights)))

COMMON_HEAD_MISTAKES = (
    catalogued("missing-bias", _head(True, bias=False)),
    catalogued("softmax-wrong-axis", _head(True, axis=1)),
    catalogued("transposed-weights", _head(True, transpose=True)),
)

softmax = Exercise(
    name="softmax",
    notebook=PART_1,
    signature="(items_in)",
    points=1,
    summary="The softmax of a 1-D vector.",
    cases=(
        Case("vector", normal((3,)), seed=1, visibility=PUBLIC),
        Case("practice", normal((4,)), seed=101, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("large-values", normal((5,), scale=1000.0), seed=2, scored=False,
             note=STABILITY),
        Case("six-values", normal((6,)), seed=4),
        Case("one-element", normal((1,)), seed=3, scored=False, note=ONE_ELEMENT),
    ),
    misconceptions=(
        catalogued("unstable-softmax", lambda v: naive_softmax(np.asarray(v, float)),
                      conditional=LARGE),
    ),
    properties=(prop.finite_for_large_inputs(), prop.sums_to_one()),
)

softmax_cols = Exercise(
    name="softmax_cols",
    axes={"output": ("key", "query")},
    notebook=PART_1,
    signature="(data_in)",
    points=1,
    summary="The softmax of each column (the notebook gives it ready-made).",
    provided=True,
    cases=(
        Case("matrix", normal((4, 3)), seed=11, visibility=PUBLIC),
        Case("practice", normal((2, 5)), seed=111, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("large-values", normal((3, 5), scale=1000.0), seed=12, scored=False,
             note=STABILITY),
        Case("one-column", normal((5, 1)), seed=13),
    ),
    misconceptions=(
        catalogued("unstable-softmax", lambda x: naive_softmax(x, axis=0), conditional=LARGE),
        catalogued("softmax-wrong-axis", lambda x: stable_softmax(x, axis=1),
                      "The softmax normalises each row: normalise each column instead, with "
                      "axis=0 in the max and the sum."),
        catalogued("softmax-whole-array", whole_softmax, conditional=MATRIX),
    ),
    properties=(prop.finite_for_large_inputs(), prop.sums_to_one(axis=0, what="column")),
)

self_attention = Exercise(
    name="self_attention",
    axes=TOKEN_COLUMNS,
    notebook=PART_1,
    signature=f"(X, {HEAD_ARGS})",
    points=2,
    summary="Unscaled dot-product self-attention, output (D, N).",
    cases=(
        Case("notebook-example", seed002_single_head, visibility=PUBLIC,
             note="the matrix-form example in the notebook"),
        Case("practice", single_head(5, 7), seed=121, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("wide", single_head(6, 5), seed=21),
        Case("one-token", single_head(4, 1), seed=22, scored=False, note=ONE_TOKEN),
    ),
    trivial=HEAD_TRIVIAL,
    misconceptions=(
        catalogued("missing-bias", _head(False, bias=False)),
        catalogued("softmax-wrong-axis", _head(False, axis=1)),
        catalogued("transposed-weights", _head(False, transpose=True)),
        catalogued("extra-scale", _head(True)),
        catalogued("qk-swapped", _head(False, swap=True), QK_SWAPPED_COLUMNS),
    ),
)

scaled_dot_product_self_attention = Exercise(
    name="scaled_dot_product_self_attention",
    axes=TOKEN_COLUMNS,
    notebook=PART_1,
    signature=f"(X, {HEAD_ARGS})",
    points=2,
    summary="Self-attention with scores divided by the square root of the query dimension.",
    cases=(
        Case("notebook-example", seed002_single_head, visibility=PUBLIC,
             note="the scaled example in the notebook"),
        Case("practice", single_head(5, 7), seed=131, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("five-tokens", single_head(4, 5), seed=31),
        # D = 6, not the notebook's 4: code that scales by the global D fails here.
        Case("wide", single_head(6, 5), seed=34),
        Case("one-token", single_head(4, 1), seed=32, scored=False, note=ONE_TOKEN),
        Case("large-scores", large_scores(4, 5, 60.0), seed=33, scored=False,
             note=STABILITY.replace("values in the thousands", "scores above 1,000")),
    ),
    misconceptions=(
        catalogued("missing-scale", _head(False)),
        catalogued("wrong-scale", _head(True, scale=lambda d: float(d)),
                      "The scores are divided by D_q instead of its square root: divide "
                      "K.T @ Q by np.sqrt(D_q)."),
        *COMMON_HEAD_MISTAKES,
        catalogued("unstable-softmax", _head(True, norm=naive_softmax), conditional=LARGE),
        catalogued("qk-swapped", _head(True, swap=True), QK_SWAPPED_COLUMNS),
    ),
    trivial=HEAD_TRIVIAL,
    properties=(prop.finite_for_large_inputs(),),
)

multihead_scaled_self_attention = Exercise(
    name="multihead_scaled_self_attention",
    axes=TOKEN_COLUMNS,
    notebook=PART_2,
    signature=("(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, "
               "omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c)"),
    points=5,
    summary="Two heads of size D/2, each scaled by sqrt(D/2), stacked and mixed by omega_c.",
    cases=(
        Case("notebook-example", seed002_multihead, visibility=PUBLIC,
             note='the example whose "True values" the notebook prints'),
        Case("practice", multihead(10, 3), seed=141, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("small", multihead(4, 3), seed=41),
        Case("one-token", multihead(6, 1), seed=42, scored=False, note=ONE_TOKEN),
        Case("wide", multihead(6, 5), seed=43),
    ),
    misconceptions=(
        catalogued("transposed-weights", _multihead(transpose=True),
                      "Each head's attention matrix is applied transposed: with "
                      "A = softmax_cols(K.T @ Q), write each head's output as V @ A, not "
                      "V @ A.T."),
        catalogued("wrong-scale", _multihead(scale=lambda d: np.sqrt(2 * d)),
                      "The scores are divided by np.sqrt(D), the width of the input: divide "
                      "each head's K.T @ Q by the square root of its own query size, "
                      "np.sqrt(D_q) with D_q = omega_q1.shape[0] (D / 2)."),
        catalogued("missing-scale", _multihead(scale=lambda d: 1.0),
                "The scores are not scaled: in each head, divide K.T @ Q by np.sqrt(D_q) "
                "before softmax_cols, where D_q = omega_q1.shape[0] is the head's query size "
                "(D / 2)."),
        catalogued("missing-output-projection", _multihead(project=False)),
        catalogued("head-order", _multihead(order=(1, 0))),
        catalogued("missing-bias", _multihead(bias=False),
                "The projection biases are left out: in each head, write "
                "Q = omega_q1 @ X + beta_q1, and likewise K and V."),
        catalogued("softmax-wrong-axis", _multihead(axis=1),
                COLUMNS["softmax-wrong-axis"].replace("write", "in each head, write")),
        catalogued("qk-swapped", _multihead(swap=True),
                      QK_SWAPPED_COLUMNS.replace("swapped:", "swapped in each head:")),
    ),
    trivial=(("return V", multihead_values),
             ("uniform attention", _multihead(norm=uniform_weights)),
             ("hard attention (an argmax for the softmax)", _multihead(norm=hard_weights))),
)

ASSIGNMENT = Assignment(
    name="udl_attention",
    title="Self-attention, Understanding Deep Learning style (numpy, columns are tokens)",
    exercises=(softmax, softmax_cols, self_attention, scaled_dot_product_self_attention,
               multihead_scaled_self_attention),
    layout="columns are tokens, X has shape (D, N) and Q = omega_q @ X + beta_q; a product "
           "such as X @ omega_q treats rows as tokens",
)
