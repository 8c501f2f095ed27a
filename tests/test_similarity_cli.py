"""`grade gradebook similar` and the class report's side-by-side section, as a user runs them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from grader import similarity
from grader.cli import class_arguments
from grader.similarity import shown
from tests.helpers import platforms, similar_class
from tests.helpers.command import run


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> tuple[Path, Path, list[similar_class.Planted]]:
    root = tmp_path_factory.mktemp("similar")
    planted = similar_class.write_class(root / "subs", 30, seed=5)
    similar_class.record(root / "subs", root / "out")
    return root / "subs", root / "out", planted


def test_similar_prints_the_planted_copies_first_with_their_exercises(batch, tmp_path):
    subs, out, planted = batch
    code, stdout, stderr = run("gradebook", "similar", "--out", str(out), "--submissions",
                               str(subs), "--top", "6", "--json", str(tmp_path / "r.json"))
    assert (code, stderr) == (0, "")
    assert stdout.startswith("Similar submissions of udl_attention: 34 students compared, ")
    assert shown.NOT_A_VERDICT in stdout
    ranked = re.findall(r"^ +(\d+)\. (\S+) ~ (\S+)  score (\S+)  rests on (.*?)(  flagged)?$",
                        stdout, re.M)
    assert 4 <= len(ranked) <= 6  # honest pairs below the floor (0.2) are not listed
    copies = {frozenset((p.copier, p.source)) for p in planted}
    assert {frozenset(r[1:3]) for r in ranked[:4]} == copies
    assert all(r[5] for r in ranked[:4]) and not any(r[5] for r in ranked[4:])
    assert "softmax" in ranked[0][4] and "softmax_cols" not in ranked[0][4]
    data = json.loads((tmp_path / "r.json").read_text())
    assert [frozenset(p["students"]) for p in data["pairs"][:4]] == \
        [frozenset(r[1:3]) for r in ranked[:4]]
    assert [p["score"] for p in data["pairs"][:len(ranked)]] == [float(r[3]) for r in ranked]
    assert data["pairs"][0]["rests_on"] == ranked[0][4].split(", ")


def test_a_higher_threshold_flags_fewer(batch):
    subs, out, _ = batch
    code, stdout, _ = run("gradebook", "similar", "--out", str(out), "--submissions", str(subs),
                          "--threshold", "0.99")
    assert code == 0
    assert re.search(r", [0-3] flagged at 0\.99\.", stdout)


@pytest.mark.parametrize("value", ["0", "1.5", "-1"])
def test_a_threshold_outside_0_to_1_is_a_usage_error(batch, value):
    subs, out, _ = batch
    code, stdout, stderr = run("gradebook", "similar", "--out", str(out), "--submissions",
                               str(subs), "--threshold", value)
    assert code == 2 and stdout == ""
    assert f"--threshold {float(value):g}: give a score between 0 and 1" in stderr


def test_similar_reads_the_folder_the_batch_recorded(batch):
    subs, out, _ = batch
    given = run("gradebook", "similar", "--out", str(out), "--submissions", str(subs))
    recorded = run("gradebook", "similar", "--out", str(out))
    assert recorded[0] == 0 and recorded == given


def test_similar_without_a_recorded_folder_says_to_name_it(tmp_path):
    subs = tmp_path / "subs"
    similar_class.write_class(subs, 3)
    similar_class.record(subs, tmp_path / "out", remember=False)
    code, stdout, stderr = run("gradebook", "similar", "--out", str(tmp_path / "out"))
    assert (code, stdout) == (2, "")
    assert f"{tmp_path / 'out' / 'gradebook.sqlite'}: no batch recorded where the " \
           "submissions of udl_attention are" in stderr
    assert "pass --submissions with the folder that grade batch graded" in stderr
    code, stdout, _ = run("gradebook", "similar", "--out", str(tmp_path / "out"),
                          "--submissions", str(subs))
    assert code == 0 and "7 students compared" in stdout
    code, _, stderr = run("gradebook", "similar", "--out", str(tmp_path / "out"),
                          "--submissions", str(tmp_path / "nowhere"))
    assert code == 2
    assert f"{tmp_path / 'nowhere'}: not a folder; pass --submissions" in stderr


def test_a_recorded_folder_that_is_gone_is_named(tmp_path):
    subs = tmp_path / "subs"
    similar_class.write_class(subs, 3)
    similar_class.record(subs, tmp_path / "out")
    shutil.rmtree(subs)
    code, _, stderr = run("gradebook", "similar", "--out", str(tmp_path / "out"))
    assert code == 2 and f"{subs}: not a folder; pass --submissions" in stderr


def test_a_platform_download_is_compared_by_the_platforms_ids(tmp_path):
    source = similar_class.honest(11)
    download = platforms.zipped(tmp_path / "canvas.zip", {
        "lovelaceada_1001_5001_attention.py": source.encode(),
        "turingalan_1002_5002_attention.py": similar_class.renamed(source).encode(),
        "hopperg_1003_5003_attention.py": similar_class.honest(12).encode(),
    })
    out = tmp_path / "out"
    assert similar_class.record(download, out) == 3
    code, stdout, stderr = run("gradebook", "similar", "--out", str(out), "--json",
                               str(tmp_path / "r.json"))
    assert (code, stderr) == (0, "")
    assert "3 students compared" in stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["pairs"][0]["students"] == ["1001", "1002"] and data["pairs"][0]["flagged"]
    assert data["not_compared"] == []


def test_stubs_that_are_not_there_say_how_to_name_them(batch, tmp_path):
    subs, out, _ = batch
    code, _, stderr = run("gradebook", "similar", "--out", str(out), "--submissions",
                          str(subs), "--stubs", str(tmp_path))
    assert code == 2
    assert f"{tmp_path}: no stub of udl_attention" in stderr and "--stubs" in stderr


def test_the_report_shows_each_flagged_pair_side_by_side(batch, tmp_path):
    subs, out, planted = batch
    page, md = tmp_path / "class.html", tmp_path / "class.md"
    code, _, stderr = run("gradebook", "report", "--out", str(out), "--submissions", str(subs),
                          "--html", str(page), "--md", str(md), "--json",
                          str(tmp_path / "c.json"))
    assert (code, stderr) == (0, "")
    html = page.read_text()
    section = html[html.index('id="similar-code"'):]
    section = section[:section.index("</section>")]
    assert shown.NOT_A_VERDICT in section
    assert section.count('<li class="pair">') == len(planted)
    assert section.count('<div class="side">') == 2 * len(planted)
    marks = re.findall(r'<mark title="shared; written by (\d+) of 34 students">', section)
    assert marks and all(2 <= int(n) < 10 for n in marks)
    shown_counts = re.findall(r'<span class="w">(\d+)</span> <mark title="shared; written by '
                              r'(\d+) of', section)
    assert len(shown_counts) == len(marks) and all(a == b for a, b in shown_counts)
    for pair in section.split('<li class="pair">')[1:]:  # both sides in one order
        a, b = pair.split('<div class="side">')[1:3]
        assert re.findall(r'aria-label="[^:]+: (\w+)"', a) == \
            re.findall(r'aria-label="[^:]+: (\w+)"', b)
    assert "<script" not in html.lower() and "http" not in section
    for copy in planted:  # names only inside <details>, as the rest of the page
        assert f"<p class=\"names\">{min(copy.copier, copy.source)} and " \
               f"{max(copy.copier, copy.source)}</p>" in section
    assert shown.NOT_A_VERDICT in md.read_text()
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["similarity"]["schema"] == "grader.similar/1"
    assert sum(p["flagged"] for p in data["similarity"]["pairs"]) == len(planted)


def test_the_report_compares_the_recorded_folder_without_being_told(batch, tmp_path):
    _, out, planted = batch
    code, _, stderr = run("gradebook", "report", "--out", str(out), "--json",
                          str(tmp_path / "c.json"))
    assert (code, stderr) == (0, "")
    data = json.loads((tmp_path / "c.json").read_text())
    assert sum(p["flagged"] for p in data["similarity"]["pairs"]) == len(planted)


def test_the_report_without_a_recorded_folder_says_why_it_has_no_such_section(tmp_path):
    subs = tmp_path / "subs"
    similar_class.write_class(subs, 3)
    similar_class.record(subs, tmp_path / "out", remember=False)
    code, _, stderr = run("gradebook", "report", "--out", str(tmp_path / "out"), "--html",
                          str(tmp_path / "c.html"), "--json", str(tmp_path / "c.json"))
    assert code == 0
    assert stderr.startswith("grade: the report has no side-by-side comparison of similar "
                             "submissions: ")
    assert "pass --submissions" in stderr
    assert 'id="similar-code"' not in (tmp_path / "c.html").read_text()
    assert json.loads((tmp_path / "c.json").read_text())["similarity"] is None


def test_the_parsers_default_threshold_is_the_comparisons():
    assert class_arguments.SIMILAR_THRESHOLD == similarity.THRESHOLD
