"""Loading a submission: a notebook or module file becomes a `Submission` of Python cells.

Nothing here runs student code. IPython syntax is turned into Python with IPython's own
transforms, and top-level shell escapes and unsupported magics are marked to be skipped.
Notebooks of an older format (1 to 3) are upgraded by nbformat itself; a notebook whose
metadata says it is written in another language (an R or Julia kernel) is refused.

Loading is linear in the size of the file: the sizes are checked before anything is parsed,
no regular expression can backtrack across lines, and IPython's transforms are driven in one
pass instead of by IPython's loop, which tokenizes the whole cell again after each magic.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import threading
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.errors import SubmissionError
from grader.pipeline import submissions
from grader.sandbox.limits import Limits, cap
from grader.submission import Cell, Statement, Submission
from grader.text import one_line

RESAVE = "re-save it from Jupyter (File > Save) and hand it in again"
# Magics that do nothing harmful, or whose statement the worker runs itself (see worker.Shell).
RUNNABLE_MAGICS = frozenset({
    "matplotlib", "config", "load_ext", "reload_ext", "autoreload", "precision", "xmode",
    "time", "timeit", "capture", "who", "whos", "pprint", "aimport", "autosave", "notebook",
})
# Linear: an attempt starts only at a line start, and [ \t] cannot match a line break, so no
# attempt leaves its line (`\s*` could, and made 60 KB of blank lines cost 25 s).
_AUTOMAGIC = re.compile(r"^([ \t]*)((?:pip|conda|mamba)[ \t]+install\b)", re.MULTILINE)
# IPython's `obj?` pattern backtracks quadratically; no real help target is this long.
HELP_CHARS = 200
# About IPython's own limit (it raises after 500 rounds); a course notebook has a few a cell.
MAX_TRANSFORMS = 500
# Characters the tokenizer may read per character of a cell, while transforming it.
TOKENIZE_FACTOR = 2
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
    notebook = raw if type(major) is int and major == 4 else _upgrade(name, text, major)
    check_language(name, notebook.get("metadata"), assignment)
    raw_cells = notebook.get("cells")
    if not isinstance(raw_cells, list):
        raise SubmissionError.unreadable(name, "has no list of cells", RESAVE)
    sources = []
    counts: list[int | None] = []
    for position, cell in enumerate(raw_cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise SubmissionError.unreadable(name, f"cell {position} has a source that is "
                                             "not text", RESAVE)
        sources.append((position, source))
        count = cell.get("execution_count")
        counts.append(count if type(count) is int and 0 < count < 1 << 31 else None)
    return sources, metadata_assignment(notebook.get("metadata")), counts


def _upgrade(name: str, text: str, major: object) -> dict:
    """A notebook of an older format (1, 2 or 3), upgraded to version 4 by nbformat itself;
    a version nbformat cannot read is refused, naming it."""
    import nbformat  # slow to import, and version 4 needs nothing from it

    readable = sorted(nbformat.versions)
    if type(major) is not int or major not in readable:
        raise SubmissionError.unreadable(
            name, f"has nbformat {_shown(major)}, which the grader's nbformat "
            f"{nbformat.__version__} cannot read (it reads versions {readable[0]} to "
            f"{readable[-1]})", "re-save it from Jupyter (File > Save) as a version "
            f"{nbformat.current_nbformat} notebook and hand it in again")
    try:
        with warnings.catch_warnings():
            # Old or sloppy notebooks make nbformat warn (missing cell ids); we grade them anyway.
            warnings.simplefilter("ignore")
            return dict(nbformat.reads(text, as_version=4))
    except Exception as exc:  # nbformat raises many types for malformed structure
        raise SubmissionError.unreadable(
            name, f"is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]})",
            RESAVE) from None


def _shown(value: object) -> str:
    """A JSON value as the file spells it, capped; a list or an object by its kind only."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return cap(json.dumps(value), 40)
    return "a list" if isinstance(value, list) else "an object"


# Kernel names that say the language when the metadata names none (old or hand-made files).
# Any other name may be a Python environment ("python3", "conda-env-torch-py", "myenv").
_KERNEL_LANGUAGES = {"ir": "R", "julia": "Julia", "ijulia": "Julia", "xcpp": "C++",
                     "octave": "Octave", "matlab": "MATLAB", "bash": "Bash",
                     "javascript": "JavaScript", "ijavascript": "JavaScript"}


