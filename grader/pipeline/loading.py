"""Loading a submission: a notebook or module file becomes a `Submission` of Python cells.

Nothing here runs student code. A notebook is read by `notebooks` (older formats upgraded,
other languages refused), its IPython syntax turned into Python by `ipython_syntax`, and
top-level shell escapes and unsupported magics are marked to be skipped.

Loading is linear in the size of the file: the sizes are checked before anything is parsed,
no regular expression can backtrack across lines, and IPython's transforms are driven in one
pass (`ipython_syntax.transform_cell`).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from grader.errors import SubmissionError
from grader.pipeline import notebooks, submissions
from grader.pipeline.ipython_syntax import TooMuchIPython, parse, transform
from grader.pipeline.notebooks import RESAVE
from grader.sandbox.limits import Limits
from grader.submission import Cell, Statement, Submission
from grader.text import cap

# Magics that do nothing harmful, or whose statement the worker runs itself (see worker.Shell).
RUNNABLE_MAGICS = frozenset({
    "matplotlib", "config", "load_ext", "reload_ext", "autoreload", "precision", "xmode",
    "time", "timeit", "capture", "who", "whos", "pprint", "aimport", "autosave", "notebook",
})
MB = 1 << 20


def megabytes(size: int, limit_mb: float) -> str:
    """A size in MB, precise enough to be seen to be over `limit_mb`."""
    text = f"{size / MB:.1f}"
    return f"{text} MB" if float(text) > limit_mb else f"{size:,} bytes"


def load(path: Path, limits: Limits | None = None,
         assignment: str | None = None) -> Submission:
    """Read a `.ipynb` or `.py` file; raise SubmissionError naming the file and the fix.

    The size of the file, the code of each cell and of all cells, and the number of code
    cells are checked against `limits` before any cell is parsed, the number of statements
    after; outputs stored in a notebook count only towards the size of the file. A notebook
    of another language than Python is refused, naming `assignment` (the assignment it is
    graded for) when given.
    """
    limits = limits or Limits()
    name = str(path)
    if path.is_symlink():
        raise SubmissionError.unreadable(name, submissions.LINK, "hand in the file itself")
    if path.is_dir():
        raise SubmissionError.unreadable(name, "is a folder, not a file",
                                         "name the notebook or module inside it")
    try:
        size = path.stat().st_size
        if size > limits.submission_mb * MB:
            raise SubmissionError.unreadable(
                name, f"is {megabytes(size, limits.submission_mb)}, over the "
                f"{limits.submission_mb:g} MB limit for a submission file (--max-submission-mb)",
                "clear the outputs (Cell > All Output > Clear) and hand it in again")
        data = submissions.read_bytes(path)
    except OSError as exc:
        raise SubmissionError.unreadable(name, f"cannot be read ({exc.strerror})",
                                         "check that the file exists and is readable") from None
    sha = hashlib.sha256(data).hexdigest()
    if not data.strip():
        raise SubmissionError.unreadable(name, "is empty", RESAVE)
    if b"\x00" in data:
        raise SubmissionError.unreadable(name, "is binary data, not text", RESAVE)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SubmissionError.unreadable(
            name, f"is not UTF-8 text (byte {exc.start})", "save it as UTF-8") from None
    if path.suffix == ".py":
        check_code(name, [(1, text)], limits, module=True)
        module = (prepare_cell(1, text, automagic=False),)
        check_statements(name, module, limits)
        return Submission(name, "module", module, sha256=sha)
    if path.suffix != ".ipynb":
        raise SubmissionError.unreadable(name, f"has the extension {path.suffix!r}",
                                         "hand in a .ipynb notebook or a .py module")
    sources, hint, counts = _notebook_sources(name, text, assignment)
    check_code(name, sources, limits)
    cells = tuple(replace(prepare_cell(position, source), number=number, execution_count=count)
                  for number, ((position, source), count)
                  in enumerate(zip(sources, counts, strict=True), start=1))
    check_statements(name, cells, limits)
    return Submission(name, "notebook", cells, assignment_hint=hint, sha256=sha)


def check_code(name: str, sources: list[tuple[int, str]], limits: Limits,
               module: bool = False) -> None:
    """Refuse more code cells, or more code in a cell or in all, than `limits` allow."""
    if len(sources) > limits.code_cells:
        raise SubmissionError.unreadable(
            name, f"has {len(sources):,} code cells, over the limit of {limits.code_cells:,} "
            "(--max-code-cells)", "merge or delete scratch cells and hand it in again")
    total = 0
    for position, source in sources:
        size = len(source.encode("utf-8", "replace"))
        total += size
        if size > limits.cell_code_mb * MB:
            where = "has" if module else f"cell {position} has"
            raise SubmissionError.unreadable(
                name, f"{where} {megabytes(size, limits.cell_code_mb)} of code, over the "
                f"{limits.cell_code_mb:g} MB limit for one cell (--max-cell-code-mb)",
                "remove pasted data or generated code from it and hand it in again")
    if total > limits.code_mb * MB:
        raise SubmissionError.unreadable(
            name, f"has {megabytes(total, limits.code_mb)} of code, over the "
            f"{limits.code_mb:g} MB limit for all the code of a submission (--max-code-mb)",
            "remove pasted data, generated code and unused cells, and hand it in again")


def check_statements(name: str, cells: tuple[Cell, ...], limits: Limits) -> None:
    """Refuse more top-level statements than `limits` allow."""
    count = sum(len(cell.statements) for cell in cells)
    if count > limits.statements:
        raise SubmissionError.unreadable(
            name, f"has {count:,} top-level statements, over the limit of {limits.statements:,} "
            "(--max-statements)", "put repeated code in a loop or a function and hand it in "
            "again")


def _notebook_sources(name: str, text: str, assignment: str | None = None
                      ) -> tuple[list[tuple[int, str]], str | None, list[int | None]]:
    """The (position, source) of each code cell, the assignment the metadata names, and each
    code cell's saved execution count (its `In [n]`, None when it never ran)."""
    notebook = notebooks.read(name, text)
    notebooks.check_language(name, notebook.get("metadata"), assignment)
    sources, counts = notebooks.code_cells(name, notebook)
    return sources, notebooks.metadata_assignment(notebook.get("metadata")), counts


