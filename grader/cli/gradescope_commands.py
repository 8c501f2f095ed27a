"""The `grade gradescope` commands: `build` writes the autograder bundle, `run` grades inside
it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from grader import text
from grader.course import registry
from grader.pipeline import grading
from grader.report import terminal


def cmd_gradescope(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradescope build` writes the bundle; `grade gradescope run` grades inside it."""
    from grader.gradescope import autograder

    assignment = registry.get(args.assignment)
    if args.action == "build":
        names = autograder.build(assignment, Path(args.bundle))
        out.write(f"wrote {args.bundle} ({len(names)} files): upload it as the autograder\n")
        return 0
    result = autograder.run(assignment, grading.Options())
    out.write(terminal.render(result))
    # For the instructor (Gradescope hides stdout from students): how student code was held.
    out.write(f"Isolation: {text.visible(result.isolation or 'none: nothing was run')}\n")
    return 0
