"""The fast engine's stand-in for IPython's shell: what `get_ipython()` returns outside a kernel.

Jupyter gives a notebook `ipykernel`'s `ZMQInteractiveShell`. The stand-in does what it can
do exactly as Jupyter does (the namespace, `%time`, `%%capture`, `push`, `ev`, `ex`,
`display_formatter.format`, `input()` refused as a kernel without a frontend refuses it), does
nothing for what no report shows (`%matplotlib`, published displays), and for everything else
says in one line on stderr that it did not run it. It never raises an error Jupyter would not:
an attribute that Jupyter's shell has is there, as a harmless `Absent`; one it lacks raises
Jupyter's AttributeError.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import io
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from grader.sandbox.inside.displays import DisplayFormatter
from grader.sandbox.inside.import_hooks import patch_on_import

SHELL_MODULE = "IPython.core.getipython"
QUIET_MAGICS = frozenset({
    "matplotlib", "config", "load_ext", "reload_ext", "autoreload", "aimport", "autosave",
    "precision", "xmode", "pprint"})
"""Magics that print nothing in Jupyter and change nothing grading needs."""
NO_KERNEL = "the fast engine has no Jupyter kernel; --engine kernel runs one"


class StdinNotImplementedError(NotImplementedError):
    """What `input()` raises in a Jupyter kernel whose frontend takes no input, as nbclient's."""


def no_input(prompt: object = "") -> str:
    """`input()` as ipykernel has it when nobody can type: refused, with ipykernel's words."""
    raise StdinNotImplementedError(
        "raw_input was called, but this frontend does not support input requests.")


class Config(dict):  # type: ignore[type-arg]
    """`get_ipython().config`: traitlets' Config, whose capitalised attributes are sections."""

    def __getattr__(self, name: str) -> Any:
        if not name[:1].isupper():
            raise AttributeError(f"'Config' object has no attribute '{name}'")
        return self.setdefault(name, Config())

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


class Absent:
    """A part of Jupyter that the fast engine does not have (`get_ipython().kernel`): every
    attribute and item of it is another, and calling one does nothing, which it says when the
    notebook's own code calls it (a library probing for Jupyter is left in peace)."""

    def __init__(self, path: str, shell: ZMQInteractiveShell) -> None:
        self._path = path
        self._shell = shell

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probe these
        return Absent(f"{self._path}.{name}", self._shell)

    def __getitem__(self, key: object) -> Absent:
        return Absent(f"{self._path}[{key!r}]", self._shell)

    def __setitem__(self, key: object, value: object) -> None:
        """Nothing to change: there is no such part."""

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if sys._getframe(1).f_globals is self._shell.user_ns:
            self._shell.note(f"{self._path}(): {NO_KERNEL}")

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return True  # it exists in Jupyter

    def __repr__(self) -> str:
        return f"<{self._path}: not in the fast engine>"


class DisplayPublisher:
    """`get_ipython().display_pub`: publishes nothing, as `display()` shows nothing here."""

    def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        """Nobody looks at displays when grading."""

    def clear_output(self, wait: bool = False) -> None:
        """Nothing shown, nothing to clear."""


class EventManager:
    """`get_ipython().events`: callbacks are kept and run when triggered, but the fast engine
    runs statements, not cells, so it never triggers the cell events itself."""

    def __init__(self, shell: ZMQInteractiveShell) -> None:
        self._shell = shell
        self.callbacks: dict[str, list[Callable[..., Any]]] = {}

    def register(self, event: str, function: Callable[..., Any]) -> None:
        self.callbacks.setdefault(event, []).append(function)
        if getattr(function, "__globals__", None) is self._shell.user_ns:
            self._shell.note(f"get_ipython().events.register({event!r}, ...): the fast engine "
                             "runs no cell events; --engine kernel does")

    def unregister(self, event: str, function: Callable[..., Any]) -> None:
        try:
            self.callbacks.get(event, []).remove(function)
        except ValueError:
            raise ValueError(f"Function {function!r} is not registered as a {event} "
                             "callback") from None

    def trigger(self, event: str, *args: Any, **kwargs: Any) -> None:
        for function in list(self.callbacks.get(event, [])):
            function(*args, **kwargs)


