"""The commands about assignments and the machine rather than submissions: `grade list`,
`assign`, `release`, `validate`, `references` and `doctor`."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TextIO

from grader.course import registry


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    """`grade list`: the assignments, their functions and points."""
    for assignment in registry.assignments().values():
        out.write(f"{assignment.name}  ({assignment.max_score:g} points)  {assignment.title}\n")
        for exercise in assignment.exercises:
            public = sum(case.visibility.value == "public" for case in exercise.cases)
            earning = sum(case.earns_points for case in exercise.cases)
            unit = "pt" if exercise.points == 1 else "pts"
            worth = ("provided by the notebook, not scored" if exercise.provided
                     else f"{exercise.points:g} {unit}")
            split = f", {earning} hidden worth points" if not exercise.provided else ""
            out.write(f"  {exercise.name}{exercise.signature}  {worth}, "
                      f"{len(exercise.cases)} cases ({public} public{split})\n")
    return 0


def cmd_references(args: argparse.Namespace, out: TextIO) -> int:
    """`grade references build|verify`: exit 1 when stored references no longer match."""
    from grader.authoring import building

    names = args.assignments or list(registry.assignments())
    failed = 0
    for name in names:
        assignment = registry.get(name)
        if args.action == "build":
            hidden, public = building.build(assignment)
            out.write(f"{name}: wrote {hidden} and {public}\n")
            continue
        problems = building.verify(assignment)
        for problem in problems:
            out.write(f"{name}: {problem}\n")
        if not problems:
            out.write(f"{name}: references match solutions/{name}.py\n")
        failed += bool(problems)
    return 1 if failed else 0


def cmd_assign(args: argparse.Namespace, out: TextIO) -> int:
    """`grade assign`: every file of an assignment, from a master notebook."""
    from grader.authoring import assign
    from grader.course.layout import Layout

    for written in assign.assign(Path(args.master), Path(args.out)):
        out.write(f"{written.path}: {written.what}\n")
    variables = Layout(Path(args.out).resolve()).environment()  # from any folder
    if variables:
        out.write("to grade it, run in your shell:\n")
    for name, value in variables.items():
        out.write(f"export {name}={shlex.quote(value)}\n")
    return 0


def cmd_release(args: argparse.Namespace, out: TextIO) -> int:
    """`grade release`: what students receive."""
    from grader.authoring import release

    for path in release.release(registry.get(args.assignment), Path(args.out)):
        out.write(f"{path}\n")
    return 0


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    """`grade validate`: an assignment's authoring mistakes; exit 1 when there is one."""
    from grader.authoring import validate

    assignment = registry.get(args.assignment)
    found = validate.problems(assignment)
    for problem in found:
        out.write(f"{assignment.name}: {problem}\n")
    if not found:
        out.write(validate.summary(assignment) + "\n")
    return 1 if found else 0


def cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    """`grade doctor`: how this machine isolates student code; exit 1 when not confined."""
    from grader.sandbox import doctor

    found = doctor.findings()
    out.write(doctor.render(found))
    return 0 if doctor.confined(found) else 1