def notebook_language(metadata: object) -> tuple[str, str] | None:
    """(kernel, language) of a notebook whose metadata says it is not Python; else None.

    The language is what `language_info.name` (written by the kernel that ran it) or
    `kernelspec.language` names. Any sign of Python in the metadata (those, or a `.py` file
    extension, a Python mimetype or lexer, as PySpark's kernel writes) makes it Python. Only
    when no language is named does a kernel name known to be another language's (`ir`,
    `julia-1.9`) decide; a notebook that says nothing is Python.
    """
    if not isinstance(metadata, dict):
        return None
    spec = _section(metadata, "kernelspec")
    info = _section(metadata, "language_info")
    mode = info.get("codemirror_mode")
    evidence = [info.get("name"), spec.get("language"), info.get("mimetype"),
                info.get("pygments_lexer"), mode.get("name") if isinstance(mode, dict) else mode]
    if info.get("file_extension") == ".py" or any(
            isinstance(value, str) and "python" in value.lower() for value in evidence):
        return None
    name = spec.get("name")
    kernel: str = name if isinstance(name, str) else ""
    named = [value.strip() for value in evidence[:2] if isinstance(value, str) and value.strip()]
    if named:
        return (kernel or named[0]), named[0]
    base = kernel.lower().split("-")[0]
    if base in _KERNEL_LANGUAGES:
        return kernel, _KERNEL_LANGUAGES[base]
    if kernel.lower().startswith("conda-") and kernel.lower().endswith("-r"):
        return kernel, "R"  # nb_conda_kernels names R environments conda-env-<env>-r
    return None


def _section(metadata: dict, key: str) -> dict:
    value = metadata.get(key)
    return value if isinstance(value, dict) else {}


def check_language(name: str, metadata: object, assignment: str | None = None) -> None:
    """Refuse a notebook written for another language than Python (see `notebook_language`)."""
    found = notebook_language(metadata)
    if found is None:
        return
    kernel, language = (cap(one_line(part), 60) for part in found)
    shown = kernel if kernel.lower() == language.lower() else f"{kernel} ({language})"
    needs = f"{assignment} needs Python" if assignment else "the grader runs Python"
    raise SubmissionError.unreadable(
        name, f"this notebook's kernel is {shown}; {needs}",
        "change its kernel to Python 3 (Kernel > Change Kernel), or paste the code into a "
        "Python notebook, run it there, save it and hand it in again")


def metadata_assignment(metadata: object) -> str | None:
    """The assignment a notebook's metadata names: {"grader": {"assignment": ...}}."""
    if isinstance(metadata, dict):
        section = metadata.get("grader")
        if isinstance(section, dict) and isinstance(section.get("assignment"), str):
            return str(section["assignment"])
    return None


_PARSING = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, one thread at a time. A batch grades in threads, and CPython 3.11 keeps
    the AST conversion's recursion depth per interpreter, not per thread: two threads parsing
    at once can fail with SystemError ("AST constructor recursion depth mismatch"), seen in a
    batch of 200 notebooks on 3.11.7, where it made the grader fail a submission."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def to_python(source: str) -> str:
    """Turn IPython syntax (magics, `!` escapes, `pip install` automagic) into Python.

    Raises TooMuchIPython for a cell whose IPython syntax is not worth the time to transform.
    """
    try:
        parse(source)
        return source  # plain Python: most cells
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    source = _AUTOMAGIC.sub(r"\1%\2", source)
    try:
        with _PARSING:  # IPython's transforms compile too
            return transform_cell(source)
    except TooMuchIPython:
        raise
    except Exception:  # IPython's transforms are not written for hostile input: whatever
        return source  # they raise, the cell stays as written and ast.parse reports it


class TooMuchIPython(ValueError):
    """A cell has more IPython syntax than the grader transforms; the message says what."""


def transform_cell(source: str) -> str:
    """What IPython's `TransformerManager().transform_cell` returns, in linear time.

    IPython finds the first magic, transforms it and tokenizes the whole cell again, up to 500
    times (then raises). Here the tokens are read once, logical line by logical line, with
    IPython's own finders and transforms; after a transform, tokenizing starts again on the
    line after it, which is what IPython's next round sees there too.
    """
    # Imported here: IPython is slow to import, and most cells are plain Python.
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()
    lines = (source if source.endswith("\n") else source + "\n").splitlines(keepends=True)
    for transform in manager.cleanup_transforms + manager.line_transforms:
        lines = transform(lines)
    return "".join(_OnePass(lines, manager.token_transformers).run())


