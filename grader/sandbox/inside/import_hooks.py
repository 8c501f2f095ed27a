"""Patching a module as soon as it is imported, without importing it first: the worker's
stand-ins take the place of IPython's names (`get_ipython`, `display`) only when student code
imports IPython, which takes a second the worker never spends itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from typing import Any


def patch_on_import(name: str, patch: Callable[[Any], None]) -> None:
    """Apply `patch` to the module `name` now if it is imported, else as soon as student
    code first imports it: importing IPython takes a second, so the worker never does."""
    if name in sys.modules:
        patch(sys.modules[name])
    elif not any(isinstance(finder, _Patching) and finder.name == name
                 for finder in sys.meta_path):
        sys.meta_path.insert(0, _Patching(name, patch))


class _PatchingLoader(importlib.abc.Loader):
    """Loads a module as its own loader does, then patches it."""

    def __init__(self, loader: Any, patch: Callable[[Any], None]) -> None:
        self._loader, self._patch = loader, patch

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ...
        return getattr(self._loader, name)


class _Patching(importlib.abc.MetaPathFinder):
    """Finds one module as Python would, with a loader that patches it (`patch_on_import`)."""

    def __init__(self, name: str, patch: Callable[[Any], None]) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader, self.patch)
        return spec