def prepare_cell(index: int, source: str, automagic: bool = True) -> Cell:
    """Transform a cell's source and split it into top-level statements. Plain Python (most
    cells) is parsed once."""
    filename = f"<cell {index}>"
    try:
        tree = parse(source, filename=filename)
        python = source
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        try:
            python = transform(source) if automagic else source
        except TooMuchIPython as exc:
            return Cell(index, source, (), syntax_error=str(exc))
        try:
            tree = parse(python, filename=filename)
        except SyntaxError as exc:
            return Cell(index, python, (),
                        syntax_error=cap(f"SyntaxError: {exc.msg} (line {exc.lineno})"))
        except (ValueError, RecursionError, MemoryError) as exc:
            return Cell(index, python, (),
                        syntax_error=f"cannot be parsed: {type(exc).__name__}")
    statements = tuple(Statement(i, node.lineno, skip_reason(node))
                       for i, node in enumerate(tree.body))
    return Cell(index, python, statements, imports=_imports(tree))


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields that hold statements (an `except` clause's and a `case`'s hold a body)."""


def _statements(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every statement among `nodes` and in their bodies, at any depth; never an expression,
    where no import can be (a list of 300,000 numbers is one statement, not 300,000 nodes)."""
    for node in nodes:
        yield node
        for field in _BODIES:
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)


def _imports(tree: ast.Module) -> tuple[str, ...]:
    """The top-level packages that the import statements of `tree` name, anywhere in it."""
    names: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.partition(".")[0])
    return tuple(sorted(names))


def _magic_call(node: ast.stmt) -> ast.Call | None:
    """The `get_ipython().method(...)` call a statement consists of, if it is one."""
    value = getattr(node, "value", None) if isinstance(node, (ast.Expr, ast.Assign)) else None
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Call)
            and isinstance(value.func.value.func, ast.Name)
            and value.func.value.func.id == "get_ipython"):
        return value
    return None


def skip_reason(node: ast.stmt) -> str | None:
    """Why the grader will not run a top-level statement, or None to run it."""
    call = _magic_call(node)
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    method = call.func.attr
    first = call.args[0] if call.args else None
    argument = str(first.value) if isinstance(first, ast.Constant) else "?"
    argument = cap(argument, 100)
    if method in ("system", "getoutput"):
        return f"shell command `!{argument}` is never run by the grader"
    if method == "run_line_magic" and argument not in RUNNABLE_MAGICS:
        return f"magic `%{argument}` is never run by the grader"
    if method == "run_cell_magic" and argument not in RUNNABLE_MAGICS:
        return f"cell magic `%%{argument}` is never run by the grader"
    return None
