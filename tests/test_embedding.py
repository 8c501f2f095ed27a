"""The self-check a released file carries: the package's own code, byte for byte, and the check
data released beside it; one hidden cell; what a student edits in it never reaches a grade."""

from __future__ import annotations

import ast
import base64
import inspect
import io
import json
import zipfile
from pathlib import Path

import pytest

from grader.authoring import embedding, release
from grader.course import carried, registry
from tests.conftest import ROOT
from tests.helpers.carried import carried_bundle, with_bundle
from tests.helpers.command import run as grade

NAME = "udl_attention"
@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("released") / NAME
    release.release(registry.get(NAME), folder)
    return folder


def _sources(notebook: dict) -> list[str]:
    return ["".join(cell["source"]) for cell in notebook["cells"]]


def test_the_bundle_is_the_packages_own_code_and_the_released_check_data(released):
    """Every member is the package's file, byte for byte, or the .check.npz released beside
    it; every notebook and the module carry the same bundle."""
    texts = {path.name: path.read_text() for path in released.iterdir()
             if path.suffix in (".py", ".ipynb")}
    bundles = {name: carried_bundle(text if name.endswith(".py") else "".join(
        _sources(json.loads(text)))) for name, text in texts.items()}
    assert len(texts) == 3 and len(set(bundles.values())) == 1
    with zipfile.ZipFile(io.BytesIO(next(iter(bundles.values())))) as archive:
        names = archive.namelist()
        code = [n for n in names if n.endswith(".py")]
        assert sorted(names) == sorted([*code, f"{NAME}.check.npz"])
        for name in code:
            assert archive.read(name) == (ROOT / name).read_bytes(), name
        assert archive.read(f"{NAME}.check.npz") == (released / f"{NAME}.check.npz").read_bytes()
    assert sorted(code) == sorted(embedding.files())
    for name, text in texts.items():
        print(f"{name}: {len(text.encode()) / 1024:.0f} KB, the self-check "
              f"{len(base64.b64encode(bundles[name])) / 1024:.0f} KB of it")


def test_the_bundle_follows_the_self_checks_imports():
    """What selfcheck imports (at its top or in a function) and what those import is in the
    bundle, with each package; the HTML report (Jinja2), the grading driver and what only the
    type checker imports (`notebook_globals`' Submission) are not."""
    carried_modules = set(embedding.modules())
    tree = ast.parse((ROOT / "grader" / "selfcheck.py").read_text())
    named = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module and node.module.startswith("grader")}
    assert named - {"grader.report"} <= carried_modules
    assert {"grader.selfcheck", "grader.pipeline.judging", "grader.pipeline.diagnose",
            "grader.pipeline.agreement", "grader.course.checkfile", "grader.pipeline.vocabulary",
            "grader.report.terminal", "grader.report.compact", "grader", "grader.pipeline",
            "grader.sandbox.inside"} <= carried_modules
    assert not {"grader.report.html", "grader.report.render", "grader.pipeline.grading",
                "grader.sandbox.session", "grader.assignments.udl_attention",
                "grader.assignments.variants", "grader.submission"} & carried_modules


def test_one_hidden_cell_before_the_import_and_the_line_stays_the_same(released):
    notebook = json.loads((released / f"{NAME}_12_1.ipynb").read_text())
    sources = _sources(notebook)
    at = next(i for i, s in enumerate(sources) if "from grader import check" in s
              and "unpack_self_check" not in s)
    cell = notebook["cells"][at - 1]
    assert cell["metadata"] == {"tags": ["grader-self-check"], "cellView": "form",
                                "jupyter": {"source_hidden": True}}
    assert sources[at] == "import numpy as np\n\nfrom grader import check"
    assert sum("unpack_self_check" in s for s in sources) == 1
    # The function is the package's, as it is there.
    assert inspect.getsource(carried.unpack_self_check) in sources[at - 1]
    assert sources[at - 1].startswith("#@title ")


def test_the_versions_it_asks_for_are_pyprojects():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    defaults = inspect.signature(carried.unpack_self_check).parameters
    numpy = next(d for d in project["dependencies"] if d.startswith("numpy"))
    assert numpy == "numpy>={}.{}".format(*defaults["numpy"].default)
    assert project["requires-python"] == ">={}.{}".format(*defaults["python"].default)


def test_a_release_module_checks_itself(released):
    module = (released / f"{NAME}.py").read_text()
    assert module.count('if __name__ == "__main__":') == 1
    assert "    for _name in (\n        'softmax',\n        'softmax_cols',\n" in module


def test_what_a_student_edits_in_the_carried_check_never_reaches_a_grade(released, tmp_path):
    """A notebook whose carried check is forged (every judgement passes, the expected outputs
    replaced) gets the grade of the same notebook as released: grading runs the cell as any
    other and reads nothing it carries."""
    notebook = json.loads((released / f"{NAME}_12_1.ipynb").read_text())
    text = "".join(_sources(notebook))
    forged = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(carried_bundle(text))) as original, \
            zipfile.ZipFile(forged, "w") as archive:
        for name in original.namelist():
            data = original.read(name)
            if name == "grader/pipeline/judging.py":
                data += b"\ndef judgement(*args, **kwargs):\n    raise SystemExit(0)\n"
            archive.writestr(name, b"" if name.endswith(".npz") else data)
    scores = []
    for label, bundle in (("as-released", None), ("forged", forged.getvalue())):
        copy = json.loads(json.dumps(notebook))
        for cell in copy["cells"]:
            if bundle is not None and "grader-self-check" in cell["metadata"].get("tags", []):
                cell["source"] = with_bundle("".join(cell["source"]), bundle)
        (tmp_path / f"{label}.ipynb").write_text(json.dumps(copy))
        assert "grader/pipeline/judging.py" in zipfile.ZipFile(io.BytesIO(carried_bundle(
            "".join(_sources(copy))))).namelist()
        out = tmp_path / f"{label}.json"
        code, _, err = grade("run", str(tmp_path / f"{label}.ipynb"), "--assignment", NAME,
                             "--json", str(out))
        assert (code, err) == (0, ""), err
        result = json.loads(out.read_text())
        scores.append([(e["name"], e["score"], [(c["name"], c["verdict"]) for c in e["checks"]])
                       for e in result["exercises"]])
    assert scores[0] == scores[1]
    assert {verdict for _, _, checks in scores[0] for _, verdict in checks} >= {"not written"}
