"""What one call of an exercise could leave behind for the next call in the same process.

The calls of a submission share a forked call process (`call_process`) only while nothing a
call could change is seen to change. `digest` takes a picture of every such place, and the
call process compares the picture after each call with the one it took before the first:
any difference, and the next call runs in a fresh fork of the notebook's state.

What the picture covers, and how:
- **The notebook's globals**, followed deep: containers item by item, arrays by a hash of
  their bytes, tensors by their version counter (which every in-place change bumps),
  functions by their defaults, attributes and the contents of their closures (a cache in a
  closure), `functools` caches by their statistics, objects by their attributes, classes by
  their own attributes, generators and iterators by how far they have run, random
  generators by their state.
- **Modules**: every attribute of the modules the notebook names (`np`, `torch`, `math`),
  of their submodules, of the modules its functions come from, and of the modules a call
  most often changes (`numpy`, `numpy.random`, `random`, `math`, `os`, `sys`, `builtins`,
  `functools`, `torch`, `torch.nn`), by identity; which modules are imported, and how many
  attributes each other module has (one added anywhere is seen).
- **The interpreter and the process**: numpy's, Python's and torch's global random states,
  numpy's error and print settings, torch's grad mode and default dtype, the environment,
  the working folder, `sys.path`, the recursion limit, trace and profile hooks, the standard
  streams, signal handlers and timers, resource limits, the collector's settings, warning
  filters, threads, child processes and open descriptors.
- **Files**: what is in the working folder and the temporary folders, by inode, size and
  modification time, but not below a read-only mount (the interpreter's files, bound into a
  sandbox's /tmp when a venv lives there), which no call can change. (`settings` pictures
  these and the interpreter and the process.)

What is too large to picture within `MAX_NODES` objects, `MAX_BYTES` of array data and
`settings.MAX_FILES` files gives no picture (None): then every call gets a fresh fork, as if
nothing could be checked. What is not pictured (containers inside a library's modules changed
in place, an attribute replaced in a module the notebook never names, C-level state other
than the random generators, the checking code itself, and in a Jupyter kernel what is changed
in place inside its shell and its records of the cells, `KERNEL_MODULES`) is what a shared
process could carry; SECURITY.md says why that cannot earn a student a point.

Runs inside the call process: it imports nothing of the grader's but this package.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import sys
import types
from collections.abc import Hashable, Iterable
from typing import Any

from grader.sandbox.inside import settings

MAX_NODES = 50_000
"""Objects followed in one picture; a namespace that holds more gets a fork per call."""
MAX_BYTES = 4 << 20
"""Bytes of array data hashed in one picture; more, and a fork per call."""
WATCHED_MODULES = ("builtins", "sys", "os", "math", "random", "functools", "numpy",
                   "numpy.random", "numpy.linalg", "torch", "torch.nn",
                   "torch.nn.functional")
"""Modules pictured whether or not the notebook names them."""
KERNEL_MODULES = ("IPython.", "ipykernel.")
"""Where the classes of a Jupyter kernel's own objects live (`--engine kernel`). The kernel
puts its shell and its records of the cells in the notebook's globals (`get_ipython`, `exit`,
`In`, `Out`, `_`, `_5`, `_i5`..., the names IPython hides from `%who`): these are pictured by
identity, as is any object of these modules, not followed. Followed, the shell is tens of
thousands of objects (over `MAX_NODES`: every call would get a fork of its own) and `Out`
holds every output a cell showed (a long list shown once: 0.2 s a picture)."""
_IMMUTABLE = frozenset({
    type(None), bool, int, float, complex, str, bytes, range, type(Ellipsis), types.CodeType,
    types.BuiltinFunctionType, types.GetSetDescriptorType, types.MemberDescriptorType,
    types.WrapperDescriptorType, types.MethodDescriptorType})
"""Types whose objects never change: the same object is the same value."""


_CACHE = getattr(functools, "_lru_cache_wrapper", ())


class TooLarge(Exception):
    """The state is too large to picture within the limits."""


def digest(namespace: dict[str, Any]) -> Hashable | None:
    """A picture of everything a call could change that a later call could see; None when
    it is too large to take (then no two calls may share a process)."""
    try:
        walker = _Walker()
        walker.visit_globals(namespace, _kernel_records(namespace))
        # The interpreter first: reading numpy's random state imports numpy.random, a lazy
        # submodule, which the modules' picture must already hold (a Jupyter kernel has not
        # imported it: each picture would differ from the one before).
        interpreter = settings.interpreter()
        return tuple(walker.out), _modules(walker.modules), interpreter, settings.files()
    except Exception:  # too large, too deep, or an object whose attributes raise
        return None


def _kernel_records(namespace: dict[str, Any]) -> frozenset[str]:
    """The names a Jupyter kernel's shell keeps for itself in the globals (none outside a
    kernel: the fast engine's `get_ipython` is its own)."""
    shell = getattr(namespace.get("get_ipython"), "__self__", None)
    if not type(shell).__module__.startswith(KERNEL_MODULES):
        return frozenset()
    return frozenset(getattr(shell, "user_ns_hidden", ()))


