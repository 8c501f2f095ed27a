"""Calling an exercise on a case's inputs, the same way for references and for students.

This module is imported inside the worker, so it must not import anything that could hold
reference data.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

import numpy as np

MAX_ITEMS = 64
MAX_DEPTH = 4
SANDBOX_ENV = "GRADER_SANDBOX"
"""Set to "1" in every worker's environment (`startup`): the student's `check()` reads it and
does nothing while the grader runs the notebook."""
NOT_IMPLEMENTED = "not implemented yet: the stub still raises NotImplementedError"
"""How a call that raised NotImplementedError (a stub nobody has written) is told, by the
grader (`session`) and by `check()` alike."""


def _is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def to_tensors(value: Any, dtype: str) -> Any:
    """Turn arrays (also inside tuples, lists and dicts) into CPU torch tensors: a float array
    becomes a tensor of `dtype` (the exercise's `tensors`), any other keeps its own dtype (a
    boolean mask stays boolean, integer lengths stay int64), as the master's tensors were."""
    import torch

    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return torch.tensor(value, dtype=getattr(torch, dtype))
        return torch.from_numpy(np.array(value))
    if isinstance(value, (tuple, list)):
        return type(value)(to_tensors(item, dtype) for item in value)
    if isinstance(value, Mapping):
        return {key: to_tensors(item, dtype) for key, item in value.items()}
    return value


def plain(value: Any, depth: int = 0) -> Any:
    """Reduce a returned value to plain numbers: tensors and array subclasses become ndarrays.

    Whatever cannot be reduced is returned as it is, and the protocol names its type.
    """
    if depth > MAX_DEPTH:
        return value
    if type(value) in (tuple, list):
        return type(value)(plain(item, depth + 1) for item in value[:MAX_ITEMS])
    if _is_tensor(value):
        return np.array(value.detach().cpu().numpy(), subok=False)
    if isinstance(value, np.ndarray):
        return np.array(value, subok=False)
    return value


def substitute(namespace: dict[str, Any], reference: Mapping[str, str] | None) -> None:
    """Put a solution's function in place of the submission's own of the same name, in a call
    process's namespace (which dies with the call): `reference` holds its "name" and the
    "source" that defines it. Its source runs in a scope of its own, so the rest of the
    solution's names never meet the submission's."""
    if not reference:
        return
    scope: dict[str, Any] = {"__builtins__": builtins, "__name__": "reference"}
    exec(compile(reference["source"], "<reference>", "exec"), scope)
    namespace[reference["name"]] = scope[reference["name"]]


def invoke(target: Any, kind: str, inputs: tuple[Any, ...], init_kwargs: Mapping[str, Any],
           tensors: str | None) -> Any:
    """Call a function, or build a module, load a state_dict and run forward; return plain data."""
    args = [np.array(item) if isinstance(item, np.ndarray) else item for item in inputs]
    if tensors:
        args = [to_tensors(item, tensors) for item in args]
    if kind == "class":
        import torch

        state, *forward_args = args
        module = target(**init_kwargs)
        module.load_state_dict(state)
        module.eval()
        with torch.no_grad():
            return plain(module(*forward_args))
    return plain(target(*args))
