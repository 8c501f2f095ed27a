"""Similar submissions on a generated class: planted copies are found, honest and minimal
solutions are not, hostile code is handled within limits."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from grader import similarity
from grader.gradebook import Gradebook
from grader.gradebook.origins import Origin
from grader.pipeline import loading
from grader.similarity import index, sources, tokens
from tests.conftest import ROOT
from tests.helpers import similar_class
from tests.helpers.classes import UDL_CORPUS

EXERCISES = ["softmax", "softmax_cols", "self_attention", "scaled_dot_product_self_attention",
             "multihead_scaled_self_attention"]


def ranking_of(folder: Path, threshold: float = similarity.THRESHOLD) -> similarity.Ranking:
    """The ranking of every file in `folder`, recorded in a gradebook as a batch would."""
    out = folder.parent / f"{folder.name}-out"
    similar_class.record(folder, out)
    rows = Gradebook(out).rows()
    return similarity.of_batch("udl_attention", rows, Origin(folder, "folder"),
                               ROOT / "exercises", threshold)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[similarity.Ranking, list[similar_class.Planted]]:
    folder = tmp_path_factory.mktemp("class") / "submissions"
    planted = similar_class.write_class(folder, 40)
    shutil.copy(UDL_CORPUS / "loops.ipynb", folder / "loops_udl_attention.ipynb")
    shutil.copy(UDL_CORPUS / "vectorised.py", folder / "vectorised_udl_attention.py")
    return ranking_of(folder), planted


def test_every_planted_copy_ranks_above_every_honest_pair(generated):
    ranking, planted = generated
    copies = {frozenset((p.copier, p.source)) for p in planted}
    top = ranking.pairs[:len(copies)]
    assert {frozenset((p.a, p.b)) for p in top} == copies
    assert all(p.flagged and p.score >= ranking.threshold for p in top)
    by_how = {p.how: next(q for q in top if {q.a, q.b} == {p.copier, p.source})
              for p in planted}
    # Renaming, reordering and comments with prints hide nothing: the normalised code is equal.
    assert by_how["renamed"].score == by_how["reordered"].score == by_how["commented"].score \
        == 1.0
    assert 0.75 <= by_how["one_line"].score < 1.0
    scores = {e.name: e.score for e in by_how["one_line"].exercises}
    assert scores["multihead_scaled_self_attention"] < 1.0  # the changed line is in it
    assert scores["softmax"] == scores["self_attention"] == 1.0


def test_a_copy_rests_on_the_exercises_it_copies_not_on_the_given_code(generated):
    ranking, planted = generated
    pair = ranking.flagged[0]
    assert set(pair.rests_on(ranking.threshold)) == set(EXERCISES) - {"softmax_cols"}
    given = next(e for e in pair.exercises if e.name == "softmax_cols")
    assert given.score == 0.0 and given.shared == 0.0  # the notebook's own code is no evidence


def test_no_honest_pair_is_flagged(generated):
    ranking, planted = generated
    copies = {frozenset((p.copier, p.source)) for p in planted}
    honest = [p for p in ranking.pairs if frozenset((p.a, p.b)) not in copies]
    assert not [p for p in honest if p.flagged]
    assert max(p.score for p in honest) < ranking.threshold
    assert {frozenset(c.students) for c in ranking.clusters} == copies


def test_two_independent_book_style_solutions_are_not_flagged(generated, tmp_path):
    ranking, _ = generated
    pair = [p for p in ranking.pairs if {p.a, p.b} == {"loops", "vectorised"}]
    assert not pair or not pair[0].flagged
    # Alone, in a class of two, they share nothing that flags them either.
    folder = tmp_path / "two"
    folder.mkdir()
    shutil.copy(UDL_CORPUS / "loops.ipynb", folder / "loops_udl_attention.ipynb")
    shutil.copy(UDL_CORPUS / "vectorised.py", folder / "vectorised_udl_attention.py")
    alone = ranking_of(folder)
    assert alone.compared == 2 and not alone.flagged


def test_more_independent_solutions_in_the_books_style_are_not_flagged(tmp_path):
    folder = tmp_path / "styles"
    folder.mkdir()
    for seed in range(12):
        (folder / f"h{seed}_udl_attention.py").write_text(similar_class.honest(1000 + seed))
    shutil.copy(ROOT / "solutions" / "udl_attention.py", folder / "ref_udl_attention.py")
    ranking = ranking_of(folder)
    assert ranking.compared == 13
    assert not ranking.flagged


def test_a_class_that_fills_the_template_minimally_flags_nothing(tmp_path):
    folder = tmp_path / "minimal"
    folder.mkdir()
    for number in range(30):
        (folder / f"m{number:02d}_udl_attention.py").write_text(similar_class.minimal(number))
    ranking = ranking_of(folder)
    assert ranking.compared == 30
    assert ranking.flagged == ()
    assert ranking.pairs == ()  # everyone's code is everyone's: no fragment is rare


def test_the_stubs_alone_are_nothing_to_compare(tmp_path):
    folder = tmp_path / "stubs"
    folder.mkdir()
    for student in ("ann", "ben"):
        shutil.copy(ROOT / "exercises" / "udl_attention.py", folder / f"{student}_udl.py")
    ranking = ranking_of(folder)
    assert ranking.compared == 0 and ranking.pairs == ()
    assert [(n.student, n.why) for n in ranking.not_compared] == [
        ("ann", "wrote nothing beyond the template to compare"),
        ("ben", "wrote nothing beyond the template to compare")]


def hostile_sources() -> dict[str, bytes]:
    deep = "def softmax(items_in):\n    return " + "[" * 150 + "items_in" + "]" * 150 + "\n"
    long_sum = "def softmax(items_in):\n    return " + " + ".join(["items_in"] * 500) + "\n"
    # Deeper than ast builds under Python 3.11's recursion limit and under 3.13's C stack
    # limit (3,000 unary minuses parse on 3.13).
    unparsable = "def softmax(items_in):\n    return " + " + ".join(["items_in"] * 12_000) + "\n"
    huge = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y * {i}\n\n"
                   for i in range(40_000))
    many = "".join(f"def g{i}(x):\n    return [x + {i}, x - {i}, x * {i}, x / {i}, x, x, x]\n"
                   for i in range(4_900))
    return {"deep_udl.py": deep.encode(), "sum_udl.py": long_sum.encode(),
            "huge_udl.py": huge.encode(), "unparsable_udl.py": unparsable.encode(),
            "many_udl.py": many.encode(),
            "bytes_udl.py": b"def softmax(x):\n    return '\xff\xfe'\n",
            "nul_udl.py": b"def softmax(x):\x00\n    return x\n",
            "nest_udl.py": ("def softmax(x):\n" + "".join(
                "    " * (i + 1) + "if x:\n" for i in range(120)) + "    " * 121 + "pass\n"
            ).encode()}


def test_hostile_submissions_are_listed_as_not_compared_with_why(generated, tmp_path):
    # Whether ast gives up on a deep expression depends on the recursion limit, which other
    # libraries of the test process may have raised: `grade` runs with Python's default.
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        hostile_are_listed(tmp_path)
    finally:
        sys.setrecursionlimit(saved)


def hostile_are_listed(tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    for name, data in hostile_sources().items():
        (folder / name).write_bytes(data)
    shutil.copy(UDL_CORPUS / "vectorised.py", folder / "fine_udl.py")
    ranking = ranking_of(folder)
    why = {n.student: n.why for n in ranking.not_compared}
    assert ranking.compared == 1  # fine: the only one with code to compare
    assert "nested more than 100 levels deep" in why["deep"]
    assert "nested more than 100 levels deep" in why["sum"]
    assert why["huge"].startswith("huge_udl.py: has 2.1 MB of code, over the 1 MB limit")
    assert f"over {tokens.MAX_TOKENS:,} tokens" in why["many"]
    assert "not UTF-8 text" in why["bytes"]
    assert "binary data" in why["nul"]
    assert why["unparsable"] == ("defines no function that parses (unparsable_udl.py, cell 1: "
                                 "cannot be parsed: RecursionError)")
    assert why["nest"] == ("defines no function that parses (nest_udl.py, cell 1: SyntaxError: "
                           "too many levels of indentation (line 101))")


def test_a_file_changed_since_it_was_graded_is_not_compared(tmp_path):
    folder = tmp_path / "changed"
    folder.mkdir()
    shutil.copy(UDL_CORPUS / "vectorised.py", folder / "amy_udl.py")
    shutil.copy(UDL_CORPUS / "loops.ipynb", folder / "bo_udl.ipynb")
    out = tmp_path / "out"
    similar_class.record(folder, out)
    (folder / "amy_udl.py").write_text("def softmax(x):\n    return x\n")
    (folder / "bo_udl.ipynb").unlink()
    ranking = similarity.of_batch("udl_attention", Gradebook(out).rows(),
                                  Origin(folder, "folder"), ROOT / "exercises")
    why = {n.student: n.why for n in ranking.not_compared}
    assert why["amy"] == "amy_udl.py: changed since it was graded (its hash is not the " \
                         "gradebook's)"
    assert why["bo"] == f"bo_udl.ipynb: not in {folder} any more"


def test_rarity_falls_from_one_for_a_pair_to_zero_for_the_common():
    most = index.common(1000)
    assert most == 20
    assert index.rarity(1, most) == index.rarity(2, most) == 1.0
    assert 0.0 < index.rarity(10, most) < index.rarity(5, most) < 1.0
    assert index.rarity(20, most) == index.rarity(500, most) == 0.0


def test_the_index_proposes_only_pairs_that_share_a_rare_fragment(generated):
    ranking, _ = generated
    students = ranking.compared
    assert ranking.pairs_scored < students * (students - 1) // 2 // 2


def test_the_json_ranking_round_trips(generated):
    from grader.similarity import shown

    ranking, planted = generated
    data = json.loads(json.dumps(shown.to_dict(ranking)))
    assert data["schema"] == "grader.similar/1"
    first = data["pairs"][0]
    assert sorted(first["students"]) == sorted((ranking.pairs[0].a, ranking.pairs[0].b))
    assert first["score"] == ranking.pairs[0].score and first["flagged"] is True
    assert first["rests_on"] == list(ranking.pairs[0].rests_on(ranking.threshold))
    assert all(f["writers"] >= 2 for f in first["fragments"])


def test_tokens_of_a_loaded_notebook_keep_their_cells_and_lines():
    made = tokens.definitions(loading.load(UDL_CORPUS / "loops.ipynb"))
    softmax = next(d for d in made if d.name == "softmax")
    assert softmax.cell == 2 and softmax.first_line == 1
    assert {t.line for t in softmax.tokens} == {2, 3, 4, 5}
    assert sources.stubs("udl_attention", ROOT / "exercises")
