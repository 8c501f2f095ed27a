"""Whether two checkouts of the grader write the same reports for the same submissions.

Run: python3 bench/same_reports.py BEFORE AFTER [--engine fast|kernel]
(BEFORE and AFTER are work trees of this repository, for example `git worktree add
../before <commit>`.) Every file of `tests/corpus/`, `exercises/` and `solutions/*.py` is graded
by `python3 -m grader run` from each tree, writing the JSON result, the HTML page and the
Markdown summary, and the terminal's text. They are compared after timings are taken out
("in 0.13 s", `duration_s`, "in 1.2 seconds"). Prints one line per file and the count of
differences; exits 1 when there is one. Also prints each tree's total wall time.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMINGS = [
    (re.compile(r"in \d+(\.\d+)? s\b"), "in T s"),
    (re.compile(r'"duration_s": [0-9.e+-]+'), '"duration_s": T'),
    (re.compile(r"in \d+(\.\d+)? seconds"), "in T seconds"),
    (re.compile(r"\d+(\.\d+)? ?ms\b"), "T ms"),
    # What %time prints, and how much a flood of prints got out before its time was up.
    (re.compile(r"CPU times: [^\n\\]*"), "CPU times: T"),
    (re.compile(r"Wall time: [^\n\\]*"), "Wall time: T"),
    (re.compile(r"\d+ more bytes of output were dropped"), "N more bytes of output were dropped"),
    (re.compile(r"(spam ?)+"), "spam..."),
]


def submissions(tree: Path) -> list[tuple[str, str]]:
    """(relative path, assignment) of every file to grade, found in `tree`."""
    found = []
    for path in sorted((tree / "tests" / "corpus").rglob("*")):
        if path.is_file():
            folder = path.parent.name
            found.append((str(path.relative_to(tree)),
                          "udl_attention" if folder == "broken" else folder))
    for folder in ("exercises", "solutions"):
        for path in sorted((tree / folder).glob("*.*")):
            if path.suffix in (".py", ".ipynb") and "master" not in path.name:
                name = path.stem.split("_12_")[0]
                found.append((str(path.relative_to(tree)), name))
    return found


def grade(tree: Path, relative: str, assignment: str, engine: str, out: Path) -> str:
    """Everything one run writes, timings taken out, as one text."""
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env["PYTHONPATH"] = str(tree)
    run = subprocess.run(
        [sys.executable, "-m", "grader", "run", "--assignment", assignment, relative,
         "--engine", engine, "--json", str(out / "r.json"), "--html", str(out / "r.html"),
         "--md", str(out / "r.md")],
        cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    parts = [f"exit {run.returncode}", run.stdout, run.stderr]
    for name in ("r.json", "r.html", "r.md"):
        file = out / name
        parts.append(file.read_text() if file.exists() else f"({name} not written)")
    text = "\n".join(parts).replace(str(out), "OUT")
    for pattern, replacement in TIMINGS:
        text = pattern.sub(replacement, text)
    return text


def main() -> None:
    """Compare the two trees' reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--engine", default="fast", choices=("fast", "kernel", "fresh"))
    args = parser.parse_args()
    files = submissions(args.after)
    differ = 0
    spent = {args.before: 0.0, args.after: 0.0}
    with tempfile.TemporaryDirectory() as scratch:
        for index, (relative, assignment) in enumerate(files):
            texts = []
            for tree in (args.before, args.after):
                started = time.perf_counter()
                texts.append(grade(tree.resolve(), relative, assignment, args.engine,
                                   Path(scratch) / str(index) / tree.name))
                spent[tree] += time.perf_counter() - started
            same = texts[0] == texts[1]
            differ += not same
            print(f"{'same' if same else 'DIFFERS'}  {relative}")
            if not same:
                diff = difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(),
                                            "before", "after", n=1, lineterm="")
                print("\n".join(line[:200] for line in list(diff)[:40]))
    print(f"{len(files)} submissions, {differ} differ; wall time: before "
          f"{spent[args.before]:.1f} s, after {spent[args.after]:.1f} s")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
