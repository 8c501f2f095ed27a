"""The leak scan: from inside the sandbox, nothing hidden can be read anywhere.

A submission walks every readable file of the whole filesystem it can see, and looks for 16
bytes of any hidden reference array (raw, or inside a zip or npz), any distinctive line of a
solution module, and any `.git` folder (`tests/leakscan.py`). It runs four ways: the grader
installed editable (as README.md says) and as a regular wheel, each as root and as a normal
user created here. The same scan run on the project itself, outside the sandbox, finds all
three kinds of leak: the scan can fail.

What the sandbox shows is mostly the same files four times (the interpreter, its packages,
the system's libraries): they are read once, here, outside the sandbox (`known`; a file that
is as its package installed it is hashed, not searched), and each scan inside reads only the
files it finds that this reading did not find clean, and opens the others to count them
(`tests/leakscan.py` says how a file is known to be the same).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pwd
import py_compile
import shutil
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from grader.sandbox import isolation
from tests import leakscan
from tests.conftest import ROOT
from tests.helpers.environments import venv_of
from tests.helpers.scanning import (
    hidden_needles,
    installed_files,
    locked_folders,
    make_passable,
    solution_lines,
    stash_room,
)

USER = "graderscan"
SCAN_SECONDS = 280
CODE_MB = 8
"""The scan's code limit (`--max-cell-code-mb`, `--max-code-mb`): the known files' identities
make it a module of about 1 MB, over the default limit for one module."""
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * (SCAN_SECONDS + 60))]
"""A scan's test waits for its scan, and the first also for `known`'s reading: more than the
suite's 300 s on a busy machine."""


