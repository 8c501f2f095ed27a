"""A batch on a Dask cluster: the rows of a local batch, and no result lost to a fault.

One LocalCluster of two worker processes serves the module; each test hands its address to
`grade batch --dask`, as an instructor would a real scheduler's. Faults are real: a worker
process killed with SIGKILL, a submission whose grading kills its worker, the client killed.
No test asserts a time: the machine is shared.
"""

from __future__ import annotations

import io
import ipaddress
import json
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

try:
    import dask
    import distributed
except ImportError:  # in the dev extra: under CI (`CI` set), a missing install step fails
    if os.environ.get("CI"):
        raise
    pytest.skip('Dask is not installed: python3 -m pip install -e ".[dev]"',
                allow_module_level=True)

from grader import cli
from grader.batch import batch  # noqa: E402
from grader.course import registry
from grader.errors import GraderError  # noqa: E402
from grader.gradebook import Gradebook  # noqa: E402
from grader.pipeline import grading
from grader.sandbox.limits import Limits  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.helpers import classes  # noqa: E402
from tests.helpers.sqlite_file import opened  # noqa: E402

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5, submission_mb=0.5))
KILL = b"# this line kills the Dask worker that grades it"


def make_class(folder: Path) -> Path:
    """The eight submissions of `classes.make_class` (the modules half a second slower), a
    student with two files, a file over the size limit, and one that kills the Dask worker
    grading it."""
    classes.make_class(folder, slow=True)
    (folder / "zoe").mkdir()
    shutil.copy(ROOT / "solutions" / "udl_attention.py", folder / "zoe" / "final.py")
    (folder / "zoe" / "helpers.py").write_text("import numpy as np\n")
    (folder / "ivan_big.py").write_text(f"x = '{'a' * 600_000}'\n")  # 0.6 MB
    return folder


def grade(folder: Path, out: Path, where: str | None, progress: io.StringIO | None = None
          ) -> batch.Summary:
    return batch.run(folder, registry.get("udl_attention"), out, 2, OPTIONS,
                     progress=progress or io.StringIO(), dask=where)


def rows(out: Path, leave_out: tuple[str, ...] = (), moved: tuple[Path, Path] | None = None
         ) -> list[tuple]:
    """The gradebook's rows with their stored results, but the time each took; `moved`: the
    class was graded from a copy (from, to), which the messages name."""
    found = [row for row in classes.normalised(out) if row[0] not in leave_out]
    if moved:
        found = [(*row[:-1], row[-1].replace(str(moved[0]), str(moved[1]))) for row in found]
    return found


def without_ivan(found: list[tuple]) -> list[tuple]:
    return [row for row in found if row[0] != "ivan"]