class _OnePass:
    """IPython's token transforms applied to `lines` in one pass (see `transform_cell`)."""

    def __init__(self, lines: list[str], finders: list) -> None:
        self.lines = lines
        self.finders = list(finders)
        self.at = 0  # the next line the tokenizer reads
        self.transforms = 0
        # A magic line with an unclosed bracket makes the lines after it be read again.
        self.budget = TOKENIZE_FACTOR * sum(map(len, lines)) + 1000

    def run(self) -> list[str]:
        """The transformed lines."""
        done: list[str] = []
        start = 0
        while start < len(self.lines):
            settled, start = self._transform_first(start)
            done.extend(settled)
        return done

    def _readline(self) -> str:
        if self.at >= len(self.lines):
            return ""
        line = self.lines[self.at]
        self.at += 1
        self.budget -= len(line)
        if self.budget < 0:
            raise TooMuchIPython(
                "cannot be parsed: its magics or shell escapes leave brackets open, and "
                "reading the code after each of them again would take too long")
        return line

    def _transform_first(self, start: int) -> tuple[list[str], int]:
        """Transform the first IPython syntax from line `start` on: (the lines now settled,
        the line to go on from); all the rest is settled when nothing more can be done."""
        lines, self.at = self.lines, start
        try:
            for group in _logical_lines(tokenize.generate_tokens(self._readline)):
                found = [t for t in (finder.find([group]) for finder in self.finders) if t]
                if not found:
                    continue
                # The transforms get the group's own lines (copying from `start` would be
                # quadratic), so their line numbers move to count from its first line.
                first, end = group[0].start[0] - 1, group[-1].end[0]
                while start + end < len(lines) and lines[start + end - 1].endswith("\\\n"):
                    end += 1  # IPython's transforms join backslash continuations themselves
                window = lines[start + first:start + end]
                for candidate in sorted(found, key=lambda t: t.sortby()):
                    new = self._apply(candidate, first, window)
                    if new is not None:
                        self.transforms += 1
                        if self.transforms > MAX_TRANSFORMS:
                            raise TooMuchIPython(
                                f"cannot be parsed: more than {MAX_TRANSFORMS} magics, shell "
                                "escapes and help lines in one cell (IPython stops there too)")
                        # The transform replaced lines start_line..last by one line.
                        last = first + candidate.start_line + len(window) - len(new)
                        return (lines[start:start + first] + new[:candidate.start_line + 1],
                                start + last + 1)
                # Nothing here could be transformed. IPython would find a failed `obj?` first
                # in every later round, and so never transform help syntax after it.
                failed = [type(t) for t in found if _is_help(t)]
                self.finders = [f for f in self.finders if f not in failed]
        except IndentationError as exc:  # a dedent only the lines before `start` explain:
            if exc.lineno and exc.lineno > 1:  # go on from there with fresh indentation
                return lines[start:start + exc.lineno - 1], start + exc.lineno - 1
        return lines[start:], len(lines)

    @staticmethod
    def _apply(candidate: Any, first: int, window: list[str]) -> list[str] | None:
        """The window with the candidate transformed, or None when it cannot be."""
        candidate.start_line -= first
        if _is_help(candidate):
            candidate.q_line -= first
            # IPython's pattern for it backtracks quadratically; so long a target is not help.
            if sum(map(len, window[candidate.start_line:candidate.q_line + 1])) > HELP_CHARS:
                return None
        try:
            return list(candidate.transform(window))
        except SyntaxError:
            return None  # as IPython does: try the next candidate


def _is_help(candidate: Any) -> bool:
    """Whether a candidate is `obj?` help syntax (IPython's HelpEnd, which can fail)."""
    return hasattr(candidate, "q_line")


def _logical_lines(tokens: Iterator[tokenize.TokenInfo]) -> Iterator[list[tokenize.TokenInfo]]:
    """Tokens grouped by logical line, as IPython's `make_tokens_by_line` groups them."""
    group: list[tokenize.TokenInfo] = []
    depth = 0
    try:
        for token in tokens:
            group.append(token)
            if token.type == tokenize.NEWLINE or (token.type == tokenize.NL and depth <= 0):
                yield group
                group = []
            elif token.string in ("(", "[", "{"):
                depth += 1
            elif token.string in (")", "]", "}"):
                depth = max(depth - 1, 0)
    except tokenize.TokenError:
        pass  # the cell ends inside a bracket or a string: IPython looks at what came before
    if group:
        yield group


def prepare_cell(index: int, source: str, automagic: bool = True) -> Cell:
    """Transform a cell's source and split it into top-level statements."""
    try:
        python = to_python(source) if automagic else source
    except TooMuchIPython as exc:
        return Cell(index, source, (), syntax_error=str(exc))
    try:
        tree = parse(python, filename=f"<cell {index}>")
    except SyntaxError as exc:
        return Cell(index, python, (),
                    syntax_error=cap(f"SyntaxError: {exc.msg} (line {exc.lineno})"))
    except (ValueError, RecursionError, MemoryError) as exc:
        return Cell(index, python, (), syntax_error=f"cannot be parsed: {type(exc).__name__}")
    statements = tuple(Statement(i, node.lineno, skip_reason(node))
                       for i, node in enumerate(tree.body))
    return Cell(index, python, statements, imports=_imports(tree))


def _imports(tree: ast.Module) -> tuple[str, ...]:
    """The top-level packages that the import statements of `tree` name, anywhere in it."""
    names: set[str] = set()
    for node in ast.walk(tree):
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
