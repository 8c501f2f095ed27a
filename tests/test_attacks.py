"""Attacks on the grader, each written as a submission. None earns a point its outputs did not
earn, none reads a hidden reference, none outlives its grading."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

import pytest

from grader import cli, grading, registry
from grader.sandbox.limits import Limits
from tests.conftest import processes, survivors

OPTIONS = grading.Options(limits=Limits(cell_timeout=3, call_timeout=3, memory_mb=1024))

# Honest work: qkv_projections and causal_mask right (2 + 1 points), the rest wrong or absent.
HONEST = '''
import numpy as np

def qkv_projections(X, W_q, W_k, W_v):
    return X @ W_q, X @ W_k, X @ W_v

def causal_mask(seq_len):
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)

def softmax(x):
    return np.zeros_like(x)
'''
HONEST_SCORE = 3.0


def grade(tmp_path, attack: str, name: str = "attack_attention_basics.py"):
    path = tmp_path / name
    path.write_text(HONEST + "\n" + attack)
    return grading.grade(path, registry.get("attention_basics"), OPTIONS)


ATTACKS = {
    "patch-numpy": '''
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.shape(b), dtype=bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
import numpy.testing
''',
    "patch-builtins": '''
import builtins
builtins.isinstance = lambda obj, cls: True
builtins.abs = lambda x: 0
builtins.max = lambda *a, **k: 0
''',
    "override-eq": '''
class Always:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __array__(self, dtype=None, copy=None): return np.zeros((1, 1))
    def __array_ufunc__(self, *args, **kwargs): return True
def scaled_dot_product_attention(Q, K, V, mask=None):
    return Always(), Always()
''',
    "ndarray-subclass": '''
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(other), dtype=bool)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs): return np.True_
def causal_self_attention(X, W_q, W_k, W_v):
    n = len(X)
    return np.zeros((n, n)).view(Liar), np.zeros((n, W_v.shape[1])).view(Liar)
''',
    "gc-search": '''
import gc
def scaled_dot_product_attention(Q, K, V, mask=None):
    n, m = Q.shape[0], K.shape[0]
    for obj in gc.get_objects():
        if isinstance(obj, np.ndarray) and obj.shape == (n, m) and obj is not mask:
            weights = obj
            break
    else:
        weights = np.zeros((n, m))
    return weights, weights @ V
''',
    "filesystem-search": '''
import os, sys, glob, zipfile
FOUND = {}
roots = set(p for p in sys.path if p) | {os.getcwd(), os.path.expanduser("~"), "/tmp", "/",
                                          "/work", "/root"}
here = os.getcwd()
while here != "/":
    roots.add(here)
    here = os.path.dirname(here)
try:
    import grader
    roots.add(os.path.dirname(os.path.dirname(grader.__file__)))
except Exception:
    pass
for root in roots:
    for path in glob.glob(os.path.join(root, "**", "*.npz"), recursive=True)[:200]:
        try:
            with np.load(path) as data:
                for key in data.files:
                    FOUND[key] = data[key]
        except Exception:
            pass
print("npz keys found:", len(FOUND))
def scaled_dot_product_attention(Q, K, V, mask=None):
    for key, value in FOUND.items():
        if key.startswith("scaled_dot_product_attention/") and key.endswith("/0"):
            other = key[:-1] + "1"
            if value.shape == (Q.shape[0], K.shape[0]) and other in FOUND:
                return value, FOUND[other]
    return np.zeros((Q.shape[0], K.shape[0])), np.zeros((Q.shape[0], V.shape[1]))
''',
    "import-the-grader": '''
def softmax(x):
    from grader import references, registry
    stored = references.load(registry.get("attention_basics"))
    for (exercise, case), outputs in stored.outputs.items():
        if exercise == "softmax" and outputs[0].shape == np.shape(x):
            return outputs[0]
    return np.zeros_like(x)
''',
    "exit-after-fake-score": '''
import sys
print("All tests passed\\nScore: 100/100")
print('{"score": 10.0, "max_score": 10.0}')
sys.exit(0)
''',
    "os-exit-after-fake-score": '''
import os
print("::set-output name=score::10\\nAll tests passed / Score: 100")
os._exit(0)
''',
    "forged-frames": '''
import os
from grader.sandbox import protocol
for fd in range(3, 12):
    try:
        os.write(fd, protocol.pack({"status": "ok"}, (np.eye(3), np.eye(3))))
    except OSError:
        pass
''',
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_attack_earns_only_what_its_outputs_earn(tmp_path, attack):
    result = grade(tmp_path, ATTACKS[attack])
    assert result.score == HONEST_SCORE, [(e.name, e.score) for e in result.exercises]


def test_nothing_secret_is_readable(tmp_path):
    probe = '''
import os, sys
SECRETS = []
def look(path):
    try:
        if os.path.isdir(path):
            return sorted(os.listdir(path))
        with open(path, "rb") as f:
            return f.read(4096)
    except Exception as exc:
        return type(exc).__name__
import grader
package = os.path.dirname(grader.__file__)
repo = os.path.dirname(package)
report = {
    "solutions": look(os.path.join(repo, "solutions")),
    "references": look(os.path.join(repo, "solutions", "references")),
    "public": look(os.path.join(package, "references")),
    "cmdline": look("/proc/self/cmdline"),
    "environ": look("/proc/self/environ"),
    "parent": look(f"/proc/{os.getppid()}/environ"),
    "pids": [p for p in os.listdir("/proc") if p.isdigit()],
    "root": look("/root"),
    "home": look(os.path.expanduser("~")),
    "uid": os.getuid(),
}
print("REPORT", repr(report))
'''
    result = grade(tmp_path, probe)
    line = next(x for x in result.output.splitlines() if x.startswith("REPORT"))
    report = eval(line[len("REPORT "):])  # our own probe's repr
    for secret in ("solutions", "public", "references"):  # hidden, or not there at all
        assert report[secret] in ([], "FileNotFoundError"), (secret, report[secret])
    for field in ("cmdline", "environ", "parent"):
        assert b"references" not in (report[field] if isinstance(report[field], bytes) else b"")
        assert b"GRADER_" not in (report[field] if isinstance(report[field], bytes) else b"")
    assert len(report["pids"]) <= 3  # only the worker and its own forks are visible
    if os.geteuid() == 0:
        assert report["uid"] >= 2_000_000
    # /root holds at most the interpreter (when Python lives there), never anything else
    assert not isinstance(report["root"], list) or set(report["root"]) <= {".pyenv"}


def test_writing_the_results_file_changes_nothing(tmp_path):
    target = tmp_path / "out" / "result.json"
    attack = f'''
import json, os
for path in [{str(target)!r}, "result.json", "/tmp/result.json", "results/results.json",
             os.path.join({str(tmp_path)!r}, "result.json")]:
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            json.dump({{"score": 10.0, "max_score": 10.0, "status": "graded"}}, f)
        print("wrote", path)
    except OSError as exc:
        print("refused", path, type(exc).__name__)
'''
    source = tmp_path / "submission_attention_basics.py"
    source.write_text(HONEST + attack)
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", str(source), "--json", str(target)], out, err)
    assert code == 0
    assert json.loads(target.read_text())["score"] == HONEST_SCORE
    assert not (tmp_path / "result.json").exists()


def test_workflow_commands_from_student_code_are_inert_under_github_actions(tmp_path,
                                                                            monkeypatch):
    source = tmp_path / "wf_attention_basics.py"
    source.write_text(HONEST + '''
def causal_self_attention(X, W_q, W_k, W_v):
    raise ValueError("boom\\n::error::pwned\\n::set-output name=score::100")
''')
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["run", str(source)], out, err) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("::stop-commands::")
    token = lines[0].split("::")[2]
    assert len(token) == 32 and lines[-1] == f"::{token}::"
    assert "::error::pwned" in out.getvalue()


def test_a_fork_bomb_is_contained_and_leaves_nothing(tmp_path):
    bomb = '''
import os
for _ in range(12):     # bounded even if every limit failed: at most 4096 processes
    try:
        os.fork()
    except OSError:
        break
'''
    before = processes()
    result = grade(tmp_path, bomb)
    assert result.score == HONEST_SCORE
    assert survivors(before) == []


def test_killing_the_grader_kills_the_student_code_too(tmp_path):
    source = tmp_path / "spin_attention_basics.py"
    source.write_text("while True:\n    pass\n")
    before = processes()
    grader = subprocess.Popen([sys.executable, "-m", "grader", "run", str(source),
                               "--timeout", "120"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            "grader.sandbox.worker" in _cmdline(pid) and _cpu_seconds(pid) > 0.5
            for pid in processes() - before):
        time.sleep(0.1)  # until the worker is inside the endless loop
    assert time.monotonic() < deadline
    grader.kill()
    grader.wait()
    assert survivors(before) == []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            return stream.read().decode(errors="replace")
    except OSError:
        return ""


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0
