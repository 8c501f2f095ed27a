"""What one submission holds on this machine while it is graded: a working folder, a user id
of its own (as root) and a memory cgroup (where one can be made).

A `Session` makes one `Resources` per submission and every worker of that submission, however
it is started (a zygote's fork, a fresh interpreter, a Jupyter kernel), is confined with it:
a worker restarted after a crash gets the same folder, user and cgroup, so the cgroup bounds
the whole submission. `close()` gives everything back.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.errors import SandboxError
from grader.sandbox import isolation, users
from grader.sandbox.inside import cgroups
from grader.sandbox.limits import Limits


@dataclass(frozen=True)
class Extra:
    """What a worker needs beyond the submission's own limits (a Jupyter kernel's threads)."""

    memory: int = 0
    """Bytes of address space added to each process's limit."""
    processes: int = 0
    """Processes added to the user's limit."""
    writable: tuple[Path, ...] = ()
    """Folders the worker may write besides its own /tmp (the kernel's sockets)."""


NOTHING = Extra()


class Resources:
    """The folder, uid lease and cgroup of one submission, made on first use."""

    def __init__(self, limits: Limits, offer: isolation.Offer, prefix: str = "grader-work-",
                 closed: tuple[isolation.Closed, ...] = ()) -> None:
        self.limits = limits
        self.offer = offer
        self.closed = closed
        """Paths the worker's user must not open, where no namespaces hide them."""
        self.home = Path(tempfile.mkdtemp(prefix=prefix))
        self._lease: users.UidLease | None = None
        self.cgroup: Path | None = None

    def environment(self, extra: Extra = NOTHING) -> tuple[dict[str, str], bool]:
        """The worker's environment, with its limits and confinement plan; and whether it
        is to be confined (namespaces are offered, or the grader is root)."""
        env = isolation.environment(self.home)
        # First: the plan makes the cgroup the limits depend on.
        if self.offer.namespaces:
            env["GRADER_CONFINE"] = json.dumps(self._plan(extra.writable))
        elif self.offer.root:
            uid = self._identity()
            env["GRADER_CONFINE"] = json.dumps(isolation.plan_user(
                self.home, uid, self.cgroup, self.closed, extra.writable))
        limits = self.rlimits()
        limits["memory"] += extra.memory
        limits["processes"] += extra.processes
        env["GRADER_LIMITS"] = json.dumps(limits)
        return env, self.offer.namespaces or self.offer.root

    def rlimits(self) -> dict[str, int]:
        """The limits each process of the worker applies to itself."""
        limits = self.limits.rlimits()
        if self.cgroup is None:  # nothing bounds the whole submission: few processes
            limits["processes"] = min(limits["processes"], isolation.FALLBACK_PROCESSES)
        return limits

    def memory(self) -> str:
        """How the submission's memory is bounded, in words."""
        if self.cgroup is not None:
            return f"a memory cgroup of {self.limits.memory_mb} MiB for the whole submission"
        return (f"at most {self.rlimits()['processes']} processes of {self.limits.memory_mb} "
                "MiB each beyond what each holds as it starts (no memory cgroup here)")

    def _plan(self, writable: tuple[Path, ...]) -> dict[str, object]:
        uid = self._identity() if self.offer.root else None
        self._make_cgroup()
        return isolation.plan(self.home, self.limits.file_size_mb << 22, uid, self.cgroup,
                              writable)

    def _identity(self) -> int:
        """The leased user id (as root), with the memory cgroup where one can be made."""
        if self._lease is None:
            try:
                self._lease = users.UidLease()
            except OSError as exc:
                raise SandboxError(f"cannot lease a user id for the worker ({exc})") from None
        self._make_cgroup()
        return self._lease.uid

    def _make_cgroup(self) -> None:
        if self.offer.cgroups is not None and self.cgroup is None:
            try:
                self.cgroup = cgroups.create(self.offer.cgroups, self.limits.memory_mb << 20)
            except OSError as exc:
                raise SandboxError(f"cannot make the submission's memory cgroup under "
                                   f"{self.offer.cgroups.parent} ({exc}); run `grade "
                                   "doctor`") from None

    def close(self) -> None:
        """Remove the folder and the cgroup, give the user id back."""
        if self._lease is not None and not self.offer.namespaces:
            users.end_user(self._lease.uid)  # no PID namespace took its processes along
        shutil.rmtree(self.home, ignore_errors=True)
        if self.cgroup is not None:
            cgroups.remove(self.cgroup)
            self.cgroup = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None
