"""The kernel engine's channel cannot be turned against the grader (issue #22).

The grader used to write each request to `grader-request.bin` and read each reply from
`grader-reply.bin`, in a folder the kernel's code can write, as root and without checks: a
link there made it overwrite a file outside the sandbox or read a secret, a FIFO made it hang,
and `/dev/zero` made it read until it ran out of memory. Requests and replies now travel on two
pipes the grader made, and the grader connects to the kernel's sockets once, before any student
code runs. Each attack below plants what it can wherever the kernel can write, and must change
nothing outside, read nothing secret, and end within the submission's limits.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import stat
import threading
import time

import nbformat
import pytest

from grader.course import registry
from grader.pipeline import grading
from grader.sandbox import kernel_channels
from grader.sandbox.inside import kernel_agent
from grader.sandbox.limits import Limits
from tests.conftest import OwnProcesses
from tests.helpers.honest import HONEST, HONEST_SCORE
from tests.helpers.memory import reset_peak, resident_mb

pytestmark = pytest.mark.slow

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=3, memory_mb=1024,
                                        submission_timeout=120), engine="kernel")
BASICS = registry.get("attention_basics")

# Every folder the kernel's code can write: its working folder, its connection folder, its
# HOME and /tmp; `{plant}` says what to put there under each old name.
PLANT = '''
import os
from ipykernel import get_connection_file
FOLDERS = {os.getcwd(), os.path.dirname(get_connection_file()), os.environ.get("HOME", "/tmp"),
           "/tmp"}
def plant(name, make):
    for folder in FOLDERS:
        path = os.path.join(folder, name)
        try:
            if os.path.lexists(path):
                os.unlink(path)
            make(path)
        except OSError as exc:
            print("could not plant", path, type(exc).__name__)
'''


def secrets_outside(tmp_path):
    """A root-only folder outside the sandbox, with a secret and a file to keep unchanged."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    secret, target = vault / "secret.txt", vault / "target.txt"
    secret.write_text("TOPSECRET-4242")
    target.write_text("ORIGINAL")
    for path in (secret, target):
        path.chmod(0o600)
    return secret, target


def grade(tmp_path, attack: str, options: grading.Options = OPTIONS) -> grading.Result:
    path = tmp_path / "kernel_attention_basics.py"
    path.write_text(HONEST + "\n" + PLANT + "\n" + attack)
    with OwnProcesses() as own:
        started = time.monotonic()
        result = grading.grade(path, BASICS, options)
        # Within the submission's limit, and the few seconds a last call may take past it.
        assert time.monotonic() - started < options.limits.submission_timeout + 10
        assert own.survivors() == []
    return result


def test_links_to_a_file_outside_are_never_written_or_read(tmp_path):
    secret, target = secrets_outside(tmp_path)
    result = grade(tmp_path, f'''
plant("grader-request.bin", lambda p: os.symlink({str(target)!r}, p))
plant("grader-reply.bin", lambda p: os.symlink({str(secret)!r}, p))
''')
    assert target.read_text() == "ORIGINAL" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert (result.status.value, result.score) == ("graded", HONEST_SCORE)
    seen = result.output + "".join(c.message for e in result.exercises for c in e.checks)
    assert "TOPSECRET" not in seen and str(0x50544f54) not in seen  # "TOPS" as a length
    assert [c.message for c in result.problem_cells] == []


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "socket"])
def test_what_a_reply_file_could_be_changes_nothing(tmp_path, kind):
    make = {
        "fifo": "os.mkfifo",
        "dev-zero": "lambda p: os.symlink('/dev/zero', p)",
        "directory": "os.mkdir",
        "socket": "lambda p: __import__('socket').socket(__import__('socket').AF_UNIX)"
                  ".bind(p)",
    }[kind]
    result = grade(tmp_path, f'''
plant("grader-reply.bin", {make})
plant("grader-request.bin", {make})
''')
    assert (result.status.value, result.score) == ("graded", HONEST_SCORE)
    assert [c.message for c in result.problem_cells] == []


