"""Every number the course notebooks print that can be reproduced, reproduced by solutions/."""

from __future__ import annotations

import numpy as np
import pytest

from grader.assignments import attention_basics as basics
from grader.assignments import udl_attention as udl


def close(obtained, printed, decimals):
    """Equal to the printed precision: within half a unit of the last printed digit."""
    np.testing.assert_allclose(obtained, np.array(printed), rtol=0, atol=0.5 * 10.0**-decimals)


@pytest.fixture(scope="module")
def ab(solution):
    return solution("attention_basics")


@pytest.fixture(scope="module")
def u(solution):
    return solution("udl_attention")


def test_seed000_scores_weights_and_output_from_printed_qkv(ab):
    Q = np.array([[0.58352471, 0.69020868, 0.22134042, 1.31596799],
                  [1.07000686, 1.47739322, 0.75098463, 1.61922134],
                  [1.0722933, 0.82367632, 0.5395647, 0.74499289]])
    K = np.array([[0.83760721, 0.6137794, 0.4806961, 0.62550493],
                  [1.01553254, 1.09163663, 0.82764348, 0.81977231],
                  [0.83769352, 0.47516817, 0.8319121, 0.43856935]])
    V = np.array([[0.34359845, 0.58175548, 0.7888782, 1.02046847],
                  [0.3434527, 1.43844635, 1.26034733, 1.6961633],
                  [0.3202968, 1.17951542, 0.83865699, 1.09813922]])
    scores = [[0.92097116, 1.30401524, 0.78902953],
              [1.58843265, 2.32417184, 1.46662105],
              [1.06453977, 1.52269786, 1.03261968]]
    weights, output = ab.scaled_dot_product_attention(Q, K, V)
    # The scores are what the weights are the softmax of: log-weights differ from them by a
    # per-row constant.
    log_w = np.log(weights)
    close(log_w - log_w[:, :1] + np.array(scores)[:, :1], scores, 7)
    close(ab.softmax(np.array(scores)), [[0.29912045, 0.43873273, 0.26214682],
                                         [0.25174083, 0.52538919, 0.22286997],
                                         [0.28171054, 0.44542914, 0.27286032]], 7)
    close(weights, ab.softmax(np.array(scores)), 7)
    close(output, [[0.33742605, 1.11431467, 1.00877649, 1.33727905],
                   [0.33832864, 1.16507435, 1.04767718, 1.39278171],
                   [0.33717543, 1.12645553, 1.01246695, 1.3426359]], 6)


def test_seed001_unmasked_example(ab):
    X, W_q, W_v = (np.array(m) for m in (basics.SEED001_X, basics.SEED001_W_Q, basics.SEED001_W_V))
    Q, K, V = ab.qkv_projections(X, W_q, W_q, W_v)
    close(Q, [[1.0, 0.5, 0.75], [0.0, 1.3, 0.65], [1.0, 1.2, 1.1]], 2)
    close(V, [[1.0, 1.25, 0.25], [1.3, 0.65, 0.33], [1.7, 1.6, 0.52]], 2)
    close(Q @ K.T, [[1.8125, 1.1375, 2.425], [1.1375, 2.1125, 2.275],
                    [2.425, 2.275, 3.65]], 4)
    weights, output = ab.scaled_dot_product_attention(Q, K, V)
    close(weights, [[0.32242711, 0.21836449, 0.4592084],
                    [0.21348029, 0.37482567, 0.41169404],
                    [0.25345618, 0.23242983, 0.51411399]], 7)
    close(output, [[1.38695523, 1.27970424, 0.39145543],
                   [1.40063353, 1.16919751, 0.39114344],
                   [1.42960874, 1.290482, 0.40740516]], 7)


def test_seed001_masked_example(ab):
    X = np.array(basics.SEED001_MASKED_X)
    mask = ab.causal_mask(3)
    Q, K, _ = ab.qkv_projections(X, np.eye(3), np.eye(3), np.eye(3))
    close(Q @ K.T / np.sqrt(3) + mask,
          [[1.15470054, -np.inf, -np.inf], [0.57735027, 1.15470054, -np.inf],
           [0.57735027, 0.57735027, 1.15470054]], 7)
    weights, output = ab.causal_self_attention(X, np.eye(3), np.eye(3), np.eye(3))
    close(weights, [[1.0, 0.0, 0.0], [0.35954252, 0.64045748, 0.0],
                    [0.26445846, 0.26445846, 0.47108308]], 7)
    close(output, [[1.0, 0.0, 1.0], [0.35954252, 0.64045748, 1.0],
                   [0.73554154, 0.73554154, 0.52891692]], 7)


