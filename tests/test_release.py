"""`grade release`: students receive the stubs and the public cases, and nothing hidden.

For every assignment in the registry, the released folder is scanned (`tests/leakscan.py`)
for every hidden input and expected value that is not a round number (one that rounds to four
decimals, such as the sizes 5 or 32, would match everywhere), as float64 and float32 bytes
(raw and inside the npz; each pair of neighbouring values, and a lone value alone) and as text
(as Python writes it, with 8 significant digits, and as numpy prints it: 8 decimals, or in
scientific notation), and for
every line of solution code of 10 characters or more that the stubs do not already hold;
values that a public case shows too are not secrets. The same scan finds each kind of secret
planted in a release: it can fail. `check()` works from a release alone.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import textwrap
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest

from grader import cli, selfcheck
from grader.authoring import release
from grader.course import checkfile as released
from grader.course import references, registry
from grader.course.layout import Layout
from grader.course.references import as_outputs
from grader.errors import SpecError, UsageError
from grader.model import Visibility
from tests import leakscan
from tests.conftest import needs, of_assignment
from tests.helpers.scanning import MARKERS, arrays_in, material, scan, secrets, windows

NAMES = sorted(registry.assignments())
RELEASED = [name for name in NAMES if not needs(name)]
"""The assignments released here: those whose required modules are installed (without the
torch extra, not `torch_attention`, whose tests are skipped with the command that installs it)."""
BY_NAME = [of_assignment(name) for name in NAMES]


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("releases")
    for name in RELEASED:
        release.release(registry.get(name), folder / name)
    return {name: folder / name for name in RELEASED}


@pytest.mark.parametrize("name", BY_NAME)
def test_a_release_holds_nothing_hidden(releases, name, capsys):
    found = scan(releases[name], registry.get(name))
    assert found.found == []
    assert found.files == len(list(releases[name].iterdir())) >= 3


@pytest.mark.parametrize("name", BY_NAME)
def test_a_release_is_the_stubs_and_the_check_data(releases, name):
    assignment = registry.get(name)
    parts = {e.notebook for e in assignment.exercises if e.notebook} or {f"{name}.ipynb"}
    assert sorted(p.name for p in releases[name].iterdir()) == sorted(
        {f"{name}.py", f"{name}.check.npz", *parts})
    public, stored = released.read(releases[name] / f"{name}.check.npz")
    for exercise, given in zip(assignment.exercises, public.exercises, strict=True):
        shown = [c.name for c in exercise.cases if c.visibility is Visibility.PUBLIC]
        assert [c.name for c in given.cases] == shown
        assert given.signature == exercise.signature  # the misconceptions' names, not code:
        assert [(m.id, m.message) for m in given.misconceptions] == [
            (m.id, m.message) for m in exercise.misconceptions]
        for case in given.cases:
            expected = references.load(assignment).get(exercise.name, case.name)
            for a, b in zip(stored.get(exercise.name, case.name), expected, strict=True):
                np.testing.assert_array_equal(a, b)
            for a, b in zip(arrays_in(case.inputs()), arrays_in(exercise.case(case.name).inputs()),
                            strict=True):
                np.testing.assert_array_equal(a, b)
    with zipfile.ZipFile(releases[name] / f"{name}.check.npz") as data:
        assert all(n.startswith(("inputs/", "init/", "expected/", "mistakes/", "__meta__"))
                   for n in data.namelist())


FILE_NAME = re.compile(
    r"(?<![\w/.:-])([\w-]+(?:\.[\w-]+)*\.(?:ipynb|py|npz|png|jpe?g|svg|gif|csv))\b")


def _named_files(path: Path) -> set[str]:
    """The file names a released file's text names: its notebook cells' source, or the module's
    text, without the base64 bundle, addresses (https://...) or dotted module paths."""
    if path.suffix == ".ipynb":
        texts = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
                 if "grader-self-check" not in cell["metadata"].get("tags", ())]
    elif path.suffix == ".py":
        texts = [path.read_text().split("if __name__ == ")[0]]
    else:
        return set()
    return {name for text in texts for name in FILE_NAME.findall(text)}


