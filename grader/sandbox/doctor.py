"""`grade doctor`: which isolation this machine gives student code, why, and what to change."""

from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.errors import GraderError
from grader.sandbox import isolation
from grader.sandbox.config import SandboxConfig
from grader.sandbox.limits import Limits
from grader.sandbox.session import Session
from grader.submission import Cell, Statement, Submission


@dataclass(frozen=True)
class Finding:
    """One fact about the machine."""

    ok: bool
    """Good for isolation (False: weaker, or a reason why)."""
    what: str
    """The fact, in one sentence."""
    fix: str = ""
    """What to change, when it is not ok."""


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _user_namespaces() -> list[Finding]:
    """The settings that allow or forbid a normal user's namespaces."""
    found = []
    limit = _read("/proc/sys/user/max_user_namespaces")
    if limit is not None:
        found.append(Finding(limit != "0", f"user.max_user_namespaces is {limit}",
                             "sysctl -w user.max_user_namespaces=10000"))
    debian = _read("/proc/sys/kernel/unprivileged_userns_clone")
    if debian is not None:
        found.append(Finding(debian == "1", f"kernel.unprivileged_userns_clone is {debian}",
                             "sysctl -w kernel.unprivileged_userns_clone=1"))
    apparmor = _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    if apparmor is not None:
        found.append(Finding(apparmor == "0",
                             f"AppArmor's apparmor_restrict_unprivileged_userns is {apparmor}",
                             "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or run "
                             "the grader as root (in a container or a VM)"))
    else:
        found.append(Finding(True, "AppArmor does not restrict unprivileged user namespaces"))
    return found


def findings() -> list[Finding]:
    """Everything `grade doctor` reports, in order; the last one starts a real worker."""
    root = os.geteuid() == 0
    found = [Finding(platform.system() == "Linux", f"{platform.system()} "
                     f"{platform.release()} on {platform.machine()}",
                     "grade on Linux: namespaces, cgroups and the private root are Linux's"),
             Finding(True, "the grader runs as root: each worker gets a user id of its own"
                     if root else "the grader runs as a normal user: workers use a user "
                     "namespace (run as root in a container for a user id per worker)")]
    for tool, package in (("unshare", "util-linux"), ("setpriv", "util-linux")):
        where = shutil.which(tool)
        found.append(Finding(where is not None, f"{tool}: {where or 'not found'}",
                             f"install {package} (apt-get install {package})"))
    if not root:
        found += _user_namespaces()
    offer = isolation.offered()
    found.append(Finding(offer.namespaces, "new PID, network, IPC, UTS and mount namespaces: "
                         + ("allowed" if offer.namespaces else f"not allowed ({offer.reason})"),
                         "see the lines above; without namespaces student code can read "
                         + ("what every user of this machine can read (a user of its own), so "
                            "keep the grader's files, solutions, references, submissions and "
                            "outputs root's only (chmod o-rwx): it refuses to grade otherwise"
                            if root else "what the grader's user can read, the references "
                            "and solutions too")))
    if offer.cgroups is not None:
        found.append(Finding(True, f"memory cgroups (v{offer.cgroups.version}) under "
                             f"{offer.cgroups.parent}: a submission's memory is bounded as a "
                             "whole"))
    else:
        found.append(Finding(False, "no memory cgroup can be made here: a submission's memory "
                             f"is bounded by {isolation.FALLBACK_PROCESSES} processes x "
                             "--memory-mb",
                             "run as root with the memory controller mounted, or in a "
                             "delegated cgroup (systemd-run --user --scope -p Delegate=yes "
                             "grade ...)"))
    found.append(_worker())
    return found


def _worker() -> Finding:
    """Start a worker, run one statement, and say how it was isolated."""
    cell = Cell(1, "pass", (Statement(0, 1),))
    try:
        with Session(SandboxConfig(Limits(cell_timeout=30))) as session:
            session.run(Submission("doctor", "module", (cell,)))
            return Finding(True, f"a worker started: {session.isolation}")
    except GraderError as exc:
        return Finding(False, f"a worker did not start: {exc.message}",
                       "see the lines above")


def confined(found: list[Finding]) -> bool:
    """Namespaces are allowed and a real worker started confined."""
    return found[-1].ok and "private read-only root" in found[-1].what


def render(found: list[Finding]) -> str:
    """The report, one line per finding, with what to change."""
    lines = ["Isolation of student code on this machine:"]
    for finding in found:
        lines.append(f"  {'ok ' if finding.ok else 'NO '} {finding.what}")
        if not finding.ok and finding.fix:
            lines.append(f"       to change: {finding.fix}")
    lines.append("Student code here runs " + (
        "confined: namespaces, a private read-only root and no network."
        if confined(found) else "WITHOUT full confinement: do not keep hidden references or "
        "solutions where the grader's user can read them while grading untrusted code."))
    return "\n".join(lines) + "\n"