class CapturedIO:
    """What `%%capture name` stores: the cell's stdout and stderr (displays show nothing)."""

    def __init__(self, stdout: io.StringIO | None, stderr: io.StringIO | None) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self.outputs: list[Any] = []

    @property
    def stdout(self) -> str:
        return self._stdout.getvalue() if self._stdout is not None else ""

    @property
    def stderr(self) -> str:
        return self._stderr.getvalue() if self._stderr is not None else ""

    def show(self) -> None:
        """Write out what was captured, as IPython's `CapturedIO.show` does."""
        sys.stdout.write(self.stdout)
        sys.stdout.flush()  # before stderr, which is not buffered
        sys.stderr.write(self.stderr)

    __call__ = show

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class ZMQInteractiveShell:
    """What `get_ipython()` returns in the fast engine. The name is Jupyter's, so that code
    that asks whether it runs in a notebook (tqdm, `'IPKernelApp' in get_ipython().config`)
    gets the answer it gets under Jupyter."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.user_ns = self.user_global_ns = namespace
        self.kernel = Absent("get_ipython().kernel", self)
        self.config = Config(IPKernelApp=Config(), InteractiveShell=Config())
        self.display_pub = DisplayPublisher()
        self.display_formatter = DisplayFormatter()
        self.events = EventManager(self)
        self._noted: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and _jupyter_has(name):
            return Absent(f"get_ipython().{name}", self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def note(self, what: str) -> None:
        """Say once on stderr that something was not run, and why."""
        if what not in self._noted:
            self._noted.add(what)
            print(f"[grader] not run: {what[:200]}", file=sys.stderr)

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1) -> Any:
        if magic_name == "time":
            return self._time(line, cell=False)
        if magic_name == "timeit":
            return self._time_once(line)
        if magic_name not in QUIET_MAGICS:
            self.note(f"%{magic_name}")
        return None

    def run_cell_magic(self, magic_name: str, line: str, cell: str) -> Any:
        if magic_name == "time":
            return self._time(cell, cell=True)
        if magic_name == "timeit":
            return self._time_once(cell)
        if magic_name == "capture":
            return self._capture(line, cell)
        self.note(f"%%{magic_name}")
        return None

    def magic(self, arg_s: str) -> Any:
        """IPython's deprecated `magic("name args")`, warning as IPython does."""
        warnings.warn("`magic(...)` is deprecated since IPython 0.13 (warning added in 8.1), "
                      "use run_line_magic(magic_name, parameter_s).", DeprecationWarning,
                      stacklevel=2)
        name, _, rest = arg_s.partition(" ")
        return self.run_line_magic(name.lstrip("%"), rest)

    def system(self, cmd: str) -> None:
        self.note(f"!{cmd}")

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> list[str]:
        self.note(f"!{cmd}")
        return []

    def push(self, variables: dict[str, Any] | str | list[str],
             interactive: bool = True) -> None:
        """Put variables into the notebook's namespace: a dict, or names of the caller's."""
        if isinstance(variables, dict):
            self.user_ns.update(variables)
            return
        names = variables.replace(",", " ").split() if isinstance(variables, str) \
            else list(variables)
        caller = sys._getframe(1)
        for name in names:
            try:
                self.user_ns[name] = eval(name, caller.f_globals, caller.f_locals)
            except Exception:
                print(f"Could not get variable {name} from {caller.f_code.co_name}",
                      file=sys.stderr)

    def ev(self, expr: str) -> Any:
        """Evaluate `expr` in the notebook's namespace."""
        return eval(expr, self.user_ns)

    def ex(self, cmd: str) -> None:
        """Run `cmd` in the notebook's namespace."""
        exec(compile(cmd, "<string>", "exec", dont_inherit=True), self.user_ns)

    def _run(self, source: str, filename: str, cell: bool) -> Any:
        """Run source as IPython would: transformed, and the value of a lone expression
        returned."""
        tree = ast.parse(_python(source))
        if not cell and len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
            return eval(compile(ast.Expression(tree.body[0].value), filename, "eval",
                                dont_inherit=True), self.user_ns)
        exec(compile(tree, filename, "exec", dont_inherit=True), self.user_ns)
        return None

    def _time(self, source: str, cell: bool) -> Any:
        """`%time`: run it, then print the CPU and wall times in IPython's words (an error
        propagates, and nothing is printed, as in IPython)."""
        before, wall = os.times(), time.perf_counter()
        value = self._run(source, "<timed exec>", cell)
        wall, after = time.perf_counter() - wall, os.times()
        user, system = after.user - before.user, after.system - before.system
        print(f"CPU times: user {_duration(user)}, sys: {_duration(system)}, "
              f"total: {_duration(user + system)}")
        print(f"Wall time: {_duration(wall)}")
        return value

    def _time_once(self, source: str) -> None:
        """`%timeit`, run once: grading has no time for a thousand loops, and says so in
        IPython's format for one run of one loop. Its options (`-n 10 -r 3 -o -q ...`) are
        read and left aside: they only say how often to run it."""
        source = _TIMEIT_OPTIONS.sub("", source, count=1)
        wall = time.perf_counter()
        self._run(source, "<magic-timeit>", cell=True)
        print(f"{_duration(time.perf_counter() - wall)} ± 0 ns per loop (mean ± std. dev. of "
              "1 run, 1 loop each)")

    def _capture(self, line: str, cell: str) -> None:
        """`%%capture [--no-stdout] [--no-stderr] [--no-display] [name]`."""
        words = line.split()
        stdout = None if "--no-stdout" in words else io.StringIO()
        stderr = None if "--no-stderr" in words else io.StringIO()
        saved = sys.stdout, sys.stderr
        sys.stdout = stdout or sys.stdout
        sys.stderr = stderr or sys.stderr
        try:
            self._run(cell, "<capture>", cell=True)
        finally:
            sys.stdout, sys.stderr = saved
        names = [word for word in words if not word.startswith("-")]
        if names:
            self.user_ns[names[-1]] = CapturedIO(stdout, stderr)


