"""A folder of cloned student repositories (GitHub Classroom: `<assignment>-<user>`).

The student is a roster's name for the repository when one is given, or else the part of its
name after the prefix that all the repositories share (`hw1-alice` -> `alice`). The time is
the last commit's committer time. Git is run on a repository the student wrote, so nothing of
it is trusted: no hooks, no system or global configuration, no pager, no signature checks, no
prompts, a `.git` that is a real folder, and a time limit.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from grader.ingest.handed import Handed, Read, files_in, frozen

TIMEOUT_S = 10.0
SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*", "-c",
        "core.fsmonitor=false", "-c", "log.showSignature=false", "-c", "gpg.program=false",
        "-c", "core.pager=cat", "--no-pager")


def is_repository(folder: Path) -> bool:
    """Whether a folder is a cloned repository (its `.git` a real folder, not a link)."""
    git = folder / ".git"
    return not folder.is_symlink() and git.is_dir() and not git.is_symlink()


def looks_like(folder: Path) -> bool:
    """Whether the folders directly in a folder are all cloned repositories."""
    children = [c for c in folder.iterdir() if c.is_dir() and not c.name.startswith(".")]
    return bool(children) and all(is_repository(c) for c in children)


def _environment() -> dict[str, str]:
    """What git may see of ours: no configuration but the repository's own."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


def last_commit(repository: Path) -> tuple[datetime, str] | str:
    """The last commit's committer time and hash, or why they cannot be read."""
    # Absolute: git runs in the repository, where a relative path (`repos/`) means nothing.
    command = ["git", *SAFE, f"--git-dir={Path(os.path.abspath(repository)) / '.git'}",
               "log", "-1",
               "--format=%cI %H"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=TIMEOUT_S, check=False,
                              env=_environment(), cwd=repository, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return "git is not installed; install it to read the commit times"
    except subprocess.TimeoutExpired:
        return f"git log took more than {TIMEOUT_S:g} s"
    words = done.stdout.decode("ascii", "replace").split()
    if done.returncode != 0 or len(words) != 2:
        problem = " ".join(done.stderr.decode("utf-8", "replace").split())[:200]
        return f"git log failed ({problem or 'no commit'})"
    try:
        return datetime.fromisoformat(words[0]), words[1]
    except ValueError:
        return f"git log gave no time ({words[0][:40]!r})"


def common_prefix(names: list[str]) -> str:
    """The prefix all repository names share, up to and including its last `-`."""
    if len(names) < 2:
        return names[0].rsplit("-", 1)[0] + "-" if names and "-" in names[0] else ""
    shared = os.path.commonprefix(names)
    return shared[: shared.rfind("-") + 1]


def read(folder: Path, roster: Mapping[str, str] | None = None) -> Read:
    """Each repository's files, its student and its last commit."""
    repositories = sorted(c for c in folder.iterdir() if c.is_dir()
                          and not c.name.startswith("."))
    passed = [f"{c.name}: not a cloned repository (no .git folder); it was not graded"
              for c in repositories if not is_repository(c)]
    repositories = [c for c in repositories if is_repository(c)]
    prefix = common_prefix([c.name for c in repositories])
    handed = []
    for repository in repositories:
        name = repository.name
        student = (roster or {}).get(name) or name[len(prefix):]
        if not student:
            passed.append(f"{name}: no student name after the prefix {prefix!r}; give a "
                          "roster mapping for it")
            continue
        commit = last_commit(repository)
        if isinstance(commit, str):
            passed.append(f"{name}: {commit}; it was not graded")
            continue
        files, refused = files_in(repository, folder)
        passed += refused
        if not files:
            passed.append(f"{name}: no .ipynb or .py files in it")
            continue
        handed.append(Handed(
            student=student, files=tuple(files),
            names=tuple(p.relative_to(repository).as_posix() for p in files),
            submitted_at=commit[0],
            ids=frozen({"github_user": name[len(prefix):], "repository": name,
                        "git_commit": commit[1]}),
            display_name=student))
    return Read(tuple(handed), tuple(passed))