@pytest.mark.parametrize("name", BY_NAME)
def test_every_file_a_release_names_is_in_the_release(releases, name):
    """A student told to open, run or keep a file finds it beside the one that names it."""
    there = {path.name for path in releases[name].iterdir()}
    named = {path.name: _named_files(path) for path in releases[name].iterdir()}
    assert {file: sorted(names - there) for file, names in named.items()} == {
        file: [] for file in named}
    assert any(named.values())  # the stubs do name files: the check reads them


def test_the_scan_finds_each_planted_secret(releases, tmp_path):
    assignment = registry.get("positional_encoding")
    planted = tmp_path / "planted"
    planted.mkdir()
    needles, lines, texts = secrets(assignment)
    hidden = references.load(assignment).get("sinusoidal_encoding", "more-features-than-positions")
    np.savez(planted / "extra.npz", leaked=hidden[0])
    notebook = json.loads((releases["positional_encoding"] / "positional_encoding.ipynb")
                          .read_text())
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                              "execution_count": None, "source": [f"    {lines[0]}\n"]})
    (planted / "with_solution.ipynb").write_text(json.dumps(notebook, indent=1))
    (planted / "printed.md").write_text(f"the answer is {texts[len(texts) // 2]}\n")
    np.save(planted / "single.npy", hidden[0].astype(np.float32))  # a float32 copy
    (planted / "numpy.txt").write_text(str(hidden[0]))  # as print() shows it in a notebook
    found = leakscan.main(needles, lines, top=str(planted), texts=texts).found
    assert sorted(found) == sorted([("array", str(planted / "extra.npz")),
                                    ("array", str(planted / "extra.npz") + ":leaked.npy"),
                                    ("array", str(planted / "single.npy")),
                                    ("line", str(planted / "with_solution.ipynb")),
                                    ("text", str(planted / "numpy.txt")),
                                    ("text", str(planted / "printed.md"))])


def test_the_deep_scan_reads_every_cell_and_every_byte(releases, tmp_path):
    """What the release scan of a folder reads beyond code cells and text files: a text
    cell, an attachment (base64), cell and notebook metadata, an output, a comment in a
    module, a file of any suffix, and a text array inside an npz (UTF-32). A plain scan, as
    tests/test_leaks.py runs, misses most of them: the deep one is needed."""
    needles, lines, texts = secrets(registry.get(PE))
    line = lines[0]
    answer = f"# BEGIN SOLUTION\n{line}\n# END SOLUTION\n"
    stub = json.loads((releases[PE] / f"{PE}.ipynb").read_text())
    places = {
        "markdown": lambda nb: nb["cells"].append(
            {"cell_type": "markdown", "metadata": {}, "source": f"```\n{line}\n```"}),
        "attachment": lambda nb: nb["cells"].append(
            {"cell_type": "markdown", "metadata": {}, "source": "![a](attachment:a.txt)",
             "attachments": {"a.txt": {"text/plain": base64.b64encode(answer.encode())
                                       .decode()}}}),
        "cell-metadata": lambda nb: nb["cells"][0]["metadata"].update(answer=answer),
        "notebook-metadata": lambda nb: nb["metadata"].update(answer=answer),
        "outputs": lambda nb: nb["cells"].append(
            {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "",
             "outputs": [{"output_type": "display_data", "metadata": {},
                          "data": {"text/markdown": answer}}]}),
    }
    planted = tmp_path / "planted"
    planted.mkdir()
    for name, plant in places.items():
        notebook = json.loads(json.dumps(stub))
        plant(notebook)
        (planted / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1))
    (planted / "commented.py").write_text(f"def f():\n    # {line}\n    raise "
                                          "NotImplementedError\n")
    (planted / "notes.bin").write_bytes(answer.encode())
    np.savez_compressed(planted / "meta.npz", note=np.array(answer))
    deep = leakscan.main(needles, lines, top=str(planted), texts=texts, markers=MARKERS,
                         deep=True).found
    expected = {("line", str(planted / f"{name}.ipynb")) for name in places}
    expected |= {("marker", str(planted / f"{name}.ipynb")) for name in places
                 if name != "markdown"}
    expected |= {("line", str(planted / "commented.py")), ("line", str(planted / "notes.bin")),
                 ("marker", str(planted / "notes.bin")),
                 ("line", str(planted / "meta.npz") + ":note.npy"),
                 ("marker", str(planted / "meta.npz") + ":note.npy")}
    assert set(deep) == expected
    plain = leakscan.main(needles, lines, top=str(planted), texts=texts, markers=MARKERS).found
    assert set(plain) == {("line", str(planted / "markdown.ipynb"))} | {
        ("marker", str(planted / f"{name}.ipynb"))  # in the JSON as written, unescaped
        for name in ("cell-metadata", "notebook-metadata", "outputs")}


