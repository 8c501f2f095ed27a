"""The `grade` command line, driven in-process through `cli.run`."""

from __future__ import annotations

import io
import json

import pytest

from grader import cli
from tests.conftest import ROOT


def invoke(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_list_shows_assignments_functions_and_points():
    code, out, err = invoke("list")
    assert code == 0 and err == ""
    assert "attention_basics  (10 points)" in out
    assert "udl_attention  (10 points)" in out
    assert "torch_attention  (5 points)" in out
    assert "  multihead_scaled_self_attention(X, omega_v1," in out
    assert "5 pts, 4 cases (1 public, 2 hidden worth points)" in out
    assert "causal_mask(seq_len)  1 pt, 3 cases (1 public, 1 hidden worth points)" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.run(["--version"], io.StringIO(), io.StringIO())
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == "grade 0.1.0\n"


def test_usage_error_exits_2_without_traceback():
    code, out, err = invoke("frobnicate")
    assert code == 2
    assert err.startswith("grade: error: grade: argument command: invalid choice: 'frobnicate'")
    assert "Traceback" not in err


def test_references_verify_passes_on_the_shipped_references():
    code, out, _ = invoke("references", "verify", "udl_attention")
    assert code == 0
    assert out == "udl_attention: references match solutions/udl_attention.py\n"


def test_unknown_assignment_is_a_usage_error():
    code, _, err = invoke("references", "verify", "nope")
    assert code == 2 and "unknown assignment 'nope'" in err


CORPUS = "tests/corpus"


def test_run_prints_a_summary_and_writes_the_json_schema(tmp_path):
    out_json = tmp_path / "result.json"
    code, out, err = invoke("run", f"{CORPUS}/udl_attention/seed002.ipynb", "--assignment",
                            "udl_attention", "--json", str(out_json))
    assert code == 0, err
    assert "seed002.ipynb · udl_attention: 4 / 10" in out
    assert "✗ multihead_scaled_self_attention 0/5  (1/4 checks)" in out
    # The book's softmax_cols is given, not the student's: shown, never scored.
    assert "· softmax_cols given, not scored  (2/3 checks)" in out
    assert "large-values (hidden, no points): [unstable-softmax]" in out
    # Seed 002's float(k.T @ q_n) fails only under NumPy 2: said once, with the fix.
    assert out.count("NumPy 2 no longer turns a one-element array into a number") == 1
    assert "write x.item() instead of float(x)" in out
    data = json.loads(out_json.read_text())
    assert set(data) >= {"schema", "assignment", "submission", "status", "error", "score",
                         "max_score", "duration_s", "cells", "exercises"}
    assert (data["schema"], data["status"], data["error"]) == ("grader.result/1", "graded", None)
    assert data["score"] == 4.0 and data["max_score"] == 10.0
    exercise = data["exercises"][4]
    assert set(exercise) >= {"name", "score", "max_score", "status", "checks"}
    assert exercise["status"] == "failed"
    check = exercise["checks"][0]
    assert set(check) >= {"name", "visibility", "passed", "score", "max_score", "message",
                          "diagnosis"}
    assert (check["visibility"], check["passed"]) == ("public", False)
    # every code cell is listed; the markdown cell 2 is not
    assert [(c["index"], c["status"]) for c in data["cells"]] == [(1, "error"), (3, "ok")]
    assert data["cells"][1]["message"] == ""


def test_assignment_comes_from_metadata_or_file_name(tmp_path):
    code, out, _ = invoke("run", f"{CORPUS}/udl_attention/loops.ipynb")
    assert code == 0 and "loops.ipynb · udl_attention: 10 / 10" in out
    named = tmp_path / "bob_attention_basics.py"
    named.write_text((ROOT / "solutions" / "attention_basics.py").read_text())
    code, out, _ = invoke("run", str(named))
    assert code == 0 and "bob_attention_basics.py · attention_basics: 10 / 10" in out


def test_unknown_assignment_is_a_usage_error_naming_the_file(tmp_path):
    path = tmp_path / "mystery.py"
    path.write_text("x = 1\n")
    code, out, err = invoke("run", str(path))
    assert code == 2 and out == ""
    assert f"cannot tell the assignment of {path}" in err and "pass --assignment NAME" in err


def test_error_status_and_fail_under_exit_1(tmp_path):
    code, out, _ = invoke("run", f"{CORPUS}/broken/not_json.ipynb", "--assignment",
                          "attention_basics")
    assert code == 1 and "could not be graded" in out
    seed = (f"{CORPUS}/udl_attention/seed002.ipynb", "--assignment", "udl_attention")
    assert invoke("run", *seed, "--fail-under", "4.1")[0] == 1
    assert invoke("run", *seed, "--fail-under", "4")[0] == 0


def test_max_submission_mb_is_the_limit_the_refusal_names(tmp_path):
    path = tmp_path / "big_udl_attention.py"
    path.write_text((ROOT / "solutions" / "udl_attention.py").read_text() + "#" * 30_000 + "\n")
    out_json = tmp_path / "big.json"
    code, out, _ = invoke("run", str(path), "--max-submission-mb", "0.02", "--json",
                          str(out_json))
    data = json.loads(out_json.read_text())
    assert (code, data["status"], data["score"]) == (1, "error", 0.0)
    assert "over the 0.02 MB limit for a submission file (--max-submission-mb)" in data["error"]
    code, out, _ = invoke("run", str(path), "--max-submission-mb", "1", "--json", str(out_json))
    assert (code, json.loads(out_json.read_text())["score"]) == (0, 10.0)


def test_a_folder_is_every_submission_in_it(tmp_path):
    for name in ("a_udl_attention.py", "b_udl_attention.py"):
        (tmp_path / name).write_text((ROOT / "solutions" / "udl_attention.py").read_text())
    (tmp_path / "notes.txt").write_text("not a submission")
    out_json = tmp_path / "all.json"
    # --each: every file on its own, as for files of several students
    code, out, _ = invoke("run", str(tmp_path), "--each", "--json", str(out_json))
    assert code == 0
    data = json.loads(out_json.read_text())
    assert data["schema"] == "grader.results/1"
    assert [r["score"] for r in data["results"]] == [10.0, 10.0]
    # Without it, the files of one assignment are one student's work: one result.
    code, out, _ = invoke("run", str(tmp_path), "--json", str(out_json))
    data = json.loads(out_json.read_text())
    assert (code, data["schema"], data["score"]) == (0, "grader.result/1", 10.0)
    assert data["files"] == [str(tmp_path / "a_udl_attention.py"),
                             str(tmp_path / "b_udl_attention.py")]


def test_check_runs_public_cases_only():
    code, out, _ = invoke("check", f"{CORPUS}/udl_attention/seed002.ipynb", "--assignment",
                          "udl_attention")
    assert code == 1
    assert "seed002.ipynb · udl_attention: 4 / 5 public checks pass (public cases only)" in out
    assert "✓ self_attention (1/1 checks)" in out
    assert ("notebook-example (public example, no points): [transposed-weights] Each head's "
            "attention matrix is applied transposed") in out
    assert "        values differ (rtol=1e-06, atol=1e-08)" in out
    assert "        Mismatched elements: 48 / 48" in out
    code, _, _ = invoke("check", "solutions/udl_attention.py")
    assert code == 0


def test_missing_files():
    code, out, _ = invoke("run", "nowhere/alice.ipynb", "--assignment", "udl_attention")
    assert code == 1
    assert "nowhere/alice.ipynb: cannot be read (No such file or directory)" in out
    code, _, err = invoke("run", "nowhere", "--assignment", "udl_attention")
    assert code == 2 and err == "grade: error: nowhere: no such file or folder\n"


@pytest.mark.parametrize("command", [
    ["run", "tests/corpus/udl_attention/seed002.ipynb"],
    ["check", "tests/corpus/udl_attention/seed002.ipynb"],
    ["batch", "tests/corpus/udl_attention", "--out", "{tmp}"]])
def test_require_namespaces_refuses_where_there_are_none(command, tmp_path, monkeypatch):
    from grader.sandbox import isolation

    monkeypatch.setattr(isolation, "offered", lambda: isolation.Offer(
        (), "unshare was refused (unshare: unshare failed: Operation not permitted)", None,
        True))
    argv = [part.replace("{tmp}", str(tmp_path / "out")) for part in command]
    code, out, err = invoke(*argv, "--assignment", "udl_attention", "--require-namespaces")
    assert (code, out) == (3, "")
    assert err == ("grade: error: refusing to grade: --require-namespaces was given, and "
                   "Linux namespaces are not available here (unshare was refused (unshare: "
                   "unshare failed: Operation not permitted)); run `grade doctor` to see what "
                   "to change, or leave the option out to grade with the isolation this "
                   "machine gives\n")
    assert not (tmp_path / "out" / "gradebook.sqlite").exists()


def test_require_namespaces_grades_where_there_are(tmp_path):
    from grader.sandbox import isolation

    if not isolation.offered().namespaces:
        pytest.skip("this machine has no namespaces")
    code, _, err = invoke("run", "tests/corpus/udl_attention/seed002.ipynb", "--assignment",
                          "udl_attention", "--require-namespaces", "--json",
                          str(tmp_path / "r.json"))
    assert (code, err) == (0, "")
    assert "own PID, network and IPC namespaces" in json.loads(
        (tmp_path / "r.json").read_text())["isolation"]
