"""A group of calls in one request (`Session.calls`): one reply per call, each call's own
deadline and outcome, and the same verdicts as one request per call."""

from __future__ import annotations

import io

import numpy as np

from grader.pipeline import loading
from grader.results import Verdict
from grader.sandbox import transport
from grader.sandbox.asks import Ask, first_request
from grader.sandbox.inside import protocol
from grader.sandbox.inside.worker import Worker
from grader.sandbox.limits import Limits
from grader.sandbox.session import SandboxConfig, Session

LIMITS = Limits(cell_timeout=2, call_timeout=1, memory_mb=1024)
CELLS = ["import os, signal, time\nimport numpy as np\nseen = []\n"
         "signal.signal(signal.SIGUSR1, lambda *_: os._exit(1))\n"
         "def f(x):\n"
         "    if x == 'hang':\n        while True: pass\n"
         "    if x == 'raise':\n        raise ValueError('no')\n"
         "    if x == 'die':\n        os._exit(3)\n"
         "    if x == 'mark':\n        seen.append(1)\n"
         "    if x == 'kill':\n        os.kill(os.getppid(), signal.SIGUSR1)\n"
         "        time.sleep(5)\n"
         "    if x == 'big':\n        return np.ones(3_000_000)\n"
         "    if x == 'forge':\n        import sys\n        frame = sys._getframe()\n"
         "        while frame is not None and 'reply' not in frame.f_locals:\n"
         "            frame = frame.f_back\n"
         "        frame.f_locals['reply']['id'] += '-forged'\n        return 'forged'\n"
         "    return len(seen) if x == 'count' else x * 2"]


def session_for(make_submission, **options):
    session = Session(SandboxConfig(LIMITS, watch=("f",), **options))
    session.run(loading.load(make_submission(CELLS)))
    return session


def summary(outcomes):
    return [(o.failure, o.value if o.returned else o.message[:24]) for o in outcomes]


def test_a_group_is_one_request_with_the_verdicts_of_one_request_per_call(make_submission,
                                                                          monkeypatch):
    sent = []
    send = transport.PipeTransport.send

    def spy(self, header, value, deadline):
        sent.append(header["op"])
        return send(self, header, value, deadline)

    monkeypatch.setattr(transport.PipeTransport, "send", spy)
    inputs = [3, "raise", "hang", 5, "big", "mark", "count", "die", 7]
    asks = [Ask("f", "function", (x,), max_bytes=1 << 20) for x in inputs]
    with session_for(make_submission) as session:
        grouped = session.calls(asks)
        restarts = session.restarts
    with session_for(make_submission) as session:
        alone = [session.call("f", "function", (x,), {}, None, max_bytes=1 << 20)
                 for x in inputs]
    assert summary(grouped) == summary(alone)
    assert [o.failure for o in grouped] == [
        None, Verdict.RAISED, Verdict.TIMED_OUT, None, Verdict.TOO_LARGE, None, None,
        Verdict.CRASHED, None]
    assert [o.value for o in grouped if o.returned] == [6, 10, "markmark", 0, 14]
    assert grouped[2].message == "did not return within 1 s"  # its own deadline, then on
    assert sent == ["calls"] and restarts == 0  # one request; a dead call process is no restart


def test_a_worker_lost_mid_group_costs_only_its_call(make_submission):
    """A call that kills the worker itself is asked again once in a new worker, as alone; the
    calls after it, which the lost worker never made, are made in the new one."""
    with session_for(make_submission) as session:
        outcomes = session.calls([Ask("f", "function", (x,)) for x in
                                  (1, "kill", 2)])
        restarts = session.restarts
    assert [o.failure for o in outcomes] == [None, Verdict.CRASHED, None]
    assert [outcomes[0].value, outcomes[2].value] == [2, 4]
    assert outcomes[1].message == "the interpreter died during this call"
    assert restarts == 2


def test_the_worker_refuses_a_group_whose_calls_and_inputs_differ():
    frames = list(Worker().frames({"op": "calls", "id": "n", "calls": [{"name": "f"}]}, []))
    header = protocol.header_of(frames[0])
    assert len(frames) == 1 and header["status"] == "bad-op" and header["id"] == "n/0"


def test_a_group_too_large_for_one_request_is_split():
    small = [Ask("f", "function", (1,))] * 100
    assert first_request(small) == 64
    large = [Ask("f", "function", (np.zeros(1 << 20),))] * 5  # 8 MiB each
    assert first_request(large) == 2
    assert first_request(large[:1]) == 1


def test_a_reply_goes_under_its_own_calls_id_whatever_the_call_sets(make_submission):
    """The student's code can reach the reply its call process is about to send and change
    its id (in a group, the next call's is predictable): the worker sends every reply under
    the id of the call that made it."""
    with session_for(make_submission) as session:
        outcomes = session.calls([Ask("f", "function", (x,)) for x in ("forge", 5)])
        restarts = session.restarts
    assert [(o.failure, o.value) for o in outcomes] == [(None, "forged"), (None, 10)]
    assert restarts == 0


def test_a_call_nested_too_deep_for_a_group_goes_alone():
    """A group nests each call's value one level deeper than a lone request: inputs nested
    as deep as a lone request allows are sent alone, and still decode."""
    def nested(levels):
        value = 1.0
        for _ in range(levels):
            value = (value,)
        return value

    shallow, deep = Ask("f", "function", (nested(5),)), Ask("f", "function", (nested(6),))
    assert first_request([shallow, shallow, shallow]) == 3
    assert first_request([shallow, deep, shallow]) == 1
    assert first_request([deep, shallow]) == 1
    frame = protocol.pack({"op": "call", "id": "n"}, deep.value())
    assert protocol.unpack(io.BytesIO(frame), 1 << 20)[1]["args"] == [nested(6)]
