"""`uses-global` names an axis only when the global can stand for no other (issue #24).

Dive into Deep Learning's `dot_product_attention(queries, keys, values, valid_lens)` takes
queries of shape (batch, n_queries, d). The book's example has batch = d = 2, so a student's
`np.sqrt(d)`, reading the notebook's global `d = 2`, could stand for either size: the message
names the global and no axis, and every failing check that the global explains says so."""

from __future__ import annotations

import numpy as np

from grader.course.references import as_outputs
from grader.model import Case, Exercise, Visibility
from grader.pipeline import diagnose
from grader.pipeline.judging import Context, judge

SIGNATURE = "(queries, keys, values, valid_lens)"


def masked_softmax(X, valid_lens):
    mask = np.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
    X = np.where(mask, X, -1e6)
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(queries, keys, values, valid_lens):
    scores = queries @ np.swapaxes(keys, 1, 2) / np.sqrt(queries.shape[-1])
    return masked_softmax(scores, valid_lens) @ values


def student(queries, keys, values, valid_lens, d=2):
    """The issue's student: right but for `np.sqrt(d)`, the notebook's global d = 2."""
    scores = queries @ np.swapaxes(keys, 1, 2) / np.sqrt(d)
    return masked_softmax(scores, valid_lens) @ values


def maker(batch, queries, pairs, d, v):
    def make(rng):
        return (rng.normal(size=(batch, queries, d)), rng.normal(size=(batch, pairs, d)),
                rng.normal(size=(batch, pairs, v)), rng.integers(1, pairs + 1, size=batch))
    return make


def exercise(example_batch=2, example_d=2):
    """The book's example first (public), then hidden cases with other batches and d."""
    cases = [Case("example", maker(example_batch, 1, 10, example_d, 4),
                  visibility=Visibility.PUBLIC)]
    for k, (batch, d) in enumerate([(2, 4), (3, 5), (4, 2), (3, 3), (2, 6)]):
        cases.append(Case(f"hidden-{k}", maker(batch, 3, 5, d, 3), seed=k + 1))
    return Exercise("dot_product_attention", SIGNATURE, 2, tuple(cases))


def checks(ex, reads):
    context = Context.of(ex, reads)
    found = []
    for case in ex.cases:
        inputs = case.inputs()
        expected = as_outputs(reference(*inputs), 1)
        d = reads["d"][0] if reads else 2
        check, _ = judge(ex, case, student(*inputs, d=d), expected, inputs, context)
        found.append(check)
    return {c.name: c for c in found}


AMBIGUOUS = ("dot_product_attention reads the notebook's global d = 2, the size of several "
             "axes in the notebook's example, which this case's inputs do not have. Take sizes "
             "from the shapes of the inputs inside the function: the notebook's globals fit "
             "only its example.")


def test_batch_equal_to_d_in_the_example_names_no_axis_and_every_failing_check_says_so():
    result = checks(exercise(), {"d": (2.0,)})
    assert result["example"].passed and result["hidden-2"].passed  # d = 2 there
    failing = [c for c in result.values() if not c.passed]
    assert [c.name for c in failing] == ["hidden-0", "hidden-1", "hidden-3", "hidden-4"]
    # hidden-0 has batch = 2 = the global: the old rule (every place of size 2 must differ)
    # said nothing there, and named queries.shape[0], the batch, elsewhere.
    assert all(c.diagnosis is not None and c.diagnosis.id == "uses-global" for c in failing)
    assert {c.diagnosis.message for c in failing} == {AMBIGUOUS}
    assert all(c.diagnosis is None for c in result.values() if c.passed)


def test_an_example_that_tells_the_sizes_apart_names_the_axis():
    result = checks(exercise(example_batch=3, example_d=2), {"d": (2.0,)})
    failing = {c.name: c.diagnosis.message for c in result.values() if not c.passed}
    assert set(failing) == {"hidden-0", "hidden-1", "hidden-3", "hidden-4"}
    for name, d in (("hidden-0", 4), ("hidden-1", 5), ("hidden-3", 3), ("hidden-4", 6)):
        # keys.shape[2] is d too, in every case: one size, named by its first axis
        assert failing[name] == (
            f"dot_product_attention reads the notebook's global d = 2, where "
            f"queries.shape[2] is {d}. Take sizes from the shapes of the inputs inside the "
            "function: the notebook's globals fit only its example.")


def test_no_diagnosis_where_every_size_the_global_may_stand_for_is_its_value():
    ex = exercise()
    example = ex.cases[0].inputs()
    same = maker(2, 3, 5, 2, 3)(np.random.default_rng(0))  # batch = d = 2 again
    assert diagnose.uses_global(ex, {"d": (2.0,)}, same, example) is None
    other = maker(2, 3, 5, 4, 3)(np.random.default_rng(0))  # d = 4, batch = 2
    assert diagnose.uses_global(ex, {"d": (2.0,)}, other, example).message == AMBIGUOUS