def test_a_master_or_a_solution_is_never_released(tmp_path, monkeypatch):
    name = "positional_encoding"
    layout = Layout.current()
    exercises = _course(tmp_path, monkeypatch, name)
    root = exercises.parent
    (exercises / f"{name}.ipynb").write_bytes((layout.exercises / f"{name}.ipynb").read_bytes())
    # The stub module is the solution by mistake: refused, nothing written.
    (exercises / f"{name}.py").write_bytes(layout.solution(name).read_bytes())
    with pytest.raises(SpecError, match=r"positional_encoding\.py: sinusoidal_encoding is not a "
                       r"stub \(it never raises NotImplementedError\); release the stubs"):
        release.release(registry.get(name), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # The master notebook given as the student's: its markers give it away.
    (root / "exercises" / f"{name}.py").write_bytes(layout.module(name).read_bytes())
    (root / "exercises" / f"{name}.ipynb").write_bytes(
        (layout.solutions / f"{name}_master.ipynb").read_bytes())
    with pytest.raises(SpecError, match="holds a solution marker"):
        release.release(registry.get(name), tmp_path / "out")


def test_release_refuses_a_folder_with_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds other files \\(notes.txt\\); release into a new"):
        release.release(registry.get("attention_basics"), tmp_path)


def test_check_works_from_a_release_alone(tmp_path, monkeypatch, capsys):
    """A student with the grader but without the assignment's declaration: check() reads the
    released public cases from the notebook's folder."""
    out = tmp_path / "release"
    assert cli.run(["release", "positional_encoding", "--out", str(out)], io.StringIO(),
                   io.StringIO()) == 0
    monkeypatch.chdir(out)
    known = {name: a for name, a in registry.assignments().items()
             if name != "positional_encoding"}
    monkeypatch.setattr(registry, "assignments", lambda: known)
    monkeypatch.setattr(registry, "declaring", lambda exercise, fits=None: known)

    def sinusoidal_encoding(seq_len, d_model):  # positions from 1
        positions = np.arange(1, seq_len + 1)[:, None]
        angles = positions / 10000 ** (np.arange(0, d_model, 2) / d_model)
        encoding = np.zeros((seq_len, d_model))
        encoding[:, 0::2], encoding[:, 1::2] = np.sin(angles), np.cos(angles)
        return encoding

    result = selfcheck.run("sinusoidal_encoding", sinusoidal_encoding)
    assert result.assignment == "positional_encoding" and result.public_only
    checks = result.exercises[0].checks
    assert [c.name for c in checks] == ["notebook-example", "notebook-example-2", "practice"]
    assert not any(c.passed for c in checks)
    assert "Mismatched elements: 24 / 24" in checks[0].message
    solution = references.load_solution("positional_encoding")
    right = selfcheck.run("causal_attention_with_positions",
                          solution.causal_attention_with_positions)
    assert [c.passed for c in right.exercises[0].checks] == [True, True]  # and practice



def _course(tmp_path, monkeypatch, name: str) -> Path:
    """A course folder that grading uses, holding `name`'s solution and hidden references;
    its exercises/ folder is the test's to fill."""
    root = tmp_path / "course"
    layout = Layout.current()
    (root / "exercises").mkdir(parents=True, exist_ok=True)
    (root / "solutions" / "references").mkdir(parents=True, exist_ok=True)
    hidden = layout.hidden(name)
    (root / "solutions" / "references" / hidden.name).write_bytes(hidden.read_bytes())
    (root / "solutions" / f"{name}.py").write_bytes(layout.solution(name).read_bytes())
    monkeypatch.setenv(references.ENV_SOLUTIONS, str(root / "solutions"))
    return root / "exercises"


PE = "positional_encoding"


def _release_of(tmp_path, monkeypatch, notebook: dict | str, module: str | None = None):
    """Release positional_encoding from a course whose stub notebook is `notebook` (a dict is
    written as JSON) and whose stub module is the project's, or `module`."""
    module = Layout.current().module(PE).read_text() if module is None else module
    exercises = _course(tmp_path, monkeypatch, PE)
    (exercises / f"{PE}.py").write_text(module)
    (exercises / f"{PE}.ipynb").write_text(
        notebook if isinstance(notebook, str) else json.dumps(notebook))
    return release.release(registry.get(PE), tmp_path / "out")


@pytest.mark.parametrize("first", ["%matplotlib inline", "!pip install numpy",
                                   "%%time\nx = 1"])
def test_ipython_syntax_does_not_hide_a_solution_from_release(tmp_path, monkeypatch, first):
    """A magic made the joined code unparsable, and the NotImplementedError check was skipped
    for the whole notebook; the cells are now read as the grader reads them."""
    notebook = _stub_notebook_with(PE, Layout.current().solution(PE).read_text())
    cell = dict(notebook["cells"][-1], source=first)
    notebook["cells"][:0] = [cell]
    with pytest.raises(SpecError, match=r"positional_encoding\.ipynb: sinusoidal_encoding is "
                       r"not a stub \(it never raises NotImplementedError\)"):
        _release_of(tmp_path, monkeypatch, notebook)
    assert not (tmp_path / "out").exists()
    notebook["cells"].pop()  # the stubs alone, with the magic: released
    assert {p.name for p in _release_of(tmp_path, monkeypatch, notebook)} == {
        f"{PE}.py", f"{PE}.ipynb", f"{PE}.check.npz"}


def test_release_refuses_a_stub_it_cannot_read_as_python(tmp_path, monkeypatch):
    stubs = (Layout.current().exercises / f"{PE}.ipynb").read_text()
    with pytest.raises(SpecError, match=r"positional_encoding\.py: line 1: invalid syntax; "
                       r"release checks that a stub holds no solution, and cannot check code "
                       r"that is not Python: fix it"):
        _release_of(tmp_path, monkeypatch, stubs, module="def broken(:\n")


def test_release_names_a_stub_notebook_that_is_not_json(tmp_path, monkeypatch):
    with pytest.raises(SpecError, match=r"positional_encoding\.ipynb: not valid notebook JSON "
                       r"\(.*\); run `grade assign` or re-save it from Jupyter"):
        _release_of(tmp_path, monkeypatch, '{"cells": [')


def _stub_notebook_with(name: str, source: str) -> dict:
    """The stub notebook of `name` with one more code cell."""
    notebook = json.loads((Layout.current().exercises / f"{name}.ipynb").read_text())
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                              "execution_count": None, "source": source})
    return notebook


