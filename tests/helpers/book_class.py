"""A class of book-style notebooks (Understanding Deep Learning, chapter 12), each cell as
the book lays it out, with one mistake or none: the class report's tests
(`tests/test_class_mistakes.py`) and the own-code tests (`tests/test_owncode.py`)."""

from __future__ import annotations

import json

from tests.helpers.book import BOOK_SETUP, BOOK_SOFTMAX_COLS, MULTIHEAD_CELL

SOFTMAX_STABLE = '''def softmax(items_in):
  items_out = np.exp(items_in - np.max(items_in))
  items_out = items_out / np.sum(items_out)
  return items_out
'''
SELF_ATTENTION = '''def self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  # 1. Compute queries, keys, and values
  all_queries = beta_q + omega_q @ X
  all_keys = beta_k + omega_k @ X
  all_values = beta_v + omega_v @ X
  # 2. Compute dot products
  dot_products = all_keys.T @ all_queries
  # 3. Apply softmax to calculate attentions
  attention = softmax_cols(dot_products)
  # 4. Weight values by attentions
  X_prime = all_values @ attention
  return X_prime
'''
# The scaled exercise: {scores}, {weights} and {output} are what each student writes.
SCALED_CELL = '''def scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k,
    beta_v, beta_q, beta_k):
  all_queries = beta_q + omega_q @ X
  all_keys = beta_k + omega_k @ X
  all_values = beta_v + omega_v @ X
  dot_products = {scores}
  attention = {weights}
  X_prime = {output}
  return X_prime
'''
RIGHT = {"scores": "all_keys.T @ all_queries / np.sqrt(all_queries.shape[0])",
         "weights": "softmax_cols(dot_products)", "output": "all_values @ attention"}
MISTAKES = {
    "right": RIGHT,
    "missing-scale": {**RIGHT, "scores": "all_keys.T @ all_queries"},
    "transposed-weights": {**RIGHT, "output": "all_values @ attention.T"},
    # The student's own softmax, over each row instead of each column.
    "softmax-wrong-axis": {**RIGHT, "weights": "np.exp(dot_products) / np.sum("
                           "np.exp(dot_products), axis=1, keepdims=True)"},
    # The student's own column softmax, right but for the overflow (unscored large-scores).
    "own-unstable": {**RIGHT, "weights": "np.exp(dot_products) / np.sum(np.exp(dot_products), "
                     "axis=0, keepdims=True)"},
}
PRINT_CHECK = '''np.random.seed(0)
omega_q = np.random.normal(size=(D,D))
omega_k = np.random.normal(size=(D,D))
omega_v = np.random.normal(size=(D,D))
beta_q = np.random.normal(size=(D,1))
beta_k = np.random.normal(size=(D,1))
beta_v = np.random.normal(size=(D,1))
X = np.zeros((D, N))
for n in range(N):
  X[:,n] = all_x[n].squeeze()
print(scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k))
'''
STABLE_SOFTMAX_COLS = '''def softmax_cols(data_in):
  exp_values = np.exp(data_in - np.max(data_in, axis=0))
  return exp_values / np.sum(exp_values, axis=0)
'''


def book_notebook(scaled: str, softmax: str = SOFTMAX_STABLE,
                  softmax_cols: str = BOOK_SOFTMAX_COLS) -> str:
    """One student's notebook, as the book lays it out, with the book's `softmax_cols`
    unless told otherwise."""
    cells = [BOOK_SETUP, softmax, softmax_cols, SELF_ATTENTION,
             SCALED_CELL.format(**MISTAKES[scaled]), PRINT_CHECK, MULTIHEAD_CELL]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
         "execution_count": None, "source": cell} for i, cell in enumerate(cells)]})


# student -> (scaled attention, own softmax, softmax_cols); every one keeps the book's
# unstable softmax_cols but gil, who fixed it and writes an unstable softmax of his own.