class _Walker:
    """Follows the notebook's globals, writing what identifies their state to `out`."""

    def __init__(self) -> None:
        self.out: list[Hashable] = []
        self.seen: set[int] = set()
        self.modules: dict[int, types.ModuleType] = {}
        self.nodes = 0
        self.bytes = 0

    def visit(self, value: Any) -> None:
        out = self.out
        kind = type(value)
        out.append(id(value))
        if kind in _IMMUTABLE or id(value) in self.seen:
            return
        self.seen.add(id(value))
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise TooLarge
        out.append(id(kind))
        if isinstance(value, (list, tuple, set, frozenset)):
            out.append(len(value))
            self.visit_all(value)
        elif isinstance(value, dict):
            out.append(len(value))
            for key, item in list(value.items()):
                self.visit(key)
                self.visit(item)
        elif isinstance(value, types.ModuleType):
            self.modules[id(value)] = value
        elif isinstance(value, (bytearray, memoryview)):
            self.hash_bytes(bytes(value))
        else:
            self.visit_other(value, kind)

    def visit_globals(self, namespace: dict[str, Any], records: frozenset[str]) -> None:
        """The notebook's globals, as `visit` would, but with the `records` by identity."""
        if not records:
            self.visit(namespace)
            return
        self.seen.add(id(namespace))
        self.out += [id(namespace), len(namespace)]
        for key, value in list(namespace.items()):
            self.visit(key)
            if key in records:
                self.out.append(id(value))
            else:
                self.visit(value)

    def visit_all(self, values: Iterable[Any]) -> None:
        for item in list(values):
            self.visit(item)

    def hash_bytes(self, data: Any) -> None:
        self.bytes += len(data)
        if self.bytes > MAX_BYTES:
            raise TooLarge
        self.out.append(hashlib.blake2b(data, digest_size=16).digest())

    def visit_other(self, value: Any, kind: type) -> None:
        module = getattr(kind, "__module__", "") or ""
        if module == "numpy" and hasattr(value, "dtype") and hasattr(value, "strides"):
            self.array(value)
        elif module.startswith("torch") and hasattr(value, "_version"):
            self.out += [value._version, tuple(value.shape), str(value.dtype),
                         value.data_ptr() if hasattr(value, "data_ptr") else 0]
            self.visit(getattr(value, "__dict__", None))
        elif module.startswith(KERNEL_MODULES):
            pass  # the kernel's own shell, by identity (appended in `visit`)
        elif isinstance(value, types.FunctionType):
            self.function(value)
        elif isinstance(value, types.MethodType):
            self.visit(value.__func__)
            self.visit(value.__self__)
        elif isinstance(value, functools.partial):
            self.visit(value.func)
            self.visit(value.args)
            self.visit(value.keywords)
        elif isinstance(value, type):
            self.class_(value)
        elif isinstance(value, (types.GeneratorType, types.CoroutineType)):
            frame = getattr(value, "gi_frame", None) or getattr(value, "cr_frame", None)
            self.out.append(-1 if frame is None else frame.f_lasti)
        else:
            self.instance(value, kind)

    def array(self, value: Any) -> None:
        import numpy as np

        self.out += [value.shape, value.dtype.str, value.strides, value.flags.writeable]
        if value.dtype.hasobject:
            self.visit_all(value.flat)
        elif value.ndim:
            self.hash_bytes(np.ascontiguousarray(value).view(np.uint8).data)
        else:
            self.hash_bytes(value.tobytes())

    def function(self, value: types.FunctionType) -> None:
        self.out.append(id(value.__code__))
        self.visit(value.__defaults__)
        self.visit(value.__kwdefaults__)
        self.visit(value.__dict__)
        for cell in value.__closure__ or ():
            try:
                self.visit(cell.cell_contents)
            except ValueError:  # an empty cell
                self.out.append("empty")
        if not isinstance(value.__globals__, dict) or "__name__" not in value.__globals__:
            return
        module = sys.modules.get(value.__globals__["__name__"])
        if module is not None and module.__dict__ is value.__globals__:
            self.modules[id(module)] = module  # a library function: its module's globals

    def class_(self, value: type) -> None:
        if value.__module__ == "builtins":
            return
        for klass in value.__mro__[:-1]:  # not `object`
            self.seen.add(id(klass))
            self.out.append(id(klass))
            for key, item in list(vars(klass).items()):
                self.out.append(key)
                self.visit(item)

    def instance(self, value: Any, kind: type) -> None:
        if isinstance(value, _CACHE):  # functools.lru_cache and cache
            self.out.append(tuple(value.cache_info()))
            self.visit(value.__wrapped__)
            return
        state = _random_state(value, kind)
        if state is not None:
            self.out.append(_content(state))
            return
        self.class_(kind)
        attributes = getattr(value, "__dict__", None)
        if attributes is not None:
            self.visit(attributes)
        for name in getattr(kind, "__slots__", ()):
            self.visit(getattr(value, name, None))
        if kind.__module__ in ("builtins", "itertools", "collections") and not isinstance(
                value, type):
            hint = _length_hint(value)
            if hint is not None:
                self.out.append(hint)
            if kind.__module__ == "itertools":
                self.out.append(repr(value))  # count(5): how far it has counted