def reports(out: Path) -> dict[str, str]:
    """Every report the batch wrote, with the time grading took set aside."""
    found = {}
    for path in sorted((out / "results").rglob("*.*")):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r'"duration_s": [0-9.]+', "", text)
        found[path.relative_to(out).as_posix()] = re.sub(r"in [0-9.]+ seconds", "", text)
    return found


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of two worker processes of one thread each, and a client of its own."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as local, \
            distributed.Client(local) as client:
        yield local.scheduler_address, client


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The class, and its rows and reports graded by a local batch."""
    folder = make_class(tmp_path_factory.mktemp("class") / "submissions")
    out = tmp_path_factory.mktemp("local")
    summary = grade(folder, out, None)
    assert (summary.graded, summary.errors) == (10, 2)  # dave's broken notebook, ivan's size
    return folder, rows(out), reports(out)


@pytest.fixture
def own_cluster():
    """A LocalCluster like `cluster`, for one test that kills two of its workers, with a third
    that the test does not kill: the rest of the class is graded whether or not the nannies
    bring the killed ones back. (With two workers, both killed, their nannies took more than
    the batch's 120 s to bring one back while another suite ran on the same 2 cores. A batch
    whose workers all left is `test_a_batch_whose_workers_all_left_stops_keeping_what_was_graded`'s
    to show.) The batch allows a submission two deaths (`ALLOWED_FAILURES`)."""
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as local, \
            distributed.Client(local) as client:
        yield local.scheduler_address, client


def test_a_batch_on_local_workers_records_what_a_local_batch_does(local, tmp_path):
    # One worker process: the work spread over two is `test_rows_and_reports_equal_a_local_batch`'s
    # to show; this is the command line's own cluster.
    folder, expected, _ = local
    out, stdout, stderr = tmp_path / "out", io.StringIO(), io.StringIO()
    code = cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out", str(out),
                    "--timeout", "5", "--call-timeout", "5", "--dask", "local:1"],
                   stdout, stderr)
    assert code == 1, stderr.getvalue()  # dave's notebook could not be graded
    assert "graded 10, skipped 0 already in the gradebook, 1 could not be graded" \
        in stdout.getvalue()
    # The command line allows 50 MB a file: ivan's file, too big for OPTIONS, is graded.
    assert rows(out, leave_out=("ivan",)) == without_ivan(expected)
    assert [row[4:7] for row in rows(out) if row[0] == "ivan"] == [("graded", 0.0, 10.0)]


def zygotes(dask_worker) -> dict[str, int]:
    """On a worker: the process id of each of its zygotes, by what it preloaded beyond numpy
    ("" for the plain one, "matplotlib.pyplot" for submissions that import matplotlib)."""
    from grader.batch.distributed import Grading

    found = {}
    for plugin in dask_worker.plugins.values():  # the batch's own zygotes, while it runs
        if isinstance(plugin, Grading) and plugin.zygotes is not None:
            found.update({",".join(key): kept.zygote_pid
                          for key, kept in plugin.zygotes.running().items() if kept.alive})
    return found


class WatchZygotes(classes.Terminal):
    """A progress bar that notes each worker's zygotes whenever it is drawn."""

    def __init__(self, client) -> None:
        super().__init__()
        self.client, self.seen = client, []

    def write(self, text: str) -> int:
        self.seen.append(self.client.run(zygotes))
        return super().write(text)


def test_rows_and_reports_equal_a_local_batch(local, cluster, tmp_path, monkeypatch):
    folder, expected, written = local
    address, client = cluster
    # The client needs no references: the workers have them. (A nanny here would start a
    # worker in this environment: none is restarted in this test.)
    monkeypatch.setenv("GRADER_REFERENCES", str(tmp_path / "nowhere"))
    progress = WatchZygotes(client)
    summary = grade(folder, tmp_path / "out", address, progress)
    assert (summary.graded, summary.skipped, summary.errors) == (10, 0, 2)
    assert rows(tmp_path / "out") == expected
    assert reports(tmp_path / "out") == written
    big = {row.student: data for row, data in Gradebook(tmp_path / "out").recorded()}["ivan"]
    assert big.error == (
        f"{folder / 'ivan_big.py'}: is 0.6 MB, over the 0.5 MB limit for a submission file "
        "(--max-submission-mb); clear the outputs (Cell > All Output > Clear) and hand it in "
        "again")
    assert "grading on 2 Dask workers" in progress.getvalue() and "10/10" in progress.getvalue()
    # Each worker kept zygotes of its own, one per preload set (the class has notebooks that
    # import matplotlib), each warm from its first submission to the last...
    last = progress.seen[-1]
    assert sorted(last) == sorted(client.nthreads())
    assert all(kinds and set(kinds) <= {"", "matplotlib.pyplot"} for kinds in last.values())
    assert any("matplotlib.pyplot" in kinds for kinds in last.values())
    pids = [pid for kinds in last.values() for pid in kinds.values()]
    assert len(set(pids)) == len(pids)  # no worker shares another's
    assert all(seen[worker].get(kind, pid) == pid for seen in progress.seen
               for worker, kinds in last.items() for kind, pid in kinds.items())
    # ...and let them go when the batch ended.
    assert client.run(zygotes) == {worker: {} for worker in last}


