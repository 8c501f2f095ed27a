"""attention-grader: grade attention-mechanism exercises against hidden references."""

from __future__ import annotations

import os
from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "check"]


def check(target: Any, assignment: str | None = None, full: bool = False) -> None:
    """Run an exercise's public cases in this notebook and show what is wrong (see selfcheck);
    `full`: the whole report, not its summary.

    Inside the grader's sandbox it does nothing: only `grader.sandbox.inside` is there.
    """
    if os.environ.get("GRADER_SANDBOX"):
        return
    from grader.selfcheck import check as run_check

    run_check(target, assignment, depth=2, full=full)
