"""How to run one submission in the sandbox (`SandboxConfig`): what the grader tells a
`Session` before the first statement runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.sandbox import isolation
from grader.sandbox.limits import CappedOutput, Engine, Limits, OnError
from grader.sandbox.transport import PipeTransport, Transport
from grader.sandbox.zygote import Zygotes


@dataclass(frozen=True)
class SandboxConfig:
    """How to run one submission."""

    limits: Limits = field(default_factory=Limits)
    """Time, memory and output limits of the student's code."""
    preload: tuple[str, ...] = ()
    """Modules imported before any student code (numpy, the assignment's `requires`)."""
    module_name: str = "__main__"
    """`__name__` of the student's namespace: "__main__" for a notebook."""
    on_error: OnError = OnError.STATEMENT
    """After a failing statement: go on, skip the rest of the cell, or stop."""
    watch: tuple[str, ...] = ()
    """Names whose state right after the cell that defines them is kept (the exercises)."""
    engine: Engine = Engine.FAST
    """How the worker is started."""
    closed: tuple[isolation.Closed, ...] = ()
    """Paths the grader holds (solutions, references, submissions, outputs): where no
    namespaces hide them, the worker checks that its user can open none of them."""
    zygotes: Zygotes | None = field(default=None, compare=False, repr=False)
    """The warm interpreters of the command that grades (`--engine fast`); with None, the
    session starts its own and stops it when it ends."""
    fork_every_call: bool = False
    """Give every call a fork of its own, even when the last call left nothing behind (the
    tests' yardstick for the shared call process)."""
    call_groups: tuple[str, ...] = ()
    """The groups of calls that follow the cells (`call`'s `group`): the worker forks a call
    process for each as soon as the cells have run, and each takes its picture of the state
    while the grader reads the cells' results, rather than at its first call."""

    def __post_init__(self) -> None:
        # Plain strings ("stop", "kernel") are accepted, and checked, here.
        object.__setattr__(self, "on_error", OnError(self.on_error))
        object.__setattr__(self, "engine", Engine(self.engine))

    def transport(self, offer: isolation.Offer, output: CappedOutput) -> Transport:
        """The transport that `engine` asks for."""
        if self.engine is Engine.KERNEL:
            from grader.sandbox.kernel import KernelTransport  # Jupyter only when asked for

            return KernelTransport(self.limits, self.preload, output)
        return PipeTransport(offer, self.preload, output, use_zygote=self.engine is Engine.FAST,
                             zygotes=self.zygotes)