class KillWhenFirstRecorded(io.StringIO):
    """A progress stream that kills a Dask worker in the middle of grading, when the first
    result is recorded."""

    def __init__(self, client) -> None:
        super().__init__()
        self.client, self.killed = client, None

    def write(self, text: str) -> int:
        deadline = time.monotonic() + 30
        while self.killed is None and time.monotonic() < deadline:
            busy = [worker for worker, keys in self.client.processing().items() if keys]
            if busy:
                pid = self.client.run(os.getpid, workers=busy[:1])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                self.killed = busy[0]
            time.sleep(0.05)
        return super().write(text)


def test_a_worker_killed_mid_batch_loses_no_result(local, own_cluster, tmp_path):
    folder, expected, _ = local
    address, client = own_cluster
    progress = KillWhenFirstRecorded(client)
    summary = grade(folder, tmp_path / "out", address, progress)
    assert progress.killed is not None, "no worker was grading when the first result came"
    assert progress.killed not in client.nthreads()
    assert (summary.graded, summary.errors) == (10, 2)
    assert rows(tmp_path / "out") == expected


class EmptyWhenFirstRecorded(io.StringIO):
    """A progress stream that takes every worker away from the cluster when the first result
    is recorded."""

    def __init__(self, local, client) -> None:
        super().__init__()
        self.local, self.client, self.lines = local, client, 0

    def write(self, text: str) -> int:
        if self.lines == 0:
            self.local.scale(0)
            deadline = time.monotonic() + 60
            while self.client.nthreads() and time.monotonic() < deadline:
                time.sleep(0.05)
        self.lines += text.count("\n")
        return super().write(text)


def test_a_batch_whose_workers_all_left_stops_keeping_what_was_graded(tmp_path, monkeypatch):
    import grader.batch.distributed

    monkeypatch.setattr(grader.batch.distributed, "WORKERS_TIMEOUT_S", 1)
    monkeypatch.setattr(batch, "CHECK_EVERY_S", 0.2)
    folder = classes.small_class(tmp_path)
    # bob's file is handed out when alice's result comes, before it is recorded, and is still
    # being graded when the workers leave: a minute of statements, each within the cell limit.
    # (The same quick file as alice's could be graded before the last worker had gone, and
    # the batch then ended with nothing left to grade.)
    bob = folder / "bob_udl_attention.py"
    bob.write_text("import time\n" + "time.sleep(3)\n" * 20 + bob.read_text())
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as local, \
            distributed.Client(local) as client:
        progress = EmptyWhenFirstRecorded(local, client)
        with pytest.raises(GraderError) as info:
            grade(folder, tmp_path / "out", local.scheduler_address, progress)
        assert client.nthreads() == {}
    assert info.value.message == (
        f"--dask {local.scheduler_address}: every Dask worker left the scheduler, and none "
        "came back in 1 s; the gradebook keeps what was graded. Start workers (`dask worker "
        f"{local.scheduler_address} --nworkers N --nthreads 1` on each host) and run the "
        "same command again: it grades only what is missing")
    recorded = Gradebook(tmp_path / "out").known_hashes("udl_attention")
    assert progress.lines == 1 and [student for student, _ in recorded] == ["alice"], recorded


class Killer(distributed.WorkerPlugin):
    """On each worker: grading a file that holds `KILL` kills the worker process."""

    def setup(self, worker) -> None:
        self.real = grading.grade

        def grade(path, *args, **kwargs):
            if KILL in Path(path).read_bytes():
                os._exit(1)
            return self.real(path, *args, **kwargs)

        grading.grade = grade

    def teardown(self, worker) -> None:
        grading.grade = self.real


def test_a_submission_that_kills_its_worker_twice_is_an_error(local, own_cluster, tmp_path):
    folder, expected, _ = local
    address, client = own_cluster
    killer = tmp_path / "submissions"
    shutil.copytree(folder, killer)
    (killer / "mallory_udl.py").write_bytes(KILL + b"\n" + (folder / "carol_udl.py").read_bytes())
    client.register_plugin(Killer(), name="killer")
    try:
        summary = grade(killer, tmp_path / "out", address)
    finally:
        client.unregister_worker_plugin("killer")
    assert (summary.graded, summary.errors) == (11, 3)
    assert rows(tmp_path / "out", ("mallory",), moved=(killer, folder)) == expected
    mallory = {row.student: data for row, data in Gradebook(tmp_path / "out").recorded()}[
        "mallory"]
    assert (mallory.status.value, mallory.score, mallory.grader_failed) == ("error", 0, True)
    assert mallory.error == (f"{killer / 'mallory_udl.py'}: the Dask worker grading it "
                                "died, twice (the grader's process, not the sandbox); grade "
                                "it alone with `grade run` to see why")