@pytest.mark.parametrize("hidden, said", [
    ("%%capture\n{solution}", "passes public checks as it would be released"),
    ("%%time\n{solution}", "passes public checks as it would be released"),
    ("exec({solution!r})", "passes public checks as it would be released"),
    ("if True:\n{indented}", "is not a stub (it never raises NotImplementedError)"),
])
def test_a_solution_hidden_from_reading_is_caught_by_running_the_release(
        tmp_path, monkeypatch, hidden, said):
    """The red-team review's ways past the reading check: a solution inside a cell magic's
    body or an exec() string is only code when it runs, so release grades its files as
    released; a nested definition is read."""
    solution = Layout.current().solution(PE).read_text()
    cell = hidden.format(solution=solution, indented=textwrap.indent(solution, "    "))
    with pytest.raises(SpecError, match=rf"positional_encoding\.ipynb: sinusoidal_encoding "
                       rf"{re.escape(said)}"):
        _release_of(tmp_path, monkeypatch, _stub_notebook_with(PE, cell))
    assert not (tmp_path / "out").exists()


def test_an_older_notebook_format_is_read_after_upgrading_it(tmp_path, monkeypatch):
    """An nbformat 3 notebook keeps its cells under worksheets, where release did not look:
    its markers and solution went out. It is read as nbformat 4, as grading reads it."""
    master = nbformat.read(Layout.current().solutions / f"{PE}_master.ipynb", as_version=4)
    older = nbformat.writes(nbformat.convert(master, 3))
    assert '"worksheets"' in older
    with pytest.raises(SpecError, match="holds a solution marker"):
        _release_of(tmp_path, monkeypatch, older)


