"""Calls share a forked call process only while each leaves the notebook's state as it found it.

Each function below answers wrongly the first time it runs in a process and rightly once it
finds the mark its first call left, each through another place a function can keep state in.
Called three times, it must answer wrongly three times: each call after one that left a
mark runs in a fresh fork, as if every call had a fork of its own (`fork_every_call`, the
yardstick). A pure function, called three times, shares one process (the mechanism is used).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from grader import result_json
from grader.course import registry
from grader.pipeline import checking, grading, loading
from grader.results import Verdict
from grader.sandbox import isolation
from grader.sandbox.config import SandboxConfig
from grader.sandbox.inside import settings
from grader.sandbox.limits import Engine, Limits
from grader.sandbox.session import Session
from tests.helpers.corpus import CORPUS

RIGHT = "np.exp(x - x.max()) / np.exp(x - x.max()).sum()"
WRONG = "np.zeros_like(x)"

# name -> (set-up at the top of the module, the test for "a call ran here before", the mark)
CHANNELS = {
    "global rebound": ("SEEN = False", "SEEN", "globals()['SEEN'] = True"),
    "global list": ("SEEN = []", "SEEN", "SEEN.append(1)"),
    "global array changed in place": ("SEEN = np.zeros(3)", "SEEN[0] == 1", "SEEN[0] = 1"),
    "global dict in a dict": ("SEEN = {'a': {}}", "SEEN['a']", "SEEN['a']['b'] = 1"),
    "object attribute": ("class Box:\n    pass\nBOX = Box()", "hasattr(BOX, 'seen')",
                         "BOX.seen = True"),
    "class attribute": ("class Flag:\n    seen = False", "Flag.seen", "Flag.seen = True"),
    "module attribute (numpy)": ("", "hasattr(np, '_seen')", "np._seen = True"),
    "module attribute (math)": ("import math", "hasattr(math, '_seen')", "math._seen = 1"),
    "module attribute (not named by the notebook)": (
        "", "hasattr(__import__('json'), '_seen')", "__import__('json')._seen = 1"),
    "builtins": ("import builtins", "hasattr(builtins, '_seen')", "builtins._seen = 1"),
    "numpy's global random state": ("START = np.random.get_state()[2]",
                                    "np.random.get_state()[2] != START", "np.random.rand()"),
    "numpy Generator": ("RNG = np.random.default_rng(0)\nSTART = RNG.bit_generator.state",
                        "RNG.bit_generator.state != START", "RNG.random()"),
    # Python's random reseeds itself in each fork: the mark is a seed of the function's own.
    "Python's random": ("import random\nrandom.seed(7)\nSEEDED = random.getstate()",
                        "random.getstate() == SEEDED", "random.seed(7)"),
    "a cache in a closure": ("def _make():\n    cache = {}\n    def mark():\n"
                             "        return cache.setdefault('seen', len(cache))\n"
                             "    def seen():\n        return bool(cache)\n"
                             "    return mark, seen\nMARK, CACHED = _make()",
                             "CACHED()", "MARK()"),
    "functools.lru_cache": ("import functools\n@functools.lru_cache(maxsize=None)\n"
                            "def helper(n):\n    return n",
                            "helper.cache_info().currsize", "helper(1)"),
    "a default argument": ("def remember(memo=[]):\n    memo.append(1)\n    return memo",
                           "len(remember()) > 1", "pass"),
    "a function attribute": ("def helper():\n    pass", "hasattr(helper, 'seen')",
                             "helper.seen = True"),
    "an iterator": ("IT = iter(range(100))", "next(IT) > 0", "pass"),
    "a generator": ("def _count():\n    n = 0\n    while True:\n        yield n\n        n += 1\n"
                    "GEN = _count()", "next(GEN) > 0", "pass"),
    "the environment": ("import os", "'SEEN' in os.environ", "os.environ['SEEN'] = '1'"),
    "sys.path": ("import sys", "'/seen' in sys.path", "sys.path.append('/seen')"),
    "an imported module": ("import sys", "'colorsys' in sys.modules", "import colorsys"),
    "the working folder": ("import os", "os.getcwd() == '/'", "os.chdir('/')"),
    "numpy's error settings": ("START = np.geterr()", "np.geterr() != START",
                               "np.seterr(all='ignore')"),
    "the recursion limit": ("import sys\nSTART = sys.getrecursionlimit()",
                            "sys.getrecursionlimit() != START",
                            "sys.setrecursionlimit(START + 1)"),
    "a signal handler": ("import signal", "signal.getsignal(signal.SIGUSR1) is not "
                         "signal.SIG_DFL", "signal.signal(signal.SIGUSR1, lambda *a: None)"),
    "an open descriptor": ("import os", "os.path.exists('/proc/self/fd/77')",
                           "os.dup2(0, 77, inheritable=False)"),
    "a thread": ("import threading, time",
                 "any(t.name == 'seen' for t in threading.enumerate())",
                 "threading.Thread(target=time.sleep, args=(30,), name='seen', "
                 "daemon=True).start()"),
    "sys.argv changed in place": ("import sys", "'--seen' in sys.argv",
                                  "sys.argv.append('--seen')"),
    "numpy's error callback": ("", "np.geterrcall() is not None", "np.seterrcall(print)"),
    "the signal mask": ("import signal", "signal.SIGUSR2 in signal.pthread_sigmask("
                        "signal.SIG_BLOCK, [])", "signal.pthread_sigmask(signal.SIG_BLOCK, "
                        "[signal.SIGUSR2])"),
    "torch's random state": ("import torch\nSTART = torch.get_rng_state().clone()",
                             "not torch.equal(torch.get_rng_state(), START)", "torch.rand(1)"),
}


def source(setup: str, seen: str, mark: str) -> str:
    return (f"import numpy as np\n{setup}\n\n"
            f"def softmax(x):\n    x = np.asarray(x, dtype=float)\n"
            f"    if {seen}:\n        return {RIGHT}\n    {mark}\n    return {WRONG}\n")


def three_calls(make_submission, text: str, **config: object) -> list:
    """The outcomes of three calls of softmax in one group, after the module ran."""
    path = make_submission(text, name="alice_udl_attention")
    submission = loading.load(path, Limits(), "udl_attention")
    x = np.array([0.5, -1.0, 2.0])
    # No call here waits for a limit: a statement may take its time (importing torch on a
    # machine busy with another suite takes more than the default 10 s). A module imports
    # torch itself, where no assignment preloads it: a build with CUDA maps 3 GB as it does.
    limits = Limits(cell_timeout=120, call_timeout=60, memory_mb=8192)
    with Session(SandboxConfig(limits, preload=("numpy",),
                               watch=("softmax",), module_name="submission",
                               **config)) as session:
        cells = session.run(submission)
        assert all(cell.status.value == "ok" for cell in cells), cells
        return [session.call("softmax", "function", (x,), {}, None, group="hidden")
                for _ in range(3)]


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_a_call_that_leaves_a_mark_gives_the_next_call_a_fresh_fork(make_submission, channel):
    if "torch" in CHANNELS[channel][0]:
        pytest.importorskip("torch")  # the torch extra
    outcomes = three_calls(make_submission, source(*CHANNELS[channel]))
    assert [o.returned for o in outcomes] == [True] * 3, outcomes
    assert [float(np.abs(o.value).sum()) for o in outcomes] == [0.0] * 3, \
        f"{channel}: a later call saw what the first left behind"
    assert [o.reused for o in outcomes] == [False] * 3


@pytest.mark.parametrize("channel", ["global list", "module attribute (numpy)",
                                     "the working folder", "functools.lru_cache"])
def test_a_mark_left_in_a_jupyter_kernel_gives_the_next_call_a_fresh_fork(make_submission,
                                                                          channel):
    """`--engine kernel` shares call processes too (below): the same picture sees a mark
    there. Every channel without torch was tried there and passes, but for `an imported
    module`, whose module a kernel has imported already; these four, of four kinds, keep the
    suite short."""
    outcomes = three_calls(make_submission, source(*CHANNELS[channel]), engine=Engine.KERNEL)
    assert [float(np.abs(o.value).sum()) for o in outcomes] == [0.0] * 3
    assert [o.reused for o in outcomes] == [False] * 3


def test_a_pure_function_shares_one_process_and_answers_the_same(make_submission):
    pure = source("", "True", "pass")
    shared = three_calls(make_submission, pure)
    assert [o.reused for o in shared] == [False, True, True]
    alone = three_calls(make_submission, pure, fork_every_call=True)
    assert [o.reused for o in alone] == [False, False, False]
    for one, other in zip(shared, alone, strict=True):
        np.testing.assert_array_equal(one.value, other.value)
    assert float(shared[0].value.sum()) == pytest.approx(1.0)


def test_calls_share_a_process_in_a_jupyter_kernel_too(make_submission):
    """`--engine kernel` shares as the fast engine does, where each call had a fork of its
    own: the picture imported numpy.random (which the kernel had not) as it read numpy's
    random state, so each picture differed from the one before; the kernel's shell, reached
    through `get_ipython` (here kept in a global too), was too large to picture; and `Out`
    held a long list that a cell showed (followed, more objects than a picture takes). They
    are pictured by identity (`state.KERNEL_MODULES`)."""
    setup = "ip = get_ipython()\n[[i] for i in range(60_000)]\nassert len(Out) == 1, Out.keys()"
    shared = three_calls(make_submission, source(setup, "True", "pass"), engine=Engine.KERNEL)
    assert [o.reused for o in shared] == [False, True, True]
    assert float(shared[2].value.sum()) == pytest.approx(1.0)


@pytest.fixture
def packages_in_tmp(monkeypatch):
    """A folder of more files than a picture lists, in the machine's /tmp, that the sandbox
    binds as it binds an interpreter's packages: what a venv made in /tmp (a CI runner's
    temporary folder, `mktemp -d`, tox) puts below the sandbox's own /tmp."""
    if not isolation.offered().namespaces:
        pytest.skip("without namespaces the sandbox binds nothing: see grade doctor")
    folder = Path(tempfile.mkdtemp(prefix="venv-like-", dir="/tmp"))
    folder.chmod(0o755)  # as a venv's folders are: the worker's user lists it
    for number in range(settings.MAX_FILES + 1):
        (folder / f"module_{number}.py").touch()
    binds, links = isolation.visible()
    monkeypatch.setattr(isolation, "visible", lambda: ((*binds, str(folder)), links))
    yield folder
    shutil.rmtree(folder)


