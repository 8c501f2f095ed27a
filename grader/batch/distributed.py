"""A batch graded on a Dask cluster: `grade batch ... --dask ADDRESS` (or `--dask local:N`).

`Cluster` is the batch's pool (`jobs.Pool`): the batch finds the submissions, writes the
reports and records the results in its gradebook exactly as it does with threads; only where
each submission is graded changes.

- A submission travels as its files' bytes with its `Job` (names and hashes), and comes back
  as text: the result as the instructor's JSON (`grader.result_json`, which reads back whole
  as the same `Result`) and its HTML and Markdown reports, rendered on the worker.
- A Dask worker grades it as a thread of a local batch does (`jobs.grade_job`), from a copy
  of the files in a temporary folder: `grading.grade` runs the student's code in the sandbox,
  never in the Dask worker's own process, so a worker host needs the same Linux isolation as
  a grading machine (`grade doctor`).
- A worker plugin, registered for the batch and for each worker that joins later, checks the
  worker's references (`grading.ready`) before any grading, and keeps the worker's zygote warm
  until the batch ends. A worker without them stops the batch with one error naming the worker,
  the file and the fix.
- The scheduler is told to give a submission up after two workers died grading it
  (`allowed_failures` = 1): it is recorded as an error, and the batch goes on. The batch hands
  the cluster no more submissions than it has threads, so that a worker's death counts against
  the submission it was grading only.
- A cluster whose workers have all left stops the batch after WORKERS_TIMEOUT_S with an error
  that says how to go on; Dask alone would keep the submissions waiting for a worker forever.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
import uuid
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader import __version__, result_json
from grader.batch import jobs
from grader.course import references, registry
from grader.errors import GraderError, IsolationError, UsageError
from grader.model import Assignment
from grader.pipeline import grading, loading, submissions
from grader.sandbox import isolation
from grader.sandbox.zygote import Zygotes

INSTALL = 'pip install "attention-grader[dask]"'
try:
    import distributed
except ImportError:  # an optional extra: the batch imports this module for --dask only
    raise UsageError(f"--dask needs Dask: {INSTALL}") from None
ALLOWED_FAILURES = 1
"""Worker deaths a submission may cause before the scheduler gives it up (Dask's default is 3)."""
CONNECT_TIMEOUT_S = 30
WORKERS_TIMEOUT_S = 120
"""How long a batch waits for a first worker to join, or for one to come back when every
worker has left (the batch stops then; what was graded is in the gradebook)."""
WIDTH_EVERY_S = 1.0
LOOPBACK = "127.0.0.1"
"""Where a local:N cluster's dashboard listens: reachable from this machine only."""


def parcel(path: Path, options: grading.Options) -> tuple[bytes, int]:
    """A file's bytes and its size, from which a worker makes a copy that grading treats as it
    would the file: one over the size limit travels as its size alone (grading refuses it by
    its size, before reading a byte of it), one that cannot be read as size -1 (no copy:
    grading says it cannot be read)."""
    try:
        size = os.stat(path, follow_symlinks=False).st_size
        if size > options.limits.submission_mb * loading.MB:
            return b"", size
        data = submissions.read_bytes(path)
        return data, len(data)
    except OSError:
        return b"", -1


class Grading(distributed.WorkerPlugin):
    """The worker plugin of one batch: the assignment, the options and the references, checked
    on each worker as it joins; the worker's zygotes are kept until the batch ends."""

    def __init__(self, name: str, assignment: str, options: grading.Options) -> None:
        self.name = name
        self.assignment_name = assignment
        # The client's zygotes stay with the client: each worker starts its own in `setup`.
        self.options = replace(options, zygotes=None)
        self.version = __version__
        self.problem: GraderError | None = None
        self.zygotes: Zygotes | None = None

    def setup(self, worker: Any) -> None:
        """On the worker: check what grading needs; a GraderError names the worker."""
        try:
            if self.version != __version__:
                raise UsageError(f"it has attention-grader {__version__}, the client "
                                 f"{self.version}; install the same version on every host")
            offer = isolation.offered()
            if not offer.namespaces:
                raise IsolationError(
                    f"refusing to grade on it: Linux namespaces are not available there "
                    f"({offer.reason}), so student code would share the host's network and "
                    "could reach the Dask scheduler and workers, whose protocol runs code for "
                    "anyone who reaches them; grade on hosts that have namespaces (`grade "
                    "doctor`), or with a local batch (leave out --dask)")
            self.assignment: Assignment = registry.get(self.assignment_name)
            self.stored: references.References = grading.ready(self.assignment, self.options)
        except GraderError as exc:
            self.problem = type(exc)(f"Dask worker {worker.address}: {exc.message}")
            raise self.problem from None
        self.zygotes = Zygotes()
        self.options = replace(self.options, zygotes=self.zygotes)

    def teardown(self, worker: Any) -> None:
        """On the worker: stop the batch's zygotes."""
        if self.zygotes is not None:
            self.zygotes.close()
            self.zygotes = None


def grade_remote(plugin: str, job: jobs.Job, parcels: tuple[tuple[bytes, int], ...]
                 ) -> tuple[str, str, str]:
    """On a Dask worker: grade one submission from its files' `parcel`s, as a local batch
    does; the result's JSON (the instructor's), and its HTML and Markdown reports."""
    worker = distributed.get_worker()
    grader = worker.plugins.get(plugin)
    if not isinstance(grader, Grading):
        raise GraderError(f"Dask worker {worker.address} was not prepared for this batch; "
                          "run the same command again")
    if grader.problem is not None:
        raise grader.problem
    with tempfile.TemporaryDirectory(prefix="grader-") as folder:
        copies = []
        for index, (name, (data, size)) in enumerate(zip(job.names, parcels, strict=True)):
            copy = Path(folder) / str(index) / Path(name).name
            copy.parent.mkdir()
            if size >= 0:
                copy.write_bytes(data)
                os.truncate(copy, size)  # sparse: only its size was sent
            copies.append(copy)
        graded = jobs.grade_job(job, grader.assignment, grader.options, grader.stored,
                                 tuple(copies))
    return result_json.render(graded.result, instructor=True), graded.html, graded.markdown


def _configure(dask_scheduler: Any) -> None:
    """On the scheduler: give a submission up after two worker deaths."""
    dask_scheduler.allowed_failures = ALLOWED_FAILURES


class Cluster:
    """A Dask cluster as a batch's pool: a scheduler's address, or local:N for a LocalCluster
    of N worker processes of one thread each on this machine."""

    def __init__(self, address: str, assignment: Assignment, options: grading.Options) -> None:
        self.address, self.assignment, self.options = address, assignment, options
        self.label = "grading on Dask"
        self.dashboard = ""
        """The dashboard of a local:N cluster (on 127.0.0.1); another cluster's is its own."""
        self._stack = ExitStack()
        self._lock = threading.Lock()
        self._remote: dict[Future[jobs.Graded], Any] = {}
        self._width, self._checked = 1, 0.0
        self._alone_since: float | None = None

    def __enter__(self) -> Cluster:
        with ExitStack() as stack:
            self._client = self._connect(stack)
            self._client.run_on_scheduler(_configure)
            name = f"attention-grader-{uuid.uuid4().hex}"
            stack.callback(self._forget, name)
            self._plugin = name
            self._client.register_plugin(
                Grading(name, self.assignment.name, self.options), name=name)
            workers = len(self._client.nthreads())
            self.label = f"grading on {workers} Dask worker{'s' * (workers != 1)}"
            if self.dashboard:
                self.label += f", dashboard {self.dashboard}"
            self._stack = stack.pop_all()
        return self

    def _connect(self, stack: ExitStack) -> distributed.Client:
        if self.address.startswith("local:"):
            count = self.address.partition(":")[2]
            if not count.isdigit() or int(count) < 1:
                raise UsageError(f"--dask {self.address}: write local:N, N worker processes "
                                 "on this machine, for example local:4")
            # Dask's web pages have no authentication and show the workers' logs and stacks:
            # on this machine only (":0" would listen on every interface). The scheduler, the
            # workers and their own pages listen on 127.0.0.1 too (LocalCluster's default).
            local = stack.enter_context(distributed.LocalCluster(
                n_workers=int(count), threads_per_worker=1, processes=True,
                dashboard_address=f"{LOOPBACK}:0", silence_logs=logging.ERROR))
            self.dashboard = local.dashboard_link
            return stack.enter_context(distributed.Client(local))
        security = distributed.Security()  # Dask's configuration: TLS certificates
        if self.address.startswith("tls://") and not (
                getattr(security, "tls_ca_file", None)
                and getattr(security, "tls_client_cert", None)):
            raise UsageError(f"--dask {self.address}: a tls:// scheduler needs this client's "
                             "certificate: set DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
                             "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT and "
                             "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY (see docs/deployment.md, "
                             "\"On a Dask cluster\")")
        try:
            client = stack.enter_context(distributed.Client(
                self.address, timeout=CONNECT_TIMEOUT_S, security=security))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--dask {self.address}: no Dask scheduler answers there "
                             f"({exc}); start one with `dask scheduler` and pass the address "
                             "it prints (tcp://HOST:8786), or local:N") from None
        try:
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except TimeoutError:
            raise UsageError(f"--dask {self.address}: no Dask worker joined the scheduler in "
                             f"{WORKERS_TIMEOUT_S} s; start them with `dask worker "
                             f"{self.address} --nworkers N --nthreads 1` on each host, N its "
                             "cores") from None
        return client

    def _forget(self, name: str) -> None:
        """Unregister the batch's plugin: each worker lets its zygote go."""
        try:
            self._client.unregister_worker_plugin(name)
        except Exception:  # the cluster is going away anyway; nothing is left to release
            pass

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def width(self) -> int:
        """The threads of the cluster's workers now (asked at most once a second)."""
        now = time.monotonic()
        if now - self._checked > WIDTH_EVERY_S:
            self._width = max(1, sum(self._client.nthreads().values()))
            self._checked = now
        return self._width

    def check(self) -> None:
        """A GraderError when the cluster has had no worker for WORKERS_TIMEOUT_S: Dask would
        keep the submissions waiting for one forever."""
        if self._client.nthreads():
            self._alone_since = None
            return
        now = time.monotonic()
        if self._alone_since is None:
            self._alone_since = now
        elif now - self._alone_since >= WORKERS_TIMEOUT_S:
            raise GraderError(
                f"--dask {self.address}: every Dask worker left the scheduler, and none came "
                f"back in {WORKERS_TIMEOUT_S} s; the gradebook keeps what was graded. Start "
                f"workers (`dask worker {self.address} --nworkers N --nthreads 1` on each "
                "host) and run the same command again: it grades only what is missing")

    def submit(self, job: jobs.Job) -> Future[jobs.Graded]:
        """Send one submission to the cluster."""
        parcels = tuple(parcel(path, self.options) for path in job.paths)
        done: Future[jobs.Graded] = Future()
        remote = self._client.submit(grade_remote, self._plugin, job, parcels, pure=False,
                                     key=f"grade-{uuid.uuid4().hex}")
        with self._lock:  # a Dask future forgotten is a task cancelled
            self._remote[done] = remote

        def finished(remote: Any) -> None:
            with self._lock:
                self._remote.pop(done, None)
            if not done.set_running_or_notify_cancel():
                return
            try:
                done.set_result(self._graded(job, remote))
            except BaseException as exc:
                done.set_exception(exc)

        remote.add_done_callback(finished)
        return done

    def _graded(self, job: jobs.Job, remote: Any) -> jobs.Graded:
        """What came back: the result and its reports, an error for a submission that killed
        two workers, or a GraderError that stops the batch."""
        try:
            document, html, markdown = remote.result()
        except distributed.KilledWorker:
            return _killed(job, self.assignment)
        except GraderError:
            raise
        except BaseException as exc:
            raise GraderError(f"the Dask cluster failed to grade {job.relative} "
                              f"({type(exc).__name__}: {exc}); run the same command again: "
                              "it grades only what the gradebook is missing") from None
        return jobs.Graded(result_json.parse(document), html, markdown)


def _killed(job: jobs.Job, assignment: Assignment) -> jobs.Graded:
    """The result of a submission whose grading killed its Dask worker twice."""
    files = ", ".join(str(path) for path in job.paths)
    result = grading.failed_result(
        assignment, job.relative,
        f"{files}: the Dask worker grading it died, twice (the grader's process, not the "
        "sandbox); grade it alone with `grade run` to see why",
        grader_failed=True, sha256=job.sha256,
        files=job.names if len(job.names) > 1 else ())
    return jobs.Graded.of(result)