def _command(folder: Path, out: Path, address: str) -> list[str]:
    return [sys.executable, "-m", "grader", "batch", str(folder), "--assignment",
            "udl_attention", "--out", str(out), "--timeout", "5", "--call-timeout", "5",
            "--dask", address]


def _recorded(out: Path) -> int:
    try:
        with opened(out / "gradebook.sqlite") as db:
            return db.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_the_client_killed_mid_batch_and_started_again_grades_only_what_is_missing(
        local, cluster, tmp_path):
    folder, expected, _ = local
    address, _ = cluster
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = subprocess.Popen(_command(folder, out, address), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _recorded(out) < 3 and client.poll() is None:
        time.sleep(0.05)
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    partial = _recorded(out)
    assert 3 <= partial < 10, "the client should be killed halfway"
    again = subprocess.run(_command(folder, out, address), capture_output=True, text=True,
                           timeout=300, env=env)
    assert f"graded {10 - partial}, skipped {partial} already in the gradebook" in again.stdout
    # ivan's file is graded under the command line's size limit (50 MB), not OPTIONS'.
    assert rows(out, leave_out=("ivan",)) == without_ivan(expected)


def set_env(name: str, value: str | None) -> None:
    """On a worker: set or unset an environment variable (os.environ's own methods would be
    sent with a copy of this process's environment)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def test_missing_references_on_a_worker_stop_the_batch_naming_it(cluster, tmp_path):
    address, client = cluster
    folder = classes.small_class(tmp_path)
    nowhere = tmp_path / "nowhere"
    client.run(set_env, "GRADER_REFERENCES", str(nowhere))
    try:
        stdout, stderr = io.StringIO(), io.StringIO()
        code = cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out",
                        str(tmp_path / "out"), "--dask", address], stdout, stderr)
    finally:
        client.run(set_env, "GRADER_REFERENCES", None)
    assert (code, stdout.getvalue()) == (1, "")
    assert re.fullmatch(
        r"grade: error: Dask worker tcp://127\.0\.0\.1:\d+: " + re.escape(
            f"{nowhere / 'udl_attention.npz'}: no references for udl_attention; run `grade "
            "references build udl_attention`") + "\n", stderr.getvalue())
    assert not (tmp_path / "out").exists()


def test_tls_between_client_and_scheduler(tmp_path):
    made = distributed.Security.temporary()  # one self-signed certificate for every role
    for name, pem in (("ca", made.tls_ca_file), ("cert", made.tls_client_cert),
                      ("key", made.tls_client_key)):
        (tmp_path / f"{name}.pem").write_text(pem)
    ca, cert, key = (str(tmp_path / f"{name}.pem") for name in ("ca", "cert", "key"))
    security = distributed.Security(
        tls_ca_file=ca, tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert,
        tls_worker_key=key, tls_client_cert=cert, tls_client_key=key, require_encryption=True)
    folder = classes.small_class(tmp_path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  security=security, dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as secure:
        address = secure.scheduler_address
        assert address.startswith("tls://")
        stderr = io.StringIO()
        code = cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out",
                        str(tmp_path / "out"), "--dask", address], io.StringIO(), stderr)
        assert code == 2 and stderr.getvalue() == (
            f"grade: error: --dask {address}: a tls:// scheduler needs this client's "
            "certificate: set DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__"
            "TLS__CLIENT__CERT and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY (see "
            "docs/deployment.md, \"On a Dask cluster\")\n")
        with dask.config.set({"distributed.comm.tls.ca-file": ca,
                              "distributed.comm.tls.client.cert": cert,
                              "distributed.comm.tls.client.key": key,
                              "distributed.comm.require-encryption": True}):
            summary = grade(folder, tmp_path / "out", address)
    assert (summary.graded, summary.errors) == (2, 0)
    assert [(row.student, row.score) for row in Gradebook(tmp_path / "out").rows()] == [
        ("alice", 10.0), ("bob", 10.0)]


def _descendants() -> set[int]:
    """This process and every process under it."""
    parents = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as stat:
                parents[int(name)] = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
    found, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += [child for child, parent in parents.items() if parent == pid]
    return found


def _listening(pids: set[int]) -> set[tuple[str, int]]:
    """The (address, port) of every TCP socket these processes listen on, IPv4 and IPv6."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:  # gone, or not ours to read
            continue
    found = set()
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:  # 0A: LISTEN
                    continue
                address, port = local.split(":")
                # The kernel prints each 32-bit word of the address in host (little) endian.
                raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1]
                               for i in range(0, 2 * size, 8))
                found.add((ipaddress.ip_address(raw).compressed, int(port, 16)))
    return found


