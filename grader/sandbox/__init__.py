"""Running untrusted code, in two halves.

- `grader.sandbox.inside`: what runs in the confined child (the worker, the fork server's
  loop, the confinement itself, the wire protocol). It is all the sandbox mounts of the grader,
  and it imports only the standard library, numpy and itself (`tests/test_layers.py`).
- the rest of `grader.sandbox`: what supervises it from the grader's process: `session`
  (one submission's worker), `transport` (a fresh interpreter or a zygote fork), `kernel`
  (a Jupyter kernel), `zygote` (the fork server), `isolation` and `resources` (what the machine
  offers and what the worker is granted), `limits`, and `doctor` (what this machine allows).
"""
