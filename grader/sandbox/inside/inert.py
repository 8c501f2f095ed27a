"""Statements that can only bind new names: a snapshot need not be taken before them.

After a cell that defines an exercise, the worker keeps the notebook's state as it was then
(a snapshot, so that the exercise can also be called as it was defined). Forking that copy
costs a few milliseconds, and most notebooks define their exercises in cells that hold only
definitions, so the worker forks it only before a statement that could change what the cell
left (`worker.Worker.op_exec`). A statement here runs none of the student's code and binds
names that were not bound: the state after it is the state before, plus those names, and a
call made in it with those names taken out (`hide`) sees what it would have seen right after
the cell. A name that shadows a builtin is taken out too, and the builtin is seen again.

Inert: `pass`; `def` with no decorator, with defaults made only of literals and annotations
made only of literals, names and attributes of modules (`np.ndarray`: no code of the
student's runs to read them); `name = literal`. Anything else (a call, an import, a class,
an assignment to a name already bound) is not, and the snapshot is taken before it runs; so
is every statement while a trace or profile hook or another thread is there, or a global's or
a builtin's name is not a plain string (`_quiet`).

What a statement cannot show is code the student set running before it that runs on its own:
an audit hook (which cannot be listed), a signal handler or timer, a finalizer that the
collector runs. Such code may make the state "as defined" differ from what an eager snapshot
would have held, as it may make the eager one differ from run to run; either way it is the
student's own code computing the answers, and nothing of the grader's is in reach.
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

_SIGNS = (ast.UAdd, ast.USub)


def binds_only(node: ast.stmt, namespace: dict[str, Any]) -> tuple[str, ...] | None:
    """The new names that `node` binds, when running it can do nothing else; None when it
    might run code or rebind a name that is bound in `namespace`."""
    try:
        return _binds_only(node, namespace) if _quiet(namespace) else None
    except Exception:  # whatever looking raised: not inert, the snapshot is taken
        return None


def _quiet(namespace: dict[str, Any]) -> bool:
    """Whether nothing of the student's runs beside a statement that only binds a name: no
    trace or profile hook, no other thread, and only plain strings as the names of the globals
    and builtins (a key of the student's own class runs its `__eq__` at every look-up)."""
    threading = sys.modules.get("threading")
    if sys.gettrace() is not None or sys.getprofile() is not None or (
            threading is not None and threading.active_count() > 1) or not _plain(namespace):
        return False
    found = namespace.get("__builtins__")  # only plain strings: no `__eq__` of the student's
    table = found if type(found) is dict else vars(found) if type(found) is types.ModuleType \
        else None
    return table is not None and _plain(table)


def _plain(table: dict[Any, Any]) -> bool:
    return all(type(key) is str for key in table)


def _binds_only(node: ast.stmt, namespace: dict[str, Any]) -> tuple[str, ...] | None:
    if isinstance(node, ast.Pass):
        return ()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names: tuple[str, ...] = (node.name,)
        if node.decorator_list or getattr(node, "type_params", None) \
                or not _signature_inert(node.args, node.returns, namespace):
            return None
    elif isinstance(node, ast.Assign):
        if not all(isinstance(target, ast.Name) for target in node.targets) \
                or not _literal(node.value):
            return None
        names = tuple(target.id for target in node.targets if isinstance(target, ast.Name))
    else:
        return None
    if any(name in namespace for name in names):
        return None  # rebinding a name changes what the cell's functions see
    return names


def _signature_inert(args: ast.arguments, returns: ast.expr | None,
                     namespace: dict[str, Any]) -> bool:
    """Whether evaluating a `def`'s defaults and annotations runs nothing of the student's."""
    defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs,
             *(a for a in (args.vararg, args.kwarg) if a is not None)]
    annotations = [a.annotation for a in every if a.annotation is not None]
    if returns is not None:
        annotations.append(returns)
    return all(map(_literal, defaults)) and all(
        _annotation_inert(a, namespace) for a in annotations)


def _literal(node: ast.expr) -> bool:
    """A constant, a signed number, or a tuple or list of literals."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _SIGNS):
        return isinstance(node.operand, ast.Constant) and isinstance(
            node.operand.value, (int, float, complex)) and not isinstance(
            node.operand.value, bool)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(map(_literal, node.elts))
    return False


def _annotation_inert(node: ast.expr, namespace: dict[str, Any]) -> bool:
    """A literal, a name (looked up among the globals and builtins, which `_quiet` found plain
    dictionaries of plain strings), or an attribute found in the own dictionary of a plain
    module (`np.ndarray`, `np.linalg.LinAlgError`)."""
    if _literal(node) or isinstance(node, ast.Name):
        return True
    if not isinstance(node, ast.Attribute):
        return False
    owner = _module_of(node.value, namespace)
    return owner is not None and _plain(vars(owner)) and node.attr in vars(owner)


def _module_of(node: ast.expr, namespace: dict[str, Any]) -> types.ModuleType | None:
    """The plain module (not a subclass's object, whose attributes may be code) that
    `node`, a name or a chain of attributes of modules, reads; None for anything else."""
    if isinstance(node, ast.Name):
        found = namespace.get(node.id)
    elif isinstance(node, ast.Attribute):
        owner = _module_of(node.value, namespace)
        found = None if owner is None or not _plain(vars(owner)) else vars(owner).get(node.attr)
    else:
        return None
    return found if type(found) is types.ModuleType else None