def test_sockets_replaced_by_links_are_never_followed(tmp_path):
    """The kernel's code swaps its ZeroMQ sockets for links to a socket outside: the grader
    connected before any of its code ran, and never connects again."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    outside = vault / "listening.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(outside))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = grade(tmp_path, f'''
folder = os.path.dirname(get_connection_file())
for name in os.listdir(folder):
    if name.startswith("socket"):
        os.unlink(os.path.join(folder, name))
        os.symlink({str(outside)!r}, os.path.join(folder, name))
''')
    finally:
        stop.set()
        watcher.join(2)
        server.close()
    assert accepted == []
    assert result.status.value == "graded"


def test_junk_on_the_reply_pipe_costs_the_student_not_the_grader(tmp_path):
    """The code finds the kernel's end of the reply pipe and writes a frame that claims a
    gigabyte, then junk: that submission's checks fail or are retried on a new kernel, within
    its limits, and the grader reads no more than its cap."""
    result = grade(tmp_path, '''
import stat, struct, json
for fd in range(3, 256):
    try:
        mode = os.fstat(fd).st_mode
        flags = __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL)
    except OSError:
        continue
    if stat.S_ISFIFO(mode) and flags & os.O_ACCMODE == os.O_WRONLY:
        head = json.dumps({"id": "x", "blobs": [["<f8", [1 << 27]]], "data": 1 << 30}).encode()
        try:
            os.write(fd, struct.pack("!I", len(head)) + head + b"\\xff" * 4096)
        except OSError:
            pass
''')
    assert result.status.value == "graded"
    assert not result.grader_failed
    assert result.score <= HONEST_SCORE


def test_a_kernel_that_never_answers_is_a_timeout_not_a_hang(tmp_path):
    """The code replaces the agent that answers the grader with one that never does. The
    submission's limit is small, yet leaves a kernel time to start on a busy machine (8 s held
    beside three CPU-bound loops on 2 cores): each call then meets its own limit, and the
    grading ends with the submission's."""
    limits = dataclasses.replace(OPTIONS.limits, submission_timeout=8)
    result = grade(tmp_path, '''
import grader.sandbox.inside.kernel_agent as agent
agent.serve = lambda namespace: __import__("time").sleep(3600)
''', dataclasses.replace(OPTIONS, limits=limits))
    assert result.status.value == "graded"
    statuses = {c.status.value for e in result.exercises for c in e.checks}
    assert "timeout" in statuses and statuses <= {"timeout", "error", "failed", "missing"}, \
        statuses