def test_calls_share_a_process_when_the_interpreter_lives_in_tmp(make_submission,
                                                                 packages_in_tmp):
    pure = source("import os\nBOUND = os.path.isdir(" + repr(str(packages_in_tmp)) + ")",
                  "BOUND", "pass")
    shared = three_calls(make_submission, pure)
    assert float(shared[0].value.sum()) == pytest.approx(1.0)  # the bind was there to see
    assert [o.reused for o in shared] == [False, True, True]


def test_a_read_only_mount_is_left_out_unless_a_writable_one_is_below_it():
    mountinfo = "\n".join([
        "1 0 0:1 / / ro,relatime - tmpfs tmpfs ro",
        "2 1 0:2 / /tmp rw,nosuid - tmpfs tmpfs rw",
        "3 2 8:1 /v /tmp/my\\040venv/lib ro,relatime - ext4 /dev/sda1 rw",
        "4 1 8:1 /p /opt/pkg ro - ext4 /dev/sda1 rw",
        "5 4 0:3 / /opt/pkg/conn rw - tmpfs tmpfs rw",
        "6 1 8:1 /x /opt/pkgs ro - ext4 /dev/sda1 rw",
        "7 0 0:4"])  # cut short: ignored
    assert settings.read_only_mounts(mountinfo) == {"/tmp/my venv/lib", "/opt/pkgs"}