def test_seed003_weights_and_output(ab):
    X, W_qk, W_v = (np.array(m) for m in (basics.SEED003_X, basics.SEED003_W_QK,
                                          basics.SEED003_W_V))
    Q, K, V = ab.qkv_projections(X, W_qk, W_qk, W_v)
    close(Q @ K.T, [[1.2884, 1.064, 1.452], [1.064, 1.6064, 1.4496],
                    [1.452, 1.4496, 1.8768]], 4)
    weights, output = ab.scaled_dot_product_attention(Q, K, V)
    close(weights, [[0.33567137, 0.30004505, 0.36428358],
                    [0.28375415, 0.37215416, 0.34409169],
                    [0.30907667, 0.308706, 0.38221733]], 7)
    close(output, [[0.57530294, 0.70527381, 0.50530294, 0.64177546],
                   [0.60019479, 0.68822737, 0.53019479, 0.61916155],
                   [0.58155011, 0.7007833, 0.51155011, 0.64659215]], 7)


def test_seed002_single_head_examples(u):
    inputs = udl.seed002_single_head(np.random.default_rng())
    X = inputs[0]
    close(X.T, [[1.78862847, 0.43650985, 0.09649747, -1.8634927],
                [-0.2773882, -0.35475898, -0.08274148, -0.62700068],
                [-0.04381817, -0.47721803, -1.31386475, 0.88462238]], 7)
    unscaled = u.self_attention(*inputs)
    close(unscaled, [[0.94744244, 1.64201168, 1.61949281],
                     [-0.24348429, -0.08470004, -0.06641533],
                     [-0.91310441, 4.02764044, 3.96863308],
                     [-0.44522983, 2.18690791, 2.15858316]], 7)
    # The per-output attentions the notebook prints are the columns of the attention matrix.
    X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k = inputs
    attention = u.softmax_cols((omega_k @ X + beta_k).T @ (omega_q @ X + beta_q))
    close(attention.T, [[1.24326146e-13, 9.98281489e-01, 1.71851130e-03],
                        [2.79525306e-12, 5.85506360e-03, 9.94144936e-01],
                        [0.00505708, 0.00654776, 0.98839516]], 8)
    scaled = u.scaled_dot_product_self_attention(*inputs)
    close(scaled[0], [0.97411966, 1.59622051, 1.32638014], 7)
    close(scaled[1, :2], [-0.23738409, -0.09516106], 7)
    close(scaled[1, 2], 0.1306, 4)  # the notebook's output is cut off after four digits


SEED002_TRUE_VALUES = [
    [-21.207, -5.373, -20.933, -9.179, -11.319, -17.812],
    [-1.995, 7.906, -10.516, 3.452, 9.863, -7.24],
    [5.479, 1.115, 9.244, 0.453, 5.656, 7.089],
    [-7.413, -7.416, 0.363, -5.573, -6.736, -0.848],
    [-11.261, -9.937, -4.848, -8.915, -13.378, -5.761],
    [3.548, 10.036, -2.244, 1.604, 12.113, -2.557],
    [4.888, -5.814, 2.407, 3.228, -4.232, 3.71],
]
SEED002_STUDENT_ANSWER_FIRST_ROW = [-6.116, -2.101, -4.916, 1.423, -23.905, 1.114]


def test_seed002_multihead_true_values(u):
    X_prime = u.multihead_scaled_self_attention(*udl.seed002_multihead(np.random.default_rng()))
    assert X_prime.shape == (8, 6)
    # The notebook prints seven of the eight rows of the true values.
    close(X_prime[:7], SEED002_TRUE_VALUES, 3)
    # The notebook's own answer comes from buggy code; the reference must not agree with it.
    assert not np.allclose(X_prime[0], SEED002_STUDENT_ANSWER_FIRST_ROW, atol=0.01)


def test_seed002_input_draw_matches_printed_input():
    X = udl.seed002_multihead(np.random.default_rng())[0]
    close(X[0], [1.789, 0.437, 0.096, -1.863, -0.277, -0.355], 3)
    close(X[7], [-0.356, -1.743, -0.597, -0.589, -0.874, 0.03], 3)