def _python(source: str) -> str:
    """A magic's code, with its own IPython syntax (`!pip` under `%%capture`) made Python."""
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        pass
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source
    return str(TransformerManager().transform_cell(source))


def _duration(seconds: float) -> str:
    """A duration as IPython's `%time` writes it: three digits and a unit."""
    units = (("s", 1.0), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9))
    order = min(-(math.floor(math.log10(seconds)) // 3), 3) if seconds > 0 else 3
    unit, scale = units[max(order, 0)]  # a minute or more is still written in seconds
    return f"{seconds * scale:.3g} {unit}"


_JUPYTER_CLASS: Any = None


def _jupyter_has(name: str) -> bool:
    """Whether Jupyter's shell has an attribute `name`: then a notebook may use it without
    error. Asked of ipykernel itself (imported on the first such question only, as it takes
    half a second); where it cannot be imported, every public name is taken to exist."""
    global _JUPYTER_CLASS
    if _JUPYTER_CLASS is None:
        try:
            from ipykernel import zmqshell

            _JUPYTER_CLASS = zmqshell.ZMQInteractiveShell
        except Exception:  # no ipykernel here, or one that fails to import
            _JUPYTER_CLASS = False
    return _JUPYTER_CLASS is False or hasattr(_JUPYTER_CLASS, name)


SHELL: ZMQInteractiveShell | None = None


def get_ipython() -> ZMQInteractiveShell | None:
    """The notebook's shell: one object, as in Jupyter."""
    return SHELL


def install(namespace: dict[str, Any]) -> None:
    """Give the notebook in `namespace` the stand-in: `get_ipython()` (also IPython's own,
    when it is imported) and ipykernel's `input()`."""
    global SHELL
    SHELL = ZMQInteractiveShell(namespace)
    namespace["get_ipython"] = get_ipython
    builtins.input = no_input
    # `from IPython import get_ipython` gives the stand-in, as Jupyter gives its shell: the
    # package takes the name from `IPython.core.getipython`.
    patch_on_import(SHELL_MODULE, _patch)


def _patch(module: Any) -> None:
    module.get_ipython = get_ipython
    package = sys.modules.get("IPython")
    if package is not None and hasattr(package, "get_ipython"):
        setattr(package, "get_ipython", get_ipython)  # noqa: B010 - a module's attribute


_TIMEIT_OPTIONS = re.compile(r"^\s*(?:-[nrp]\s*\d+\s+|-[oqtc]\s+)*")


def _ipython_major() -> int:
    """The installed IPython's major version, read from the `_version_major` line of its
    `IPython/core/release.py`, which no import runs: importing IPython takes a second, and
    reading its metadata (`importlib.metadata`) a tenth of numpy's import, in the start of
    every zygote. The stand-in has what that version's shell has; 0 when it is not
    installed."""
    try:
        spec = importlib.util.find_spec("IPython")
    except (ImportError, ValueError):
        return 0
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(os.path.join(folder, "core", "release.py"), encoding="utf-8") as stream:
                found = re.search(r"^_version_major\s*=\s*(\d+)", stream.read(), re.MULTILINE)
        except OSError:
            continue
        if found:
            return int(found[1])
    return 0


if _ipython_major() >= 9:  # IPython 9 removed the deprecated `magic()`: Jupyter lacks it too
    del ZMQInteractiveShell.magic
