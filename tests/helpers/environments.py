"""Virtual environments made in seconds from what this environment has installed.

A test that needs "a fresh venv holding these packages and nothing else" gets one from
`venv_of`: a venv without pip, made from the interpreter that runs the tests, whose
site-packages holds hard links to the installed files of the named distributions and of what
they need in turn (read from their metadata), and nothing else. It is what `pip install` of
the same versions would give, without a download or a build: minutes on a busy machine,
where this takes seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def needed(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions these requirements name (extras and requirements whose
    markers this interpreter does not meet left out), and what they need in turn."""
    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(line) for line in requirements]
    while todo:
        requirement = todo.pop()
        key = canonicalize_name(requirement.name)
        if key in found or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        found[key] = metadata.distribution(requirement.name)
        todo += [Requirement(line) for line in found[key].requires or []]
    return list(found.values())


def install_from_here(distributions: list[metadata.Distribution], site: Path) -> None:
    """Put these installed distributions, files and metadata, into another environment's
    site-packages: hard links where the file system allows, copies where not. The sandbox binds
    an interpreter's own site-packages, so a path added by a .pth file would not do. Scripts in
    bin/ and data files outside site-packages (a kernelspec) are left out."""
    for distribution in distributions:
        for file in distribution.files or []:
            source = Path(str(distribution.locate_file(file)))
            if ".." in file.parts or not source.is_file():
                continue  # scripts in bin/, and what RECORD lists but was never written
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except FileExistsError:
                continue  # two distributions that list one file (a namespace's __init__)
            except OSError:  # another file system
                shutil.copy2(source, target)


def site_packages(python: Path) -> Path:
    """The site-packages folder of the environment whose interpreter is `python`."""
    return Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True,
                               timeout=60).stdout.strip())


def venv_of(folder: Path, requirements: list[str]) -> Path:
    """A venv in `folder`, of the interpreter running the tests, that holds these requirements
    as installed here and what they need, and nothing else, not even pip (this environment's
    installs into it: `pip --python`). Returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   timeout=300)
    python = folder / "bin" / "python"
    install_from_here(needed(requirements), site_packages(python))
    return python