@pytest.mark.parametrize("cells", ['{"not": "a list"}', '[{"cell_type": "code", "source": 7}]'])
def test_a_malformed_notebook_is_named_not_a_traceback(tmp_path, monkeypatch, cells):
    with pytest.raises(SpecError, match=r"positional_encoding\.ipynb: not a valid notebook "
                       r"\(.*\); run `grade assign` or re-save it from Jupyter"):
        _release_of(tmp_path, monkeypatch,
                    f'{{"cells": {cells}, "metadata": {{}}, "nbformat": 4, "nbformat_minor": 5}}')


ANSWER_LINE = "angles = positions * frequencies[np.newaxis, :]"  # positional_encoding's solution
ANSWER = f"# BEGIN SOLUTION\n{ANSWER_LINE}\n# END SOLUTION\n"
FIX = (r"remove it: students get no solution in any cell, attachment, output or metadata "
       r"\(release the stubs that `grade assign` writes\)")


def _hide(notebook: dict, place: str) -> str:
    """Put the answer (its markers and solution line) into one place of a stub notebook; the
    place as release names it."""
    cells = notebook["cells"]
    text = {"cell_type": "markdown", "metadata": {}, "source": "## Notes\n"}
    if place == "solution line respaced":  # spacing changed (the review of #21 found it)
        cells.append(dict(text, source="```python\nangles=positions*frequencies[np.newaxis,:]"
                                       "  # the angles\n```\n"))
        return rf"cell {len(cells)} \(markdown\), its source"
    if place in ("markdown", "raw", "solution line alone"):
        source = ANSWER if place != "solution line alone" else f"```python\n{ANSWER_LINE}\n```\n"
        cells.append({"cell_type": "raw" if place == "raw" else "markdown", "metadata": {},
                      "source": source})
        return rf"cell {len(cells)} \({'raw' if place == 'raw' else 'markdown'}\), its source"
    if place == "attachment":  # as Jupyter stores a file dropped into a markdown cell
        encoded = base64.b64encode(ANSWER.encode()).decode()
        cells.append(dict(text, source="![answer](attachment:answer.txt)",
                          attachments={"answer.txt": {"text/plain": encoded}}))
        return rf"cell {len(cells)} \(markdown\), its attachments"
    if place == "cell metadata":
        cells.append(dict(text, metadata={"answer": ANSWER}))
        return rf"cell {len(cells)} \(markdown\), its metadata"
    assert place == "notebook metadata"
    notebook["metadata"]["answer"] = ANSWER
    return r"the notebook's metadata"


@pytest.mark.parametrize("place", ["markdown", "raw", "attachment", "cell metadata",
                                   "notebook metadata", "solution line alone",
                                   "solution line respaced"])
def test_release_refuses_a_solution_in_any_cell_or_metadata(tmp_path, monkeypatch, place):
    """Release read code cells only: a master's answer between the markers in a text cell, an
    attachment or metadata went out verbatim, and `grade release` exited 0."""
    notebook = json.loads((Layout.current().exercises / f"{PE}.ipynb").read_text())
    where = _hide(notebook, place)
    what = {"solution line alone":
            r"a line of the solution \(angles = positions \* frequencies\[np\.newaxis, :\]\)",
            "solution line respaced":
            r"a line of the solution \(angles=positions\*frequencies\[np\.newaxis,:\]  # the "
            r"angles\)"}.get(place, r"a solution marker \(BEGIN SOLUTION\)")
    message = rf"positional_encoding\.ipynb: {where}, holds {what}; {FIX}"
    with pytest.raises(SpecError, match=message):
        _release_of(tmp_path, monkeypatch, notebook)
    assert not (tmp_path / "out").exists()
    out, err = io.StringIO(), io.StringIO()  # the command says the same, exit code 1
    status = cli.run(["release", PE, "--out", str(tmp_path / "cli")], out, err)
    assert (status, out.getvalue()) == (1, "")
    assert re.match(rf"grade: error: .*{message}", err.getvalue())
    assert "Traceback" not in err.getvalue() and not (tmp_path / "cli").exists()


