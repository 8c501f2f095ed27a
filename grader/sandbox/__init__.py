"""Running untrusted code, in two halves.

- `grader.sandbox.inside`: what runs in the confined child. It is all the sandbox mounts of the
  grader, and it imports only the standard library, numpy and itself (`tests/test_layers.py`).
  - `startup` (every worker's entry: limits, `confine`, then the loop), `worker` (the loop
    that answers requests: statements, calls, snapshots), `call_process` (the forked process
    that serves calls while each leaves it as it found it) and `state` (the picture of all a
    call could change), `calling` (how an exercise is called), `failures` (how an error is
    described), `signals`, `streams`, `cellwarnings`;
  - the notebook's stand-ins: `shell` (`get_ipython()`), `displays`, `import_hooks`;
  - `kernel_agent` (the same, inside a Jupyter kernel), `zygote_process` (the fork server's
    loop); `confine`, `cgroups`, `seccomp`, `processes` (the confinement itself); `protocol`
    (the wire format).
- the rest of `grader.sandbox`: what supervises it from the grader's process: `session`
  (one submission's worker) and `outcomes` (what a call produced), `transport` (a fresh
  interpreter or a zygote fork), `kernel` and `kernel_channels` (a Jupyter kernel), `zygote`
  (the fork server), `spares` (workers started ahead and put away after), `isolation`, `users` and
  `resources` (what the machine offers, who the worker runs as and what it is granted),
  `limits`, and `doctor` (what this machine allows).
"""