def _content(value: Any) -> Hashable:
    """A value made of plain data (a random generator's state), by content."""
    if isinstance(value, dict):
        return tuple((key, _content(item)) for key, item in sorted(value.items()))
    if isinstance(value, (tuple, list)):
        return tuple(_content(item) for item in value)
    if hasattr(value, "tobytes"):
        return hashlib.blake2b(value.tobytes(), digest_size=16).digest()
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


def _length_hint(value: Any) -> int | None:
    """How much is left of an iterator (a list's, a range's): it shrinks as it is used."""
    if not hasattr(type(value), "__length_hint__"):
        return None
    try:
        return operator.length_hint(value, -1)
    except Exception:
        return None


def _random_state(value: Any, kind: type) -> Any:
    """The state of a random generator (numpy's Generator and RandomState, Python's Random,
    torch's Generator), or None for anything else."""
    module = kind.__module__ or ""
    try:
        if module.startswith("numpy.random"):
            if hasattr(value, "bit_generator"):
                return value.bit_generator.state
            if hasattr(value, "get_state"):
                return value.get_state(legacy=False)
        if module == "random" and hasattr(value, "getstate"):
            return value.getstate()
        if module.startswith("torch") and kind.__name__ == "Generator":
            return value.get_state().numpy()
    except Exception:
        return None
    return None


def _modules(named: dict[int, types.ModuleType]) -> Hashable:
    """Every attribute of the modules named (and their submodules), and of WATCHED_MODULES,
    by identity; and which modules are imported."""
    chosen = dict(named)
    for module in list(named.values()):
        for value in list(vars(module).values()):
            if isinstance(value, types.ModuleType):
                chosen.setdefault(id(value), value)
    for name in WATCHED_MODULES:
        watched = sys.modules.get(name)
        if watched is not None:
            chosen.setdefault(id(watched), watched)
    pictures = []
    for key in sorted(chosen):
        attributes = vars(chosen[key])
        pictures.append((key, tuple(attributes), tuple(map(id, attributes.values()))))
    # Of every other module, how many attributes it has: one added anywhere is seen.
    sizes = tuple(len(getattr(module, "__dict__", ())) for module in list(sys.modules.values()))
    return tuple(pictures), tuple(sys.modules), sizes