def _pyproject() -> dict:
    """The project's pyproject.toml, read."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def known() -> str:
    """The identities of the files the sandbox shows (`isolation.visible`: the interpreter,
    its packages, the system's libraries) that a scan reads here and finds clean, in base64
    (`leakscan.main`'s `known`). A file with a leak is left out: a scan inside reads it. What
    a package installed as it recorded it (`installed_files`) is hashed, not searched: 3 GB
    took a minute of CPU to search, and takes 17 s so."""
    binds = isolation.visible()[0]
    sites = [top for top in binds if os.path.isdir(top)]
    vouched = installed_files(sites, _pyproject()["project"]["name"])
    scan = leakscan.Scan(hidden_needles(), solution_lines(), record=True, vouched=vouched)
    for top in binds:
        if any(Path(other) in Path(top).parents for other in binds):
            continue  # the standard library's folder holds site-packages
        if os.path.isdir(top):
            scan.walk(top)
        else:
            scan.file(top)
    assert scan.clean, "the scan found no clean file to share"
    return base64.b64encode(b"".join(sorted(scan.clean))).decode()


@pytest.fixture(scope="module")
def scanner(known) -> Path:
    """The scan as a submission, in a folder every user can read."""
    folder = Path(tempfile.mkdtemp(prefix="leakscan-"))
    folder.chmod(0o755)
    source = (f"NEEDLES = {hidden_needles()!r}\nLINES = {solution_lines()!r}\n"
              f"KNOWN = {known!r}\n"
              + Path(leakscan.__file__).read_text() + "\nmain(NEEDLES, LINES, known=KNOWN)\n")
    path = folder / "scan_udl_attention.py"
    path.write_text(source)
    path.chmod(0o644)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _unmet_build_requirements() -> list[str]:
    """pyproject.toml's build requirements that this environment does not meet, each with
    what it has instead."""
    unmet = []
    pyproject = _pyproject()
    for line in pyproject["build-system"]["requires"]:
        requirement = Requirement(line)
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            unmet.append(f"{line} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{line} ({version} installed)")
    return unmet


def test_the_dev_extra_meets_the_build_requirements():
    """The wheel below is built offline with this environment's own build tools: installing
    the dev extra, as README.md says, is what provides them."""
    pyproject = _pyproject()
    dev = {canonicalize_name(Requirement(line).name): Requirement(line)
           for line in pyproject["project"]["optional-dependencies"]["dev"]}
    for line in pyproject["build-system"]["requires"]:
        built_with = Requirement(line)
        given = dev.get(canonicalize_name(built_with.name))
        assert given is not None, f"the dev extra does not name {line}"
        oldest = min((spec.version for spec in given.specifier if spec.operator == ">="),
                     default="0")
        assert built_with.specifier.contains(oldest), (line, str(given))
    assert _unmet_build_requirements() == [], 'python3 -m pip install -e ".[dev]"'


@pytest.fixture(scope="module")
def wheel_python(tmp_path_factory) -> Path:
    """A virtual environment with the grader installed from a wheel, and what it needs taken
    from this environment: never from the base interpreter's site-packages, which a venv
    made from a bare interpreter does not share. The wheel is built offline, with this
    environment's setuptools (the dev extra's)."""
    unmet = _unmet_build_requirements()
    assert not unmet, (f"pyproject.toml's build requirements are not met here: "
                       f"{', '.join(unmet)}; install the dev extra: "
                       'python3 -m pip install -e ".[dev]"')
    folder = Path(tempfile.mkdtemp(prefix="leakscan-wheel-"))
    folder.chmod(0o755)
    # Built from a copy of what the wheel holds: setuptools builds in the source's own build/
    # folder, where two builds at once (two pytest-xdist workers) would collide.
    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "grader", source / "grader",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(folder / "dist"), str(source)], check=True)
    project = _pyproject()["project"]
    python = venv_of(folder / "venv", project["dependencies"])
    wheel = next((folder / "dist").glob("attention_grader-*.whl"))
    # This environment's pip installs into the venv (`--python`), as the venv's own would:
    # a pip of the venv's own would cost a second install (ensurepip, 4 s of CPU) and be
    # scanned too.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, env=_own_imports())
    located = subprocess.run([str(python), "-c", "import grader; print(grader.__file__)"],
                             capture_output=True, text=True, cwd=folder, check=True,
                             env=_own_imports())
    assert located.stdout.startswith(str(folder / "venv")), located.stdout
    yield python
    shutil.rmtree(folder, ignore_errors=True)


def _own_imports() -> dict[str, str]:
    """This environment without PYTHONPATH: an interpreter other than this one imports the
    grader it has installed, whatever folder the suite puts first on its own path, and pip
    installs the wheel into it (a project folder on the path, with the metadata of an earlier
    build in it, would tell pip that the grader is installed already)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def _as_user(command: list[str], reach: list[Path], stash: Path) -> list[Path]:
    """`command` run as a normal user created here, able to reach every path in `reach` (the
    interpreter, the project, the scan) even where a folder on the way is private (its
    stash, `scanning.make_passable`'s, in `stash`)."""
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", USER], check=True)
    user = f"setpriv --reuid={USER} --regid={USER} --clear-groups"
    inner = " ".join(f"'{part}'" for part in command)
    locked = locked_folders(reach)
    if not locked:
        return ["sh", "-c", f"exec {user} {inner}"]
    script = f"{make_passable(locked, reach, stash)} && exec {user} {inner}"
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def _scan(python: Path, scanner: Path, as_user: bool, cwd: Path) -> tuple[dict, str]:
    """The scan graded by `python -m grader run`, as root or as the normal user; its folders
    are removed whatever happens."""
    out = Path(tempfile.mkdtemp(prefix="leakscan-out-"))
    out.chmod(0o777)
    command = [str(python), "-m", "grader", "run", str(scanner), "--assignment",
               "udl_attention", "--timeout", str(SCAN_SECONDS), "--json", str(out / "r.json"),
               "--max-cell-code-mb", str(CODE_MB), "--max-code-mb", str(CODE_MB)]
    editable = python == Path(sys.executable)
    env = dict(os.environ if editable else _own_imports(),
               GRADER_SOLUTIONS=str(ROOT / "solutions"), HOME=str(out))
    with stash_room() as stash:
        try:
            if as_user and os.geteuid() == 0:
                reach = [python.parent, python.resolve(), Path(sys.base_prefix),
                         Path(sys.prefix), ROOT, scanner, out]
                command = _as_user(command, reach, stash)
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=SCAN_SECONDS + 60)
            assert done.returncode == 0, done.stderr[-2000:]
            result = json.loads((out / "r.json").read_text())
        finally:
            shutil.rmtree(out, ignore_errors=True)
    assert not out.exists() and not stash.exists(), "the scan left its folders behind"
    return result, result["output"]


def _check(result: dict, output: str, as_user: bool) -> None:
    lines = output.splitlines()
    assert [line for line in lines if line.startswith("LEAK")] == []
    summary = next(line for line in lines if line.startswith("SCANNED")).split()
    files, size, known = int(summary[1]), int(summary[2]), int(summary[4])
    assert files > 1000 and size > 50 << 20, summary  # numpy alone is more than this
    # Most of what it saw had been read outside the sandbox (`known`): the rest, read here.
    assert known > files // 2, summary
    assert "a private read-only root" in result["isolation"]
    who = "a nested user namespace" if as_user else "an unprivileged user of its own"
    assert who in result["isolation"]
    # The default engine forked the worker from the zygote, as root and as a normal user
    # (whose zygote runs in a user namespace of its own).
    assert result["worker"] == "zygote", result["isolation"]


