"""`grade doctor`: what isolation this machine gives, why, and what to change."""

from __future__ import annotations

import io
import os

from grader import cli
from grader.sandbox import doctor, isolation


def test_this_machine_confines_student_code():
    out = io.StringIO()
    assert cli.run(["doctor"], out, io.StringIO()) == 0
    text = out.getvalue()
    assert "ok  new PID, network, IPC, UTS and mount namespaces: allowed" in text
    assert "ok  a worker started: a separate process with resource limits; started as a fork "\
           "of a warm zygote interpreter that never ran student code or loaded a reference; its "\
           "own PID, network and IPC namespaces" in text
    assert text.endswith("Student code here runs confined: namespaces, a private read-only "
                         "root and no network.\n")
    if os.geteuid() == 0:
        assert "the grader runs as root: each worker gets a user id of its own" in text


def test_a_machine_without_namespaces_is_told_why_and_what_to_change(monkeypatch):
    offer = isolation.Offer((), "unshare was refused (unshare: unshare failed: Operation not "
                            "permitted)", None, False)
    monkeypatch.setattr(isolation, "offered", lambda: offer)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    settings = {"/proc/sys/user/max_user_namespaces": "0",
                "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}
    monkeypatch.setattr(doctor, "_read", settings.get)
    monkeypatch.setattr(doctor, "_worker", lambda: doctor.Finding(
        True, "a worker started: a separate process with resource limits; its own process "
        "group only"))
    out = io.StringIO()
    assert cli.run(["doctor"], out, io.StringIO()) == 1
    lines = out.getvalue().splitlines()
    assert "  NO  user.max_user_namespaces is 0" in lines
    assert "       to change: sysctl -w user.max_user_namespaces=10000" in lines
    assert "  NO  AppArmor's apparmor_restrict_unprivileged_userns is 1" in lines
    assert "  NO  new PID, network, IPC, UTS and mount namespaces: not allowed (unshare was " \
           "refused (unshare: unshare failed: Operation not permitted))" in lines
    assert "  NO  no memory cgroup can be made here: a submission's memory is bounded by 12 " \
           "processes x --memory-mb" in lines
    assert lines[-1].startswith("Student code here runs WITHOUT full confinement")