def test_the_grader_writes_nothing_where_the_kernel_can_write(tmp_path, monkeypatch):
    """An allow-list of what the grader opens for writing in the submission's working folder
    (the only place the kernel's code can write that the grader looks at): the connection
    file of a kernel about to start, in its new folder, and nothing else. Checked by watching
    every `open` of the grader's process while it grades."""
    import builtins

    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def watching(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and any(c in mode for c in "wax+"):
            opened.append(os.fspath(file))
        return real_open(file, mode, *args, **kwargs)

    def watching_os(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR):
            opened.append(os.fspath(path))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", watching)
    monkeypatch.setattr(os, "open", watching_os)
    path = tmp_path / "kernel_attention_basics.py"
    path.write_text(HONEST)
    result = grading.grade(path, BASICS, OPTIONS)
    assert result.score == HONEST_SCORE
    in_work = [p for p in opened if "/grader-work-" in p]
    assert in_work and all(re.fullmatch(r".*/grader-work-[^/]+/kernel-[^/]+/connection\.json", p)
                           for p in in_work), in_work


# --------------------------------------------------------------------------- review of #22

def test_a_statement_that_ignores_interrupts_is_killed_past_its_limit(tmp_path):
    """nbclient interrupts a statement past its time, then waits for it again, forever: one
    that ignores SIGINT inside a function held the grader past the submission's limit."""
    # The submission's own limit, far beyond the statement's, would have ended it otherwise: it
    # is not what stopped it, however busy the machine.
    limits = dataclasses.replace(OPTIONS.limits, cell_timeout=2, submission_timeout=240)
    result = grade(tmp_path, '''
import signal, time
def wait_for_data():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(1)
wait_for_data()
''', dataclasses.replace(OPTIONS, limits=limits))
    assert result.score == HONEST_SCORE and result.duration_s < 240
    assert not any("was used up" in c.message for c in result.problem_cells)
    stuck = [c.message for c in result.problem_cells if c.status.value == "timeout"]
    assert len(stuck) == 1 and stuck[0].endswith(
        ": stopped after 2 s (it did not stop when interrupted); execution went on"), stuck


def test_printing_gigabytes_costs_the_grader_no_memory(tmp_path):
    """nbclient kept every stream message of a statement before any cap (1.7 GB for 1.5 GB
    printed); the grader now keeps a statement's output up to the cap as it arrives, and a
    message larger than Jupyter's sockets accept ends the connection instead of being held."""
    before = resident_mb()
    reset_peak()
    result = grade(tmp_path, '''
import sys
for _ in range(4):
    sys.stdout.write("x" * 1_000_000)
for _ in range(4):
    sys.stdout.write("y" * 50_000_000)
''')
    assert resident_mb("VmHWM") - before < 100
    assert result.status.value == "graded" and not result.grader_failed
    assert result.score == HONEST_SCORE


@pytest.mark.parametrize("engine", ["kernel", "fast"])
def test_an_output_larger_than_the_sockets_take_loses_only_what_is_past_the_cap(tmp_path,
                                                                                engine):
    """One write larger than Jupyter's sockets accept (`kernel_channels.message_bound`: 6 MiB
    at the default code limit) closed the kernel's output connection: that
    output and every later one were lost, and nothing said so. Now the kernel sends what
    the grader keeps and the number of bytes past it, and both engines say the same."""
    result = grade(tmp_path, '''
import sys
sys.stdout.write("x" * 8_000_000)
print("and after it")
''', dataclasses.replace(OPTIONS, engine=engine))
    assert result.status.value == "graded" and not result.grader_failed
    assert result.score == HONEST_SCORE
    kept = OPTIONS.limits.output_bytes
    assert "x" * kept in result.output and "x" * (kept + 1) not in result.output
    assert f"[grader] {8_000_000 + len('and after it') + 1 - kept} more bytes of output " \
           "were dropped" in result.output


def test_a_large_output_in_pieces_is_kept_as_the_fast_engine_keeps_it(tmp_path):
    """With a cap larger than one piece (`kernel_agent.PIECE` characters), the kernel sends
    what is kept in several messages, escaped characters and all (the one message this write
    was, 8.8 MB as JSON, was lost with every output after it), and both engines keep the same
    bytes and count the same dropped."""
    limits = dataclasses.replace(OPTIONS.limits, output_bytes=600_000)
    outputs = {}
    for engine in ("kernel", "fast"):
        folder = tmp_path / engine
        folder.mkdir()
        result = grade(folder, '''
import sys
sys.stdout.write("\\u00e9\\x01" * 1_100_000)
''', dataclasses.replace(OPTIONS, engine=engine, limits=limits))
        assert result.score == HONEST_SCORE
        outputs[engine] = result.output
    assert outputs["kernel"] == outputs["fast"]
    # The control characters are not shown (`grader.text`): 200,000 pairs are 600,000 bytes.
    assert outputs["fast"] == ("\u00e9" * 200_000
                               + "\n[grader] 2700000 more bytes of output were dropped")


@pytest.mark.parametrize("forged", [
    "ip.kernel.session.send(ip.kernel.iopub_socket, 'status', {}, parent=ip.parent_header)",
    "ip.kernel.session.send(ip.kernel.iopub_socket, 'comm_msg', {'comm_id': 'x'}, "
    "parent=ip.parent_header)",
])
def test_a_forged_message_costs_the_student_not_the_grader(tmp_path, forged):
    """The kernel's code can send any message on Jupyter's sockets (its session signs it):
    nbclient choked on malformed ones, and the grader failed the submission."""
    result = grade(tmp_path, f"ip = get_ipython()\n{forged}\n")
    assert result.status.value == "graded" and not result.grader_failed
    assert result.score == HONEST_SCORE


def test_a_fractional_statement_limit_is_taken(tmp_path):
    """--timeout 2.4 made every kernel-engine submission fail in nbclient's constructor."""
    limits = dataclasses.replace(OPTIONS.limits, cell_timeout=2.4)
    result = grade(tmp_path, "", dataclasses.replace(OPTIONS, limits=limits))
    assert (result.status.value, result.score) == ("graded", HONEST_SCORE)


SAVED_STREAMS = '''
import logging, sys
OUT, ERR = sys.stdout, sys.stderr
logging.basicConfig(level=logging.INFO, stream=ERR, format="%(message)s")

def causal_mask(seq_len):
    print("mask of", seq_len, file=OUT)
    logging.info("logged %d", seq_len)
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)
'''


def test_a_stream_saved_before_the_call_prints_in_it(make_submission):
    """A stream the code saved in a global (a logging handler, a progress bar) was ipykernel's
    own in the forked call, and every call that wrote to it hung: 10 -> 3 points."""
    path = make_submission(HONEST + SAVED_STREAMS)
    seen = {}
    for engine in ("fast", "kernel"):
        result = grading.grade(path, BASICS, dataclasses.replace(OPTIONS, engine=engine))
        mask = result.exercises[3]
        assert (mask.name, mask.score) == ("causal_mask", 1.0), engine
        # Both lines, in an order Jupyter does not fix either (stdout and stderr apart).
        printed = result.output.split("[grader] causal_mask, case 'three', printed:\n")[1]
        assert sorted(printed.split("\n\n")[0].splitlines()) == ["logged 3", "mask of 3"]
        seen[engine] = (result.score, sorted(result.output.splitlines()))
    assert seen["fast"] == seen["kernel"]


@pytest.mark.parametrize("said, counted", [
    (2_000_000, 2_000_000), (0, 0), (-5, 0), ("9" * 9, 0), (True, 0), (2.5e6, 0), (None, 0),
    (10**40, kernel_channels.MAX_UNSENT),
])
def test_what_a_kernel_says_it_did_not_send_counts_only_as_its_own_dropped_output(said,
                                                                                   counted):
    """The count of bytes a kernel did not send (`kernel_agent.DROPPED`) is the kernel's code's
    to forge: a count that is no non-negative whole number counts nothing, and it only adds
    to the statement's dropped output (and uses up what is left of its budget)."""
    client = kernel_channels.Client(nbformat.v4.new_notebook())
    client.clear_before_next_output = False  # as nbclient sets it before each cell
    client.budget, client.overflow = 10, 0
    message = {"msg_type": "stream", "parent_header": {}, "header": {"msg_type": "stream"},
               "content": {"name": "stdout", "text": "abcdef",
                           kernel_agent.DROPPED: said}}
    outputs: list = []
    client.output(outputs, message, None, 0)
    assert [output["text"] for output in outputs] == ["abcdef"]
    assert client.overflow == counted
    assert client.budget == 10 - 6 - counted