@pytest.mark.parametrize("as_user", [False, True], ids=["root", "user"])
def test_editable_install_leaks_nothing(scanner, as_user):
    if os.geteuid() != 0 and not as_user:
        pytest.skip("the root variant needs root; the user variant runs as this user")
    # From the project folder: `python -m grader` puts it on sys.path, yet it stays unseen.
    result, output = _scan(Path(sys.executable), scanner, as_user, cwd=ROOT)
    _check(result, output, as_user)


@pytest.mark.parametrize("as_user", [False, True], ids=["root", "user"])
def test_wheel_install_leaks_nothing(scanner, wheel_python, as_user):
    if os.geteuid() != 0 and not as_user:
        pytest.skip("the root variant needs root; the user variant runs as this user")
    result, output = _scan(wheel_python, scanner, as_user, cwd=wheel_python.parents[2])
    _check(result, output, as_user)


def test_the_scan_finds_every_kind_of_leak_outside_the_sandbox(capsys):
    scan = leakscan.main(hidden_needles(), solution_lines(), top=str(ROOT))
    kinds = {kind for kind, _ in scan.found}
    assert kinds == {"array", "line", "git"}, scan.found
    paths = {path for _, path in scan.found}
    assert str(ROOT / ".git") in paths
    assert any(path.startswith(str(ROOT / "solutions" / "references")) for path in paths)
    assert str(ROOT / "solutions" / "udl_attention.py") in paths


def test_files_known_clean_are_not_read_again_and_never_hide_a_leak(capsys):
    """A recording scan keeps the files it found nothing in; a scan given them opens them
    without reading them, and still reads, and reports, every file with a leak."""
    needles, lines = hidden_needles(), solution_lines()
    first = leakscan.Scan(needles, lines, record=True)
    first.walk(str(ROOT))
    leaky = {path.split(":")[0] for kind, path in first.found if kind != "git"}
    assert str(ROOT / "solutions" / "udl_attention.py") in leaky and first.skipped == 0
    assert len(first.clean) > 100
    known = base64.b64encode(b"".join(first.clean)).decode()
    again = leakscan.main(needles, lines, top=str(ROOT), known=known)
    assert sorted(again.found) == sorted(first.found)
    # Every file but those with a leak was known; those were read again.
    assert len(first.found) < leakscan.MAX_REPORTS
    assert (again.skipped, again.files - again.skipped) == (len(first.clean), len(leaky))
    assert (again.files, again.bytes, again.unreadable) == (
        first.files, first.bytes, first.unreadable)


def test_a_file_is_vouched_for_only_as_its_package_installed_it(tmp_path):
    """A recording scan hashes, instead of searching, a file whose bytes have the hash its
    package recorded, and a `__pycache__` file compiled from such a source; a file changed
    since (another hash) and a compiled file older than its source are searched, and their
    leaks found. The grader's own distribution is never vouched for."""
    needle = bytes.fromhex(hidden_needles()[0])
    changed, honest = tmp_path / "changed.so", tmp_path / "honest.so"
    changed.write_bytes(b"x" * 100 + needle)
    honest.write_bytes(b"y" * 100 + needle)  # a leak, vouched for: the contract, shown
    source = tmp_path / "mod.py"
    source.write_text(f"DATA = {needle!r}\n")
    py_compile.compile(str(source), doraise=True)
    (compiled,) = (tmp_path / "__pycache__").iterdir()

    def sha256(path: Path) -> tuple[str, bytes]:
        return "sha256", hashlib.sha256(path.read_bytes()).digest()

    vouched = {str(changed): ("sha256", hashlib.sha256(b"as installed").digest()),
               str(honest): sha256(honest), str(source): sha256(source)}
    scan = leakscan.Scan(hidden_needles(), [], record=True, vouched=vouched)
    scan.walk(str(tmp_path))
    assert (scan.found, scan.hashed, scan.files) == ([("array", str(changed))], 3, 4)
    os.utime(source, (1, 1))  # the source is newer than what was compiled from it
    scan = leakscan.Scan(hidden_needles(), [], record=True, vouched=vouched)
    scan.walk(str(tmp_path))
    assert sorted(scan.found) == sorted([("array", str(changed)), ("array", str(compiled))])
    assert scan.hashed == 2
    sites = [top for top in isolation.visible()[0] if top.endswith("-packages")]
    assert sites and not any("attention_grader" in path or "__editable__" in path
                             for path in installed_files(sites, _pyproject()["project"]["name"]))