def test_a_local_cluster_and_its_dashboard_listen_on_loopback_only():
    from grader.batch.distributed import Cluster

    before = _listening(_descendants())
    with Cluster("local:1", registry.get("udl_attention"), OPTIONS) as pool:
        opened = _listening(_descendants()) - before
        # The dashboard (no authentication), the scheduler, the nanny, the worker, its pages.
        assert pool.dashboard.startswith("http://127.0.0.1:"), pool.dashboard
        port = int(pool.dashboard.split(":")[2].split("/")[0])
        assert ("127.0.0.1", port) in opened and len(opened) >= 4, opened
        assert {address for address, _ in opened} == {"127.0.0.1"}, opened
        assert pool.label == f"grading on 1 Dask worker, dashboard {pool.dashboard}"


@pytest.mark.parametrize("address, message", [
    ("local:0", "--dask local:0: write local:N, N worker processes on this machine, for "
                "example local:4"),
    ("local:two", "--dask local:two: write local:N"),
])
def test_a_bad_local_cluster_is_a_usage_error(address, message, tmp_path):
    stderr = io.StringIO()
    code = cli.run(["batch", str(tmp_path), "--assignment", "udl_attention", "--out",
                    str(tmp_path / "out"), "--dask", address], io.StringIO(), stderr)
    assert code == 2 and stderr.getvalue().startswith(f"grade: error: {message}")


def test_no_scheduler_there_is_a_usage_error(tmp_path, monkeypatch):
    from grader.batch import distributed as on_dask

    monkeypatch.setattr(on_dask, "CONNECT_TIMEOUT_S", 2)
    stderr = io.StringIO()
    code = cli.run(["batch", str(tmp_path), "--assignment", "udl_attention", "--out",
                    str(tmp_path / "out"), "--dask", "tcp://127.0.0.1:9"], io.StringIO(), stderr)
    assert code == 2
    assert stderr.getvalue().startswith("grade: error: --dask tcp://127.0.0.1:9: no Dask "
                                        "scheduler answers there (")
    assert stderr.getvalue().endswith("start one with `dask scheduler` and pass the address it "
                                      "prints (tcp://HOST:8786), or local:N\n")


def test_without_dask_the_option_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    monkeypatch.delitem(sys.modules, "grader.batch.distributed", raising=False)
    stderr = io.StringIO()
    code = cli.run(["batch", str(tmp_path), "--assignment", "udl_attention", "--out",
                    str(tmp_path / "out"), "--dask", "local:2"], io.StringIO(), stderr)
    assert (code, stderr.getvalue()) == (
        2, 'grade: error: --dask needs Dask: pip install "attention-grader[dask]"\n')