def test_a_call_that_fails_gives_the_next_call_a_fresh_fork(make_submission):
    flaky = ("import numpy as np\nCALLS = []\n\ndef softmax(x):\n    CALLS.append(1)\n"
             "    raise ValueError('no')\n")
    outcomes = three_calls(make_submission, flaky)
    assert [o.failure for o in outcomes] == [Verdict.RAISED] * 3
    assert [o.reused for o in outcomes] == [False] * 3


def test_public_and_hidden_calls_never_share_a_process(make_submission):
    path = make_submission(source("", "True", "pass"), name="alice_udl_attention")
    submission = loading.load(path, Limits(), "udl_attention")
    x = np.array([1.0, 2.0])
    with Session(SandboxConfig(preload=("numpy",), watch=("softmax",),
                               module_name="submission")) as session:
        session.run(submission)
        groups = ["public", "public", "hidden", "hidden", "public"]
        reused = [session.call("softmax", "function", (x,), {}, None, group=group).reused
                  for group in groups]
    assert reused == [False, True, False, True, False]


def test_no_case_is_asked_twice_so_no_answer_learns_that_the_first_failed(make_submission,
                                                                          monkeypatch):
    """A function that marks each input it is given in a file answers one way the first time
    and another when asked the same inputs again: a second ask after a failure would tell it
    that its first answer failed. It scores what a fork per call gives it, and the grader
    never asks a case's inputs twice at one place. A public case that fails at the end is
    asked again right after its definition (it fails there too: each call's files are its
    fork's); a hidden case is asked once, at the end, whatever its answer."""
    marks = ("import os, zlib\nimport numpy as np\n\ndef softmax(x):\n"
             "    x = np.asarray(x, dtype=float)\n"
             "    mark = f'asked-{zlib.crc32(x.tobytes())}'\n"
             "    if not os.path.exists(mark):\n        open(mark, 'w').close()\n"
             f"        return {WRONG}\n    return {RIGHT}\n")
    asked: list[tuple[str, bytes, str]] = []
    original = Session.calls

    def spy(self, asks):
        asked.extend((ask.name, np.asarray(ask.args[0]).tobytes(), ask.at) for ask in asks)
        return original(self, asks)

    monkeypatch.setattr(Session, "calls", spy)
    path = make_submission(marks, name="alice_udl_attention")
    udl = registry.get("udl_attention")

    def softmax_score(**options: object) -> float:
        result = grading.grade(path, udl, grading.Options(**options))
        return next(e.score for e in result.exercises if e.name == "softmax")

    assert softmax_score() == 0
    softmax_asks = [ask for ask in asked if ask[0] == "softmax"]
    assert len(softmax_asks) == len(set(softmax_asks)) > 0
    places = {case.name: [at for _, given, at in softmax_asks
                          if given == np.asarray(case.inputs()[0]).tobytes()]
              for case in udl.exercise("softmax").cases}
    assert places == {case.name: ["end", "definition"] if case.visibility.value == "public"
                      else ["end"] for case in udl.exercise("softmax").cases}
    assert softmax_score(fork_every_call=True) == 0


