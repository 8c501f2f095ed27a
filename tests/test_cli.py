"""The `grade` command line, driven in-process through `cli.run`."""

from __future__ import annotations

import io

from grader import cli


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
    assert "4 pts, 4 cases (1 public)" in out
    assert "causal_mask(seq_len)  1 pt, 3 cases (1 public)" in out


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
