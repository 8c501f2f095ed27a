"""Why a sandbox worker did not start, in a sentence that says what to do."""

from __future__ import annotations

import importlib.util
import sys


def not_installed(modules: tuple[str, ...]) -> list[str]:
    """The modules of a preload that this interpreter, the worker's, cannot import: a worker
    that preloads them dies before it says hello, and that is why."""
    return [name for name in modules if importlib.util.find_spec(name.split(".")[0]) is None]


def why(preload: tuple[str, ...], lost: str) -> str:
    """The message of a worker that was lost before it said hello: a preload that is not
    installed, named with its install, or else what was seen and where to look."""
    missing = not_installed(preload)
    if missing:
        how = (" (torch: `python3 -m pip install \"torch==2.13.0\" -e \".[torch]\"`)"
               if "torch" in missing else "")
        return (f"the sandbox worker did not start: it preloads {', '.join(missing)}, which is "
                f"not installed in this environment ({sys.prefix}); install it there{how}")
    return (f"the sandbox worker did not start ({lost}); run `grade doctor` to see what this "
            "machine allows")