def test_a_hidden_case_is_asked_once_where_the_public_case_passed(make_submission,
                                                                 monkeypatch):
    """A later cell rebinds a global the function uses: the public case fails at the end and
    passes right after the defining cell, marked. Each hidden case is then asked there only,
    once, and passes with the same mark; no hidden answer decides another ask."""
    asked: list[tuple[str, bytes, str]] = []
    original = Session.calls

    def spy(self, asks):
        asked.extend((ask.name, np.asarray(ask.args[0]).tobytes(), ask.at) for ask in asks)
        return original(self, asks)

    monkeypatch.setattr(Session, "calls", spy)
    path = make_submission(["import numpy as np\nSCALE = 1.0",
                            f"def softmax(x):\n    x = np.asarray(x, dtype=float)\n"
                            f"    return SCALE * ({RIGHT})",
                            "SCALE = 2.0"], name="alice_udl_attention")
    udl = registry.get("udl_attention")
    result = grading.grade(path, udl, grading.Options())
    softmax = udl.exercise("softmax")
    places = {case.name: [at for name, given, at in asked if name == "softmax"
                          and given == np.asarray(case.inputs()[0]).tobytes()]
              for case in softmax.cases}
    assert places == {case.name: ["end", "definition"] if case.visibility.value == "public"
                      else ["definition"] for case in softmax.cases}
    checks = next(e for e in result.exercises if e.name == "softmax").checks
    assert [(c.name, c.passed, c.caution) for c in checks] == [
        (case.name, True, checking.LATE if case.visibility.value == "public"
         else checking.LATE_HIDDEN) for case in softmax.cases]


def test_a_file_a_call_writes_is_seen_as_in_a_fork_of_its_own(make_submission):
    """Files outlive a fork (the calls of a submission share its /tmp, and did before): a
    call that writes one gives the next a fresh fork, and every answer is the yardstick's."""
    text = source("import os", "os.path.exists('seen')", "open('seen', 'w').close()")
    shared = three_calls(make_submission, text)
    alone = three_calls(make_submission, text, fork_every_call=True)
    sums = [float(np.abs(o.value).sum()) for o in shared]
    assert sums == [float(np.abs(o.value).sum()) for o in alone] == [0.0, 1.0, 1.0]
    assert [o.reused for o in shared] == [False, False, True]


def test_a_namespace_too_large_to_picture_gets_a_fork_per_call(make_submission):
    big = source("BIG = np.ones(1 << 20)", "True", "pass")  # 8 MiB: past state.MAX_BYTES
    assert [o.reused for o in three_calls(make_submission, big)] == [False] * 3


def test_grading_with_shared_call_processes_equals_a_fork_per_call(make_submission):
    """The same submissions graded both ways give the same results, message for message."""
    udl = registry.get("udl_attention")
    paths = [CORPUS / "udl_attention" / name for name in ("loops.ipynb", "seed002.ipynb",
                                                          "vectorised.py")]
    paths.append(make_submission(source(*CHANNELS["global list"]),
                                 name="marks_udl_attention"))

    def graded(**options: object) -> list[dict]:
        results = []
        for path in paths:
            result = grading.grade(path, udl, grading.Options(**options))
            data = result_json.to_dict(result, instructor=True)
            data.pop("duration_s")
            results.append(data)
        return results

    assert graded() == graded(fork_every_call=True)
