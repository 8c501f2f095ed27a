"""The normalised tokens and winnowing: what a copier changes changes nothing, what a student
writes differently does."""

from __future__ import annotations

import ast
import os
import random
import subprocess
import sys

from grader.pipeline.loading import prepare_cell
from grader.similarity import tokens, winnow
from grader.submission import Submission
from tests.conftest import ROOT

ORIGINAL = '''def softmax(items_in):
    e = np.exp(items_in - np.max(items_in))
    return e / np.sum(e, axis=0)
'''
DISGUISED = '''def soft(values):  # my own
    """Softmax, see lecture."""
    print("debug", values)
    shifted = np.exp(values -
                     np.max(values)) ;

    return shifted / np.sum(shifted, axis=0)
'''


def texts(source: str) -> list[str]:
    submission = Submission("x.py", "module", (prepare_cell(1, source, automagic=False),))
    return [t.text for t in tokens.definitions(submission)[0].tokens]


def test_names_comments_docstrings_prints_and_layout_change_nothing():
    assert texts(DISGUISED) == texts(ORIGINAL)
    assert texts(ORIGINAL) == ["<in>", "_2", "=", "_3", ".", "exp", "(", "_1", "-", "_3", ".",
                               "max", "(", "_1", ")", ")", "return", "_2", "/", "_3", ".",
                               "sum", "(", "_2", ",", "axis", "=", "0", ")", "<out>"]


def test_what_the_code_does_differently_is_seen():
    assert texts(ORIGINAL.replace("axis=0", "axis=1")) != texts(ORIGINAL)
    assert texts(ORIGINAL.replace("np.max", "np.min")) != texts(ORIGINAL)
    assert "len" in texts(ORIGINAL.replace("np.max(items_in)", "len(items_in)"))  # a builtin


def test_strings_are_compared_in_one_quoting():
    single = "def f(a, b):\n    return np.einsum('ij,jk->ik', a, b)\n"
    assert texts(single) == texts(single.replace("'", '"'))


def test_winnowing_keeps_a_hash_of_every_long_enough_shared_run():
    pick = random.Random(7)
    for _ in range(200):
        shared = [pick.randrange(50) for _ in range(winnow.W + winnow.K - 1)]
        left = [pick.randrange(50) for _ in range(pick.randrange(40))] + shared
        right = shared + [pick.randrange(50) for _ in range(pick.randrange(40))]
        kept_left = {h for h, _ in winnow.winnow(winnow.kgrams(left))}
        kept_right = {h for h, _ in winnow.winnow(winnow.kgrams(right))}
        assert kept_left & kept_right


def test_no_run_shorter_than_k_makes_a_fingerprint():
    assert winnow.kgrams(list(range(winnow.K - 1))) == []
    assert winnow.winnow([]) == []
    assert len(winnow.kgrams(list(range(winnow.K)))) == 1


def test_hashes_are_the_same_in_every_run():
    code = ("from grader.similarity import winnow; print(winnow.kgrams("
            "[winnow.token_id(t) for t in 'a b c d e f g h i j k l m n'.split()]))")
    printed = {subprocess.run([sys.executable, "-c", code], env={**os.environ,
                              "PYTHONHASHSEED": seed}, cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout for seed in ("1", "2")}
    assert len(printed) == 1 and printed.pop().count(",") == 2


def test_a_definition_too_deep_is_refused_not_recursed():
    source = "def f(x):\n    return " + "[" * 150 + "x" + "]" * 150 + "\n"
    ast.parse(source)  # Python reads it
    submission = Submission("x.py", "module", (prepare_cell(1, source, automagic=False),))
    try:
        tokens.definitions(submission)
    except tokens.TooMuch as exc:
        assert str(exc) == "f (cell 1) is nested more than 100 levels deep"
    else:
        raise AssertionError("not refused")


def test_a_print_after_a_block_keeps_the_blocks_end():
    plain = "def f(x):\n    for i in x:\n        y = i\n    return y\n"
    printed = "def f(x):\n    for i in x:\n        y = i\n    print(y)\n    return y\n"
    one, two = (tokens.definition(ast.parse(s).body[0], s.splitlines(True), 1)
                for s in (plain, printed))
    assert [t.text for t in one.tokens] == [t.text for t in two.tokens]
    assert [t.text for t in two.tokens].count(tokens.DEDENT) == 2