def test_a_solution_in_a_stub_modules_comment_is_refused(tmp_path, monkeypatch):
    """Every byte of the .py stub is read, comments and strings too, not only its code."""
    module = Layout.current().module(PE).read_text()
    stub = 'raise NotImplementedError("sinusoidal_encoding")'
    stubbed = module.replace(stub, f"# {ANSWER_LINE}\n    {stub}")
    assert stubbed != module
    line = stubbed.splitlines().index(f"    # {ANSWER_LINE}") + 1
    notebook = json.loads((Layout.current().exercises / f"{PE}.ipynb").read_text())
    with pytest.raises(SpecError, match=rf"positional_encoding\.py: line {line}, holds a line "
                       rf"of the solution \(angles = positions"):
        _release_of(tmp_path, monkeypatch, notebook, module=stubbed)


def test_the_check_data_is_scanned_before_it_is_written(tmp_path, monkeypatch):
    """The .check.npz is written by release too: a public case's note that quotes the answer
    is found in its members (text arrays are UTF-32 there, not ASCII)."""
    assignment = registry.get(PE)
    exercise = assignment.exercises[0]
    cases = tuple(dataclasses.replace(case, note=ANSWER)
                  if case.visibility is Visibility.PUBLIC else case for case in exercise.cases)
    noted = dataclasses.replace(assignment, exercises=(
        dataclasses.replace(exercise, cases=cases), *assignment.exercises[1:]))
    project = Layout.current()
    exercises = _course(tmp_path, monkeypatch, PE)
    for stub in (project.module(PE), project.exercises / f"{PE}.ipynb"):
        (exercises / stub.name).write_bytes(stub.read_bytes())
    with pytest.raises(SpecError, match=r"positional_encoding\.check\.npz: member "
                       r"__meta__\.npy, holds a solution marker \(BEGIN SOLUTION\); remove it "
                       r"from the declaration's public cases"):
        release.release(noted, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_outputs_of_a_stub_notebook_are_not_released(tmp_path, monkeypatch):
    """Outputs and execution counts are cleared before the scan and the write (as they were
    before the scan existed): a solution's printed results stay on the instructor's machine."""
    notebook = json.loads((Layout.current().exercises / f"{PE}.ipynb").read_text())
    code = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ANSWER},
                       {"output_type": "display_data", "metadata": {},
                        "data": {"text/plain": ANSWER, "image/png": base64.b64encode(
                            ANSWER.encode()).decode()}}]
    code["execution_count"] = 7
    written = _release_of(tmp_path, monkeypatch, notebook)
    text = (tmp_path / "out" / f"{PE}.ipynb").read_text()
    assert tmp_path / "out" / f"{PE}.ipynb" in written
    assert "BEGIN SOLUTION" not in text and ANSWER_LINE not in text
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None
               for c in json.loads(text)["cells"])


def test_a_mistakes_output_that_holds_a_hidden_value_is_left_out():
    """The check data holds what each misconception returns on the public cases, except
    where that holds a hidden case's numbers, as this module's scan finds them: positions
    from 1 over the public 50 positions give position 50, which the hidden 200 positions
    hold; a base of 1000 over 6 features gives the frequencies that 10000 gives over 8."""
    assignment = registry.get(PE)
    stored = references.load(assignment)
    kept = release.mistakes(assignment, stored)
    secret = windows(material(assignment, Visibility.HIDDEN)) - windows(
        material(assignment, Visibility.PUBLIC))
    exercise = assignment.exercises[0]
    for case in ("notebook-example", "notebook-example-2"):
        expected = stored.get(exercise.name, case)
        inputs = exercise.case(case).inputs()
        for index, mistake in enumerate(exercise.misconceptions):
            wrong = as_outputs(mistake.variant(*inputs), 1)
            holds = bool(windows(list(wrong)) & secret)
            assert (index in kept.get((exercise.name, case), {})) is not holds, (case, index)
            if not holds:
                assert not np.array_equal(wrong[0], expected[0])
    assert sorted(kept[(exercise.name, "notebook-example")]) == [0, 2, 3, 4]
    assert sorted(kept[(exercise.name, "notebook-example-2")]) == [0, 2]
    assert [exercise.misconceptions[i].id for i in (1, 4)] == [
        "wrong-exponent-base", "positions-from-one"]
