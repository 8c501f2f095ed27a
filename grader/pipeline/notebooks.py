"""Reading a notebook file: the one reader of `.ipynb` JSON, for grading, `check()` and authoring.

A notebook of version 4 is read as JSON, without nbformat (fast, and what students hand in);
one of an older format (1 to 3) is upgraded by nbformat itself. A notebook whose metadata says
it is written in another language (an R or Julia kernel) is refused. Every refusal is a
`SubmissionError` naming the file and the fix.
"""

from __future__ import annotations

import json
import warnings

from grader.errors import SubmissionError
from grader.text import cap, one_line

RESAVE = "re-save it from Jupyter (File > Save) and hand it in again"


def read(name: str, text: str, fix: str = RESAVE) -> dict:
    """A notebook's JSON as nbformat 4 (older versions upgraded); SubmissionError naming
    `name`, what is wrong and `fix` (a student's, by default) when it is not a notebook."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SubmissionError.unreadable(
            name, f"not valid notebook JSON (line {exc.lineno}, column {exc.colno})",
            fix) from None
    except RecursionError:
        raise SubmissionError.unreadable(name, "is JSON nested too deeply to be a notebook",
                                         fix) from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise SubmissionError.unreadable(name, "is JSON but not a Jupyter notebook "
                                         "(no nbformat field)", fix)
    major = raw.get("nbformat")
    notebook = raw if type(major) is int and major == 4 else _upgrade(name, text, major, fix)
    return notebook


def code_cells(name: str, notebook: dict) -> tuple[list[tuple[int, str]], list[int | None]]:
    """The (position, source) of each code cell, and each one's saved execution count (its
    `In [n]`, None when it never ran)."""
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
    return sources, counts


def _upgrade(name: str, text: str, major: object, fix: str) -> dict:
    """A notebook of an older format (1, 2 or 3), upgraded to version 4 by nbformat itself;
    a version nbformat cannot read is refused, naming it."""
    import nbformat  # slow to import, and version 4 needs nothing from it

    readable = sorted(nbformat.versions)
    if type(major) is not int or major not in readable:
        raise SubmissionError.unreadable(
            name, f"has nbformat {_shown(major)}, which the grader's nbformat "
            f"{nbformat.__version__} cannot read (it reads versions {readable[0]} to "
            f"{readable[-1]})", _as_version(fix, nbformat.current_nbformat))
    try:
        with warnings.catch_warnings():
            # Old or sloppy notebooks make nbformat warn (missing cell ids); we grade them anyway.
            warnings.simplefilter("ignore")
            return dict(nbformat.reads(text, as_version=4))
    except Exception as exc:  # nbformat raises many types for malformed structure
        raise SubmissionError.unreadable(
            name, f"is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]})",
            fix) from None


def _as_version(fix: str, version: int) -> str:
    """The fix for a notebook of a version nbformat cannot read: save it as `version`."""
    if fix == RESAVE:
        return f"re-save it from Jupyter (File > Save) as a version {version} notebook and " \
               "hand it in again"
    return f"{fix}, as a version {version} notebook"


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
