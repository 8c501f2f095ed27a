"""The `grade` command line, driven in-process through `cli.run`."""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import re

import pytest

from grader import cli
from grader.cli import parser
from grader.sandbox.limits import Engine, Limits, OnError
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
    assert "5 pts, 5 cases (2 public, 2 hidden worth points)" in out
    assert "causal_mask(seq_len)  1 pt, 4 cases (2 public, 1 hidden worth points)" in out


def test_version_and_help_end_in_the_one_exit_point():
    assert invoke("--version") == (0, "grade 0.1.0\n", "")
    code, out, err = invoke("run", "--help")
    assert (code, err) == (0, "")
    assert out.startswith("usage: grade run [-h] [--each]")
    assert ("--max-statements N most top-level statements in all cells together (default "
            "5000)") in " ".join(out.split())


def test_usage_error_exits_2_with_the_usage_line_and_a_hint():
    code, out, err = invoke("frobnicate")
    assert (code, out) == (2, "")
    usage, hint, blank, message = err.splitlines()[-4:]
    assert err.startswith("usage: grade [-h] [--version]")
    assert (hint, blank) == ("Try 'grade --help' for help.", "")
    assert message.startswith("grade: error: grade: argument command: invalid choice: "
                              "'frobnicate'")
    code, out, err = invoke("run", "a.ipynb", "--engine", "warp")
    assert (code, out) == (2, "")
    assert err.startswith("usage: grade run [-h]")
    assert err.endswith("Try 'grade run --help' for help.\n\ngrade: error: grade run: "
                        "argument --engine: invalid choice: 'warp' (choose from 'fast', "
                        "'fresh', 'kernel')\n")
    code, _, err = invoke("run", "a.ipynb", "--on-error", "never")
    assert code == 2
    assert err.endswith("grade: error: grade run: argument --on-error: invalid choice: "
                        "'never' (choose from 'statement', 'cell', 'stop')\n")
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
    assert "✗ multihead_scaled_self_attention 0/5  (1/5 checks)" in out
    # The book's softmax_cols is given, not the student's: shown, never scored.
    assert "· softmax_cols given, not scored  (3/4 checks)" in out
    assert "large-values (hidden, no points): Tip: [unstable-softmax]" in out
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
    assert "seed002.ipynb · udl_attention: 7 / 10 public checks pass (public cases only)" in out
    assert "✓ self_attention (2/2 checks)" in out
    assert ("notebook-example (public example, no points): [transposed-weights] Each head's "
            "attention matrix is applied transposed") in out
    assert "        values differ from the expected ones." in out
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


def test_every_limit_is_an_option_that_reaches_the_grading():
    flags = parser.limit_flags()
    assert [field.name for field in flags.values()] == [
        field.name for field in dataclasses.fields(Limits)]
    assert list(flags)[:3] == ["--timeout", "--call-timeout", "--submission-timeout"]
    args = cli.parse(["run", "a.ipynb"])
    assert parser.limits(args) == Limits()
    assert (args.engine, args.on_error) == (Engine.FAST, OnError.STATEMENT)
    argv = ["batch", "subs", "--assignment", "udl_attention", "--out", "graded"]
    for flag, field in flags.items():  # each at twice its default, as its own type
        argv += [flag, str(field.default * 2)]
    args = cli.parse([*argv, "--engine", "kernel", "--on-error=stop"])
    assert parser.limits(args) == Limits(**{field.name: field.default * 2
                                            for field in dataclasses.fields(Limits)})
    assert parser.limits(args).statements == 10_000
    assert (args.engine, args.on_error) == (Engine.KERNEL, OnError.STOP)
    code, _, err = invoke("run", "a.ipynb", "--max-statements", "many")
    assert code == 2 and err.endswith("grade: error: grade run: argument --max-statements: "
                                      "invalid int value: 'many'\n")


def test_max_statements_is_the_limit_the_refusal_names(tmp_path):
    path = tmp_path / "long_udl_attention.py"
    path.write_text((ROOT / "solutions" / "udl_attention.py").read_text() + "x = 1\n" * 300)
    out_json = tmp_path / "long.json"
    code, _, _ = invoke("run", str(path), "--max-statements", "200", "--json", str(out_json))
    data = json.loads(out_json.read_text())
    assert (code, data["status"]) == (1, "error")
    assert "over the limit of 200 (--max-statements)" in data["error"]


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*[a-z]")
OTHER_PROGRAMS = {
    "unshare (isolation.py, zygote.py)": {"--fork", "--ipc", "--kill-child", "--map-root-user",
                                          "--mount-proc", "--net", "--pid", "--uts",
                                          "--user"},
    "the worker's own (isolation.py)": {"--pdeathsig"},
    "systemd-run (doctor.py)": {"--scope", "--user"},
    "pip (autograder.py)": {"--break-system-packages"},
    "dask worker (distributed.py)": {"--nworkers", "--nthreads"},
    "IPython's %%capture (shell.py)": {"--no-stdout", "--no-stderr"},
    "git (ingest/git.py)": {"--git-dir", "--no-pager"},
}


