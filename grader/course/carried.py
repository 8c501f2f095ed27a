"""What a released notebook or module runs to check itself where attention-grader is missing.

`grade release` copies `unpack_self_check`'s source, as it is here, into each released notebook
(a cell of its own, before the cell that imports `check`) and module (at its end), followed by a
call with the bundle (`grader.authoring.embedding`): a zip, in base64, of the grader's own modules
that `check()` loads, verbatim, and of the assignment's check data, the `.check.npz` released
beside it. Run, it writes the zip into a new temporary folder, removed when the kernel or the
script exits (not when it is killed), puts the zip on `sys.path` when `grader` cannot be
imported (where attention-grader is installed, `from grader import check` uses it), and returns
the path of the check data: the caller keeps it in `__grader_check__`, where `check()` looks
for it.

It imports only the standard library and uses no syntax newer than Python 3.6 (its
annotations are strings), so that an old
Python or numpy, or a missing torch, is said in one sentence instead of a traceback: the check()
that follows prints that sentence again. Inside the grader's sandbox it does nothing: grading
never reads what a submission carries.
"""

from __future__ import annotations


def unpack_self_check(bundle: "str", requires: "tuple[str, ...]" = (),  # noqa: UP037
                      numpy: "tuple[int, int]" = (1, 24),  # noqa: UP037
                      python: "tuple[int, int]" = (3, 11)) -> "str | None":  # noqa: UP037
    """Unpack attention-grader's self-check (`bundle`: a zip, base64) for `from grader import
    check`; the path of the check data, or None where it cannot run (then check() says why).
    `numpy` and `python` are the oldest versions pyproject.toml accepts; `requires`, what the
    assignment needs besides numpy (torch)."""
    import atexit
    import base64
    import importlib.util
    import os
    import re
    import shutil
    import sys
    import tempfile
    import types
    import zipfile

    if os.environ.get("GRADER_SANDBOX"):
        return None  # being graded: the grader checks with its own data, never this copy
    installed = importlib.util.find_spec("grader") is not None
    missing = [name for name in ("numpy", *requires) if importlib.util.find_spec(name) is None]
    problem = ""
    if sys.version_info[:2] < python:
        problem = f"Python {python[0]}.{python[1]} or newer"
    elif missing:
        problem = " and ".join(missing)
    else:
        import numpy as np

        found = tuple(int(part) for part in re.findall(r"\d+", np.__version__)[:2])
        if found < numpy:
            problem = f"numpy {numpy[0]}.{numpy[1]} or newer (this is numpy {np.__version__})"
    if problem and not installed:
        sentence = (f"attention-grader's self-check needs {problem}: install it (`%pip install` "
                    "in a notebook, then restart the kernel) and run it again.")
        print(sentence)
        stand_in = types.ModuleType("grader")
        setattr(stand_in, "check", lambda *args, **kwargs: print(sentence))  # noqa: B010
        sys.modules["grader"] = stand_in
        return None
    data = base64.b64decode(bundle)
    folder = tempfile.mkdtemp(prefix="attention-grader-check-")
    atexit.register(shutil.rmtree, folder, True)  # removed when the kernel or script exits
    code = os.path.join(folder, "self-check.zip")
    with open(code, "wb") as file:
        file.write(data)
    with zipfile.ZipFile(code) as archive:
        name = [n for n in archive.namelist() if n.endswith(".check.npz")][0]
        archive.extract(name, folder)
    if not installed:
        sys.path.append(code)
    return os.path.join(folder, name)
