"""The book's notebook code (Understanding Deep Learning, chapter 12), written as the book
writes it: globals, two-space indents, `print(...)` checks, the book's names and its stubs."""

BOOK_SETUP = '''import numpy as np
np.random.seed(3)
N = 3
D = 4
all_x = []
for n in range(N):
  all_x.append(np.random.normal(size=(D,1)))
print(all_x)
'''
# The book's own softmax_cols: ready-made, and without subtracting the maximum.
BOOK_SOFTMAX_COLS = '''def softmax_cols(data_in):
  exp_values = np.exp(data_in) ;
  denom = np.sum(exp_values, axis = 0);
  denom = np.matmul(np.ones((data_in.shape[0],1)), denom[np.newaxis,:])
  softmax = exp_values / denom
  return softmax
'''
BOOK_STUBS = [BOOK_SETUP, '''def softmax(items_in):

  # TODO Compute the elements of items_out
  # Replace this line
  items_out = items_in.copy()

  return items_out ;
''', BOOK_SOFTMAX_COLS, '''def self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):

  # TODO -- Write this function
  # Replace this line
  X_prime = np.zeros_like(X);

  return X_prime
''', '''def scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):

  # TODO -- Write this function
  # Replace this line
  X_prime = np.zeros_like(X);

  return X_prime
''', '''def multihead_scaled_self_attention(X,omega_v1, omega_q1, omega_k1,
    beta_v1, beta_q1, beta_k1,
    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c):

  # TODO Write the multihead scaled self-attention mechanism.
  # Replace this line
  X_prime = np.zeros_like(X) ;

  return X_prime
''']
# Attends to nothing: each token keeps its own value, so only a one-token case could pass it.
RETURN_V = '''import numpy as np

def softmax(items_in):
  return np.asarray(items_in, dtype=float)

def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  return omega_v @ X + beta_v

def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  return omega_v @ X + beta_v

def multihead_scaled_self_attention(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,
                                    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2,
                                    omega_c):
  return omega_c @ np.vstack([omega_v1 @ X + beta_v1, omega_v2 @ X + beta_v2])
'''

# The book's multi-head attention, written right, as a student of the book writes it.
MULTIHEAD_CELL = '''def multihead_scaled_self_attention(X,omega_v1, omega_q1, omega_k1,
    beta_v1, beta_q1, beta_k1,
    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c):
  heads = []
  for ov, oq, ok, bv, bq, bk in ((omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1),
                                 (omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)):
    V = bv + ov @ X
    Q = bq + oq @ X
    K = bk + ok @ X
    heads.append(V @ softmax_cols(K.T @ Q / np.sqrt(Q.shape[0])))
  X_prime = omega_c @ np.vstack(heads)
  return X_prime
'''

# 12_2 filled in: multi-head right; it also pastes an older, unscaled attention, as students
# do when they copy cells across, which must not cost the better one in 12_1.
PART_2 = [BOOK_SETUP, BOOK_SOFTMAX_COLS, '''def scaled_dot_product_self_attention(X,omega_v,
    omega_q, omega_k, beta_v, beta_q, beta_k):
  V = beta_v + omega_v @ X
  Q = beta_q + omega_q @ X
  K = beta_k + omega_k @ X
  return V @ softmax_cols(K.T @ Q)
''', MULTIHEAD_CELL]