def flags_in_messages() -> dict[str, set[str]]:
    """Every `--flag` in a string of grader/ other than a docstring, with where it is."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "grader").rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings):
                for flag in FLAG.findall(node.value):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault(flag, set()).add(where)
    return found


def accepted_flags() -> set[str]:
    """Every option string of `grade` and of each of its commands."""
    flags: set[str] = set()
    pending = [cli.build_parser()]
    while pending:
        command = pending.pop()
        for action in command._actions:
            flags.update(action.option_strings)
            choices = action.choices if isinstance(action.choices, dict) else {}
            pending += choices.values()
    return flags


def test_every_flag_a_message_names_is_an_option_of_grade():
    found = flags_in_messages()
    assert {"--max-statements", "--max-code-cells", "--engine", "--dask"} <= set(found)
    others = set().union(*OTHER_PROGRAMS.values())
    unknown = {flag: sorted(where) for flag, where in found.items()
               if flag not in accepted_flags() and flag not in others}
    assert unknown == {}
    assert others.isdisjoint(accepted_flags())  # the list names only other programs' flags
    assert others <= set(found)  # and only flags that are still written somewhere


def test_readme_lists_every_limit_with_its_default():
    guide = (ROOT / "docs" / "grading.md").read_text()  # README's guide to `grade run`
    listed = dict(re.findall(r"`(--[a-z-]+) [A-Z]+`\s+\(default ([\d.]+)\)", guide))
    assert listed == {flag: f"{field.default:g}"
                      for flag, field in parser.limit_flags().items()}


def test_every_flag_readme_and_security_name_is_grades_or_another_programs():
    others = {"--count", "--peer-sample", "--peers-bin", "--scaling", "--workers",  # bench/
              "--dashboard-address", "--nthreads", "--nworkers", "--tls-ca-file",  # dask
              "--tls-cert", "--tls-key"}
    pages = ["README.md", "SECURITY.md", *sorted(str(page.relative_to(ROOT))
                                                 for page in (ROOT / "docs").glob("*.md"))]
    assert len(pages) > 2  # the guides are there to be read
    for name in pages:
        written = set(FLAG.findall((ROOT / name).read_text()))
        assert written - accepted_flags() - others == set(), name
    assert others.isdisjoint(accepted_flags())


def test_the_export_formats_are_the_dialects_own():
    from grader.term.exports import canvas, formats, moodle, plain

    assert formats.FORMATS == (plain.NAME, canvas.NAME, moodle.NAME) == ("csv", "canvas",
                                                                         "moodle")
    assert parser.parse(["gradebook", "export", "--format", "moodle"]).format == "moodle"


def test_reports_in_a_folder_are_named_as_a_batch_names_them(tmp_path):
    from grader.batch.batch import write_outputs
    from grader.batch.jobs import Graded, Job

    folder = tmp_path / "subs"
    folder.mkdir()
    for name, solution in (("a_udl_attention.py", "udl_attention"),
                           ("b_udl_attention.py", "udl_attention"),
                           ("c_attention_basics.py", "attention_basics")):
        (folder / name).write_text((ROOT / "solutions" / f"{solution}.py").read_text())
    out_json = tmp_path / "all.json"
    code, _, err = invoke("run", str(folder), "--html", str(tmp_path / "html"), "--md",
                          str(tmp_path / "md"), "--json", str(out_json))
    assert code == 0, err
    # a student's two files are one result, named after the assignment; one file, after it
    assert sorted(p.name for p in (tmp_path / "html").iterdir()) == [
        "c_attention_basics.html", "udl_attention.html"]
    assert sorted(p.name for p in (tmp_path / "md").iterdir()) == [
        "c_attention_basics.md", "udl_attention.md"]
    from grader import result_json

    for data in json.loads(out_json.read_text())["results"]:
        result = result_json.from_dict(data)
        names = result.files or (result.submission,)
        job = Job(tuple(folder / name for name in names), names, "alice", ())
        write_outputs(tmp_path / "batch", job, Graded(result, "", ""))
    assert sorted(p.name for p in (tmp_path / "batch" / "results" / "alice").iterdir()) == [
        "c_attention_basics.html", "c_attention_basics.json", "c_attention_basics.md",
        "udl_attention.html", "udl_attention.json", "udl_attention.md"]
