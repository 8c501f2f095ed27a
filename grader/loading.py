"""Loading a submission: a notebook or module file becomes a `Submission` of Python cells.

Nothing here runs student code. IPython syntax is turned into Python with IPython's own
transformer, and top-level shell escapes and unsupported magics are marked to be skipped.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import warnings
from pathlib import Path

from grader.errors import SubmissionError
from grader.model import Cell, Statement, Submission

RESAVE = "re-save it from Jupyter (File > Save) and hand it in again"
# Magics that do nothing harmful, or whose statement the worker runs itself (see worker.Shell).
RUNNABLE_MAGICS = frozenset({
    "matplotlib", "config", "load_ext", "reload_ext", "autoreload", "precision", "xmode",
    "time", "timeit", "capture", "who", "whos", "pprint", "aimport", "autosave", "notebook",
})
_AUTOMAGIC = re.compile(r"^(\s*)((?:pip|conda|mamba)\s+install\b)", re.MULTILINE)


def load(path: Path) -> Submission:
    """Read a `.ipynb` or `.py` file; raise SubmissionError naming the file and the fix."""
    name = str(path)
    if path.is_dir():
        raise SubmissionError.unreadable(name, "is a folder, not a file",
                                         "name the notebook or module inside it")
    try:
        data = path.read_bytes()
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
        return Submission(name, "module", (prepare_cell(1, text, automagic=False),),
                          sha256=sha)
    if path.suffix != ".ipynb":
        raise SubmissionError.unreadable(name, f"has the extension {path.suffix!r}",
                                         "hand in a .ipynb notebook or a .py module")
    cells, hint = _notebook_cells(name, text)
    return Submission(name, "notebook", cells, assignment_hint=hint, sha256=sha)


def _notebook_cells(name: str, text: str) -> tuple[tuple[Cell, ...], str | None]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SubmissionError.unreadable(
            name, f"not valid notebook JSON (line {exc.lineno}, column {exc.colno})",
            RESAVE) from None
    except RecursionError:
        raise SubmissionError.unreadable(name, "is JSON nested too deeply to be a notebook",
                                         RESAVE) from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise SubmissionError.unreadable(name, "is JSON but not a Jupyter notebook "
                                         "(no nbformat field)", RESAVE)
    major = raw.get("nbformat")
    if not isinstance(major, int) or not 3 <= major <= 4:
        raise SubmissionError.unreadable(name, f"has nbformat {major!r}, which is not 3 or 4",
                                         RESAVE)
    notebook = raw if major == 4 else _upgrade(name, text)
    raw_cells = notebook.get("cells")
    if not isinstance(raw_cells, list):
        raise SubmissionError.unreadable(name, "has no list of cells", RESAVE)
    cells = []
    for position, cell in enumerate(raw_cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise SubmissionError.unreadable(name, f"cell {position} has a source that is "
                                             "not text", RESAVE)
        cells.append(prepare_cell(position, source))
    hint = metadata_assignment(notebook.get("metadata"))
    return tuple(cells), hint


def _upgrade(name: str, text: str) -> dict:
    """An nbformat 3 notebook, upgraded to version 4 by nbformat itself."""
    import nbformat  # slow to import, and version 4 needs nothing from it

    try:
        with warnings.catch_warnings():
            # Old or sloppy notebooks make nbformat warn (missing cell ids); we grade them anyway.
            warnings.simplefilter("ignore")
            return dict(nbformat.reads(text, as_version=4))
    except Exception as exc:  # nbformat raises many types for malformed structure
        raise SubmissionError.unreadable(
            name, f"is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]})",
            RESAVE) from None


def metadata_assignment(metadata: object) -> str | None:
    """The assignment a notebook's metadata names: {"grader": {"assignment": ...}}."""
    if isinstance(metadata, dict):
        section = metadata.get("grader")
        if isinstance(section, dict) and isinstance(section.get("assignment"), str):
            return str(section["assignment"])
    return None


def to_python(source: str) -> str:
    """Turn IPython syntax (magics, `!` escapes, `pip install` automagic) into Python."""
    try:
        ast.parse(source)
        return source  # plain Python: most cells
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    source = _AUTOMAGIC.sub(r"\1%\2", source)
    # Imported here: IPython is slow to import, and most cells are plain Python.
    from IPython.core.inputtransformer2 import TransformerManager

    return str(TransformerManager().transform_cell(source))


def prepare_cell(index: int, source: str, automagic: bool = True) -> Cell:
    """Transform a cell's source and split it into top-level statements."""
    python = to_python(source) if automagic else source
    try:
        tree = ast.parse(python, filename=f"<cell {index}>")
    except SyntaxError as exc:
        return Cell(index, python, (), syntax_error=f"SyntaxError: {exc.msg} (line {exc.lineno})")
    except (ValueError, RecursionError, MemoryError) as exc:
        return Cell(index, python, (), syntax_error=f"cannot be parsed: {type(exc).__name__}")
    statements = tuple(Statement(i, node.lineno, skip_reason(node))
                       for i, node in enumerate(tree.body))
    return Cell(index, python, statements)


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
    if method in ("system", "getoutput"):
        return f"shell command `!{argument}` is never run by the grader"
    if method == "run_line_magic" and argument not in RUNNABLE_MAGICS:
        return f"magic `%{argument}` is never run by the grader"
    if method == "run_cell_magic" and argument not in RUNNABLE_MAGICS:
        return f"cell magic `%%{argument}` is never run by the grader"
    return None
