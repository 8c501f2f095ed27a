"""Hidden means hidden in feedback too (issue #10): no message or diagnosis of a hidden check
holds a number, for the whole corpus (`hidden_numbers`, asserted by
`tests/test_grading.py::test_no_hidden_check_of_the_corpus_says_a_number` on the grading each
corpus file gets once) and for the wrong answers students really give (here).

A number computed from a hidden case ("yours sum to between 2.041 and 2.041") tells a probing
submission about inputs it must not see. Integers that name a place (`line 3`) or a shape are
not derived values; decimals and exponents are.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.course import registry
from grader.pipeline import grading
from tests.helpers.book import BOOK_STUBS, PART_2, RETURN_V
from tests.helpers.corpus import DECIMAL, FAST, hidden_failures_of

ABOUT_RIGHT = '''import numpy as np

def softmax(x):
    e = np.exp(x)                      # unstable, and over the wrong axis
    return e / e.sum(axis=0, keepdims=True)

def qkv_projections(X, W_q, W_k, W_v):
    return X @ W_q, X @ W_q, X @ W_v   # keys projected with W_q

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(V.shape[-1])   # sqrt(d_v) instead of sqrt(d_k)
    if mask is not None:
        scores = scores * mask                # multiplied, not added
    weights = softmax(scores)
    return weights, weights.T @ V              # transposed

def causal_mask(seq_len):
    return np.tril(np.full((seq_len, seq_len), -np.inf), -1)   # the wrong triangle

def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    weights = softmax(Q @ K.T)                 # no scale, no mask
    return weights, weights @ V
'''
SUBMISSIONS = {
    "udl_attention/return_v.py": RETURN_V,
    "udl_attention/book_stubs.ipynb": BOOK_STUBS,
    "udl_attention/12_2_with_unscaled_copy.ipynb": PART_2,
    "attention_basics/about_right.py": ABOUT_RIGHT,
}


def write_submission(path: Path, content: str | list[str]) -> Path:
    """A corpus file as it is, or a notebook made of a list of cell sources."""
    if isinstance(content, list):
        path = path.with_suffix(".ipynb")
        path.write_text(json.dumps({
            "nbformat": 4, "nbformat_minor": 5, "metadata": {},
            "cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                       "execution_count": None, "source": source} for source in content]}))
    else:
        path.write_text(content)
    return path


@pytest.fixture(scope="module")
def hidden_failures(tmp_path_factory) -> list[tuple[str, str, str]]:
    """(submission, check, text) for every failing hidden check of every submission."""
    folder = tmp_path_factory.mktemp("hidden")
    found = []
    for relative, content in SUBMISSIONS.items():
        assignment = registry.get(relative.split("/")[0])
        path = write_submission(folder / relative.replace("/", "_"), content)
        result = grading.grade(path, assignment, FAST)
        found += [(relative, check, said) for check, said in hidden_failures_of(result)]
    return found


def test_the_scan_sees_many_failing_hidden_checks(hidden_failures):
    assert len(hidden_failures) >= 20
    assert len({submission for submission, _, _ in hidden_failures}) == len(SUBMISSIONS)


def test_no_hidden_check_says_a_number(hidden_failures):
    leaking = [(submission, check, text) for submission, check, text in hidden_failures
               if DECIMAL.search(text)]
    assert leaking == []


def test_the_scan_would_catch_a_leaked_value():
    assert DECIMAL.search("yours sum to between 2.041 and 2.041")
    assert DECIMAL.search("largest difference 3e-05")
    assert not DECIMAL.search("values differ (line 3); shape (4, 6) expected")