def test_a_worker_without_namespaces_refuses_to_grade(monkeypatch):
    """Without a network namespace, student code on a Dask worker could reach the scheduler
    and the workers, whose protocol runs code for anyone who reaches it (#21)."""
    from types import SimpleNamespace

    from grader.batch import distributed as grading_on_dask
    from grader.errors import IsolationError
    from grader.sandbox import isolation

    bare = isolation.Offer(prefix=(), reason="the unshare command (util-linux) is not installed",
                           cgroups=None, root=True)
    monkeypatch.setattr(isolation, "offered", lambda: bare)
    plugin = grading_on_dask.Grading("batch-1", "udl_attention", grading.Options())
    with pytest.raises(IsolationError) as refused:
        plugin.setup(SimpleNamespace(address="tcp://10.0.0.7:40000"))
    assert refused.value.message == (
        "Dask worker tcp://10.0.0.7:40000: refusing to grade on it: Linux namespaces are not "
        "available there (the unshare command (util-linux) is not installed), so student code "
        "would share the host's network and could reach the Dask scheduler and workers, whose "
        "protocol runs code for anyone who reaches them; grade on hosts that have namespaces "
        "(`grade doctor`), or with a local batch (leave out --dask)")
    assert refused.value.exit_code == 3 and plugin.zygotes is None  # none was started


DUE_DECLARATION = '''
import dataclasses
from datetime import datetime, timezone

from grader.assignments.positional_encoding import ASSIGNMENT as BASE

ASSIGNMENT = dataclasses.replace(BASE, name="pe_due",
                                 show_hidden_after=datetime(2020, 6, 1, 18, tzinfo=timezone.utc))
'''


@pytest.fixture
def due_assignment(tmp_path, monkeypatch):
    """positional_encoding as "pe_due", whose hidden checks show their details since 2020:
    a declaration in GRADER_ASSIGNMENTS and its references under that name, which the Dask
    workers started by the test inherit with the environment."""
    declarations, stored = tmp_path / "assignments", tmp_path / "references"
    declarations.mkdir()
    stored.mkdir()
    (declarations / "pe_due.py").write_text(DUE_DECLARATION)
    with np.load(ROOT / "solutions" / "references" / "positional_encoding.npz") as data:
        arrays = {key: data[key] for key in data.files}
    meta = json.loads(str(arrays["__meta__"]))
    arrays["__meta__"] = np.array(json.dumps({**meta, "assignment": "pe_due"}))
    np.savez(stored / "pe_due.npz", **arrays)
    monkeypatch.setenv("GRADER_ASSIGNMENTS", str(declarations))
    monkeypatch.setenv("GRADER_REFERENCES", str(stored))
    registry.assignments.cache_clear()
    yield registry.get("pe_due")
    registry.assignments.cache_clear()


def test_a_dask_batch_writes_what_a_local_batch_does_when_hidden_details_are_shown(
        due_assignment, tmp_path):
    solution = (ROOT / "solutions" / "positional_encoding.py").read_text()
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "alice_pe.py").write_text(solution)  # full marks
    # Right up to 16 features, the width of every public case: only hidden cases fail.
    (folder / "bob_pe.py").write_text(solution.replace(
        "np.arange(0, d_model, 2) / d_model", "np.arange(0, d_model, 2) / min(d_model, 16)"))
    (folder / "carol_pe.py").write_text("def positional_encoding(:\n")  # broken
    graded = {}
    for where in (None, "local:1"):
        out = tmp_path / (where or "local").replace(":", "")
        summary = batch.run(folder, due_assignment, out, 2, OPTIONS, progress=io.StringIO(),
                            dask=where)
        assert (summary.graded, summary.errors) == (3, 0)
        graded[where] = rows(out), {name: text.replace(str(folder), "FOLDER")
                                    for name, text in reports(out).items()}
    (local_rows, local_reports), (dask_rows, dask_reports) = graded.values()
    assert [row[:7] for row in local_rows] == [
        ("alice", "pe_due", "alice_pe.py", *local_rows[0][3:4], "graded", 6.0, 6.0),
        ("bob", "pe_due", "bob_pe.py", *local_rows[1][3:4], "graded", *local_rows[1][5:6], 6.0),
        ("carol", "pe_due", "carol_pe.py", *local_rows[2][3:4], "graded", 0.0, 6.0)]
    assert 0 < local_rows[1][5] < 6
    shown = json.loads((tmp_path / "local" / "results" / "bob" / "bob_pe.json").read_text())
    assert (shown["show_hidden_after"], shown["hidden_shown"]) == ("2020-06-01T18:00+00:00", True)
    assert dask_reports == local_reports
    assert dask_rows == local_rows
