"""Every misconception in the catalogue is recognised in a submission written in its own
style, and a correct answer, in any style, never gets a diagnosis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.assignments.variants import CATALOGUE
from grader.course import references, registry
from grader.pipeline import diagnose, grading
from grader.results import Diagnosis
from grader.sandbox.limits import Limits
from tests.conftest import needs, of_assignment
from tests.helpers import corpus
from tests.helpers.positional import MISTAKES, with_encoding
from tests.helpers.positional import SOLUTION as PE_SOLUTION

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))

HEADS = ("omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, "
         "omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c")
UDL_HEAD = '''
def head(X, ov, oq, ok, bv, bq, bk, scale):
    Q, K, V = oq @ X + bq, ok @ X + bk, ov @ X + bv
    s = K.T @ Q / scale
    a = np.exp(s - s.max(axis=0))
    return V @ (a / a.sum(axis=0))
'''
ENCODER = '''
import torch
from torch import nn

class SimpleEncoderBlock(nn.Module):
    def __init__(self, embed_dim=64, num_heads=4, ff_dim=256):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(),
                                nn.Linear(ff_dim, embed_dim))
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)

    def forward(self, x):
'''

# id -> (assignment, exercise, a module written the way some student would)
SUBMISSIONS = {
    "missing-scale": ("attention_basics", "scaled_dot_product_attention", '''
import numpy as np
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):          # loops, no scaling
        for j in range(K.shape[0]):
            scores[i, j] = sum(Q[i, k] * K[j, k] for k in range(Q.shape[1]))
    if mask is not None:
        scores = scores + mask
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = w / w.sum(axis=1, keepdims=True)
    return w, w @ V
'''),
    "wrong-scale": ("udl_attention", "multihead_scaled_self_attention", f'''
import numpy as np
{UDL_HEAD}
def multihead_scaled_self_attention(X, {HEADS}):
    D = X.shape[0]
    h1 = head(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, np.sqrt(D))
    h2 = head(X, omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, np.sqrt(D))
    return omega_c @ np.vstack([h1, h2])
'''),
    "softmax-wrong-axis": ("udl_attention", "softmax_cols", '''
import numpy as np
def softmax_cols(data_in):
    x = data_in.astype(np.float32)      # float32 throughout
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
'''),
    "unstable-softmax": ("attention_basics", "softmax", '''
import numpy as np
softmax = lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
'''),
    "weights-transposed": ("attention_basics", "scaled_dot_product_attention", '''
import numpy as np
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w.T, w.T @ V
'''),
    "transposed-weights": ("attention_basics", "scaled_dot_product_attention", '''
import numpy as np
def scaled_dot_product_attention(Q, K, V, mask=None):
    s = np.einsum("id,jd->ij", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s += mask
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w, np.einsum("ij,ik->jk", w, V)
'''),
    "missing-bias": ("udl_attention", "self_attention", '''
import numpy as np
def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    out = []
    for n in range(X.shape[1]):               # one query at a time, biases forgotten
        q = omega_q @ X[:, n]
        scores = np.array([(omega_k @ X[:, m]) @ q for m in range(X.shape[1])])
        a = np.exp(scores - scores.max())
        a = a / a.sum()
        out.append(sum(a[m] * (omega_v @ X[:, m]) for m in range(X.shape[1])))
    return np.stack(out, axis=1)
'''),
    "mask-includes-diagonal": ("attention_basics", "causal_mask", '''
import numpy as np
def causal_mask(seq_len):
    return np.array([[-np.inf if j >= i else 0.0 for j in range(seq_len)]
                     for i in range(seq_len)])
'''),
    "mask-wrong-direction": ("attention_basics", "causal_mask", '''
import numpy as np
def causal_mask(seq_len):
    return np.tril(np.full((seq_len, seq_len), float("-inf")), -1)
'''),
    "mask-after-softmax": ("attention_basics", "causal_self_attention", '''
import numpy as np
def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    s = Q @ K.T / np.sqrt(K.shape[1])
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    w = w * np.tril(np.ones_like(w))      # zero the future afterwards
    return w, w @ V
'''),
    "missing-output-projection": ("udl_attention", "multihead_scaled_self_attention", f'''
import numpy as np
{UDL_HEAD}
def multihead_scaled_self_attention(X, {HEADS}):
    s = np.sqrt(X.shape[0] // 2)
    return np.vstack([head(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, s),
                      head(X, omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, s)])
'''),
    "head-order": ("udl_attention", "multihead_scaled_self_attention", f'''
import numpy as np
{UDL_HEAD}
def multihead_scaled_self_attention(X, {HEADS}):
    s = np.sqrt(X.shape[0] / 2)
    heads = [head(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, s),
             head(X, omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, s)]
    return omega_c @ np.concatenate(heads[::-1], axis=0)
'''),
    "softmax-whole-array": ("attention_basics", "softmax", '''
import numpy as np
def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)
'''),
    "extra-scale": ("udl_attention", "self_attention", '''
import numpy as np
def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q, K, V = omega_q @ X + beta_q, omega_k @ X + beta_k, omega_v @ X + beta_v
    s = K.T @ Q / np.sqrt(Q.shape[0])
    a = np.exp(s - s.max(0))
    return V @ (a / a.sum(0))
'''),
    "mask-ignored": ("attention_basics", "scaled_dot_product_attention", '''
import numpy as np
def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.T / np.sqrt(K.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return w, w @ V
'''),
    "mask-finite": ("attention_basics", "causal_mask", '''
import numpy as np
def causal_mask(seq_len):
    return np.triu(np.ones((seq_len, seq_len)), 1) * -1e9
'''),
    "mask-boolean": ("attention_basics", "causal_mask", '''
import numpy as np
def causal_mask(seq_len):
    return np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1).astype(float)
'''),
    "qkv-order": ("attention_basics", "qkv_projections", '''
def qkv_projections(X, W_q, W_k, W_v):
    return X @ W_q, X @ W_v, X @ W_k
'''),
    "pre-norm": ("torch_attention", "SimpleEncoderBlock", ENCODER + '''
        y = self.norm1(x)
        x = x + self.self_attn(y, y, y)[0]
        return x + self.ff(self.norm2(x))
'''),
    "missing-residual": ("torch_attention", "SimpleEncoderBlock", ENCODER + '''
        x = self.norm1(self.self_attn(x, x, x)[0])
        return self.norm2(self.ff(x))
'''),
    "weights-not-normalised": ("attention_basics", "scaled_dot_product_attention", '''
import numpy as np
def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.T / np.sqrt(K.shape[-1]) + (0 if mask is None else mask)
    w = np.exp(s - s.max(-1, keepdims=True)) / s.shape[-1]   # divides by the count
    return w, w @ V
'''),
    "future-leak": ("attention_basics", "causal_self_attention", '''
import numpy as np
def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    n = X.shape[0]
    s = Q @ K.T / np.sqrt(K.shape[1]) + np.triu(np.full((n, n), -np.inf), k=2)  # off by one
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w, w @ V
'''),
}

# Issue #25's student: each head's scores divided by the literal 2, right for the notebook's
# head size 4 only. Where the head size is 2, 2 = sqrt(D) matches `wrong-scale` by chance.
SUBMISSIONS["hard-coded-size"] = ("udl_attention", "multihead_scaled_self_attention", f'''
import numpy as np
def multihead_scaled_self_attention(X, {HEADS}):
    heads = []
    for ov, oq, ok, bv, bq, bk in ((omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1),
                                   (omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)):
        Q, K, V = oq @ X + bq, ok @ X + bk, ov @ X + bv
        a = np.exp(K.T @ Q / 2)
        heads.append(V @ (a / a.sum(axis=0)))
    return omega_c @ np.vstack(heads)
''')

# The positional encodings' mistakes, written as students write them (test_positional_encoding).
SUBMISSIONS.update({
    mistake: ("positional_encoding", "sinusoidal_encoding", with_encoding(MISTAKES[mistake]))
    for mistake in MISTAKES if " " not in mistake})
SUBMISSIONS["positions-not-added"] = (
    "positional_encoding", "causal_attention_with_positions",
    PE_SOLUTION.replace("    H = add_positional_encoding(X)\n", "    H = X\n"))
# Two of 23 real students (#25): the book's names, two-space indents, queries and keys swapped.
SUBMISSIONS["qk-swapped"] = ("udl_attention", "scaled_dot_product_self_attention", '''
import numpy as np
def softmax_cols(data_in):
  exp_values = np.exp(data_in - np.max(data_in, axis=0))
  return exp_values / np.sum(exp_values, axis=0)
def scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  Q = beta_q + omega_q @ X
  K = beta_k + omega_k @ X
  V = beta_v + omega_v @ X
  D_q = Q.shape[0]
  X_prime = V @ softmax_cols(Q.T @ K / np.sqrt(D_q))
  return X_prime
''')

REQUIRED = {"missing-scale", "wrong-scale", "softmax-wrong-axis", "unstable-softmax",
            "transposed-weights", "missing-bias", "mask-includes-diagonal",
            "mask-wrong-direction", "mask-after-softmax", "missing-output-projection",
            "head-order"}


def test_every_catalogue_id_has_a_submission():
    assert REQUIRED <= set(CATALOGUE)
    assert set(SUBMISSIONS) == set(CATALOGUE)


@pytest.mark.parametrize("expected_id", [
    pytest.param(expected_id, marks=needs(name)) for expected_id, (name, *_) in
    sorted(SUBMISSIONS.items())])
def test_the_misconception_is_named(tmp_path, expected_id):
    name, exercise, source = SUBMISSIONS[expected_id]
    path = tmp_path / f"student_{name}.py"
    path.write_text(source)
    result = grading.grade(path, registry.get(name), OPTIONS)
    (graded,) = [e for e in result.exercises if e.name == exercise]
    ids = {c.diagnosis.id for c in graded.checks if c.diagnosis}
    assert any(not c.passed for c in graded.checks)
    assert ids == {expected_id}, [(c.name, c.passed, c.message) for c in graded.checks]
    assert all(c.diagnosis.message for c in graded.checks if c.diagnosis)


def test_seed002_as_written_is_diagnosed_with_transposed_weights():
    result = corpus.grade("udl_attention/seed002.ipynb")
    by_name = {e.name: e for e in result.exercises}
    multihead = by_name["multihead_scaled_self_attention"]
    assert {c.diagnosis.id for c in multihead.checks if c.diagnosis} == {"transposed-weights"}
    assert by_name["self_attention"].status.value == "passed"
    # It scales by np.sqrt(D), the global (4 there, 8 by the end of the notebook): right for
    # the notebook's example, wrong where D is 6, and said so.
    scaled = by_name["scaled_dot_product_self_attention"]
    assert [(c.name, c.diagnosis.id) for c in scaled.checks if not c.passed] == \
        [("practice", "uses-global"), ("wide", "uses-global")]
    wide = next(c for c in scaled.checks if c.name == "wide")
    assert "reads the notebook's global D = 4, where X.shape[0] is 6" in wide.detail


@pytest.mark.parametrize("name", [of_assignment(name) for name in
                                  ["attention_basics", "udl_attention", "torch_attention"]])
def test_correct_outputs_in_float32_get_no_diagnosis(name):
    assignment = registry.get(name)
    stored = references.load(assignment)
    for exercise in assignment.exercises:
        for case in exercise.cases:
            expected = stored.get(exercise.name, case.name)
            student = tuple(e.astype(np.float32).astype(np.float64) for e in expected)
            found = diagnose.diagnose(exercise, case.inputs(), case.init_kwargs, student,
                                      expected)
            assert found is None, (exercise.name, case.name, found)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_no_diagnosis_for_a_correct_attention_on_random_inputs(n, d, seed):
    rng = np.random.default_rng(seed)
    exercise = registry.get("attention_basics").exercise("scaled_dot_product_attention")
    Q, K, V = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d))
    solution = references.load_solution("attention_basics")
    expected = references.as_outputs(solution.scaled_dot_product_attention(Q, K, V), 2)
    # a loop-based float32 student computes the same thing, slightly differently
    student = tuple(e.astype(np.float32).astype(np.float64) for e in expected)
    assert diagnose.diagnose(exercise, (Q, K, V), {}, student, expected) is None


def test_one_bug_is_not_called_two_names_across_cases():
    # The notebook's own example has K = Q, so its scores are symmetric: a softmax over the
    # wrong axis and transposed weights give the same numbers there. The other cases tell
    # them apart, and the example gets the name they agree on.
    first = Diagnosis("softmax-wrong-axis", "axis")
    other = Diagnosis("weights-transposed", "transposed")
    agreed = diagnose.consistent([first, other, other], [(first, other), (), ()])
    assert agreed == [other, other, other]
    # A case that matches one mistake only keeps it; a non-catalogue diagnosis is kept.
    stub = Diagnosis("uses-global", "reads D")
    assert diagnose.consistent([first, stub, other, other], [(), (first, other), (), ()]) == \
        [first, stub, other, other]
