"""Loading notebooks and modules into cells of Python, without running anything."""

from __future__ import annotations

import ast
import json
import tokenize
from types import SimpleNamespace

import nbformat
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from IPython.core import inputtransformer2

from grader.errors import SubmissionError
from grader.pipeline import ipython_syntax, loading
from grader.sandbox.limits import Limits
from tests.conftest import ROOT


def test_notebook_code_cells_keep_their_position(make_submission):
    path = make_submission(["x = 1", "y = 2\nz = 3"])
    submission = loading.load(path)
    assert submission.kind == "notebook"
    assert [c.index for c in submission.cells] == [1, 2]
    assert [s.lineno for s in submission.cells[1].statements] == [1, 2]
    assert len(submission.sha256) == 64


def test_markdown_cells_are_not_code(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# title"},
        {"cell_type": "code", "metadata": {}, "source": ["a = 1\n", "b = 2"], "outputs": [],
         "execution_count": 1}]}))
    submission = loading.load(path)
    assert [(c.index, c.source) for c in submission.cells] == [(2, "a = 1\nb = 2")]


def test_assignment_from_metadata(make_submission):
    path = make_submission(["x = 1"], metadata={"grader": {"assignment": "udl_attention"}})
    assert loading.load(path).assignment_hint == "udl_attention"


def test_magics_become_python_and_shell_escapes_are_skipped():
    cell = loading.prepare_cell(1, "%matplotlib inline\n!pip install torch\nfiles = !ls")
    reasons = [s.skip_reason for s in cell.statements]
    assert reasons[0] is None
    assert reasons[1] == "shell command `!pip install torch` is never run by the grader"
    assert reasons[2] == "shell command `!ls` is never run by the grader"


@pytest.mark.parametrize("source, reason", [
    ("%%bash\necho hi", "cell magic `%%bash` is never run by the grader"),
    ("%%script python\nprint(1)", "cell magic `%%script` is never run by the grader"),
    ("%pip install numpy", "magic `%pip` is never run by the grader"),
    ("%system ls", "magic `%system` is never run by the grader"),
    ("pip install torch torchvision", "magic `%pip` is never run by the grader"),
])
def test_unsafe_magics_are_skipped(source, reason):
    (statement,) = loading.prepare_cell(1, source).statements
    assert statement.skip_reason == reason


@pytest.mark.parametrize("source", ["%matplotlib inline", "%time x = 1", "%%time\nx = 1",
                                    "%load_ext autoreload"])
def test_harmless_magics_run(source):
    (statement,) = loading.prepare_cell(1, source).statements
    assert statement.skip_reason is None


def test_plain_python_is_left_alone():
    source = "x = 5 % 3\nprint('!not a shell')"
    assert loading.prepare_cell(1, source).source == source


def test_a_cell_that_does_not_parse_records_the_line():
    cell = loading.prepare_cell(4, "x = 1\ndef f(:\n    pass")
    assert cell.statements == ()
    assert cell.syntax_error == "SyntaxError: invalid syntax (line 2)"


def test_module_is_one_cell_without_ipython_syntax(make_submission):
    path = make_submission("import numpy as np\n\n\ndef f():\n    return 1\n")
    submission = loading.load(path)
    assert submission.kind == "module"
    assert [s.lineno for s in submission.cells[0].statements] == [1, 4]


@pytest.mark.parametrize("content, problem", [
    (b"", "is empty"),
    (b"   \n", "is empty"),
    (b"\x00\x01\x02", "is binary data, not text"),
    (b"\xff\xfe{", "is not UTF-8 text (byte 0)"),
    (b"[1, 2]", "is JSON but not a Jupyter notebook"),
    (b'{"nbformat": 4, "cells": 7, "metadata": {}}', "has no list of cells"),
    (b'{"nbformat": 3, "worksheets": 7}', "is not a valid notebook"),
    (b'{"nbformat": "four"}', 'has nbformat "four", which'),
    (b"{" * 100000, "not valid notebook JSON"),
])
def test_unreadable_notebooks(tmp_path, content, problem):
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    with pytest.raises(SubmissionError) as info:
        loading.load(path)
    assert str(info.value).startswith(f"{path}: ")
    assert problem in str(info.value)


# --------------------------------------------------------------------------- old formats

SOLUTION = "def softmax(x):\n    return x"
OLD_FORMATS = {
    1: {"nbformat": 1, "cells": [
        {"cell_type": "text", "text": "Attention"},
        {"cell_type": "code", "code": SOLUTION, "language": "python"}]},
    2: {"nbformat": 2, "nbformat_minor": 0, "metadata": {"name": "alice"}, "worksheets": [
        {"cells": [{"cell_type": "heading", "level": 1, "source": "Attention"},
                   {"cell_type": "code", "input": "import numpy as np", "language": "python",
                    "outputs": [], "prompt_number": 1},
                   {"cell_type": "markdown", "source": "Softmax:"},
                   {"cell_type": "code", "input": SOLUTION, "language": "python",
                    "outputs": [], "collapsed": False}]}]},
}


@pytest.mark.parametrize("version, cells", [
    (1, [(2, SOLUTION)]),
    (2, [(2, "import numpy as np"), (4, SOLUTION)]),
])
def test_old_notebook_formats_are_upgraded_by_nbformat(tmp_path, version, cells):
    path = tmp_path / "alice.ipynb"
    path.write_text(json.dumps(OLD_FORMATS[version]))
    submission = loading.load(path)
    assert [(c.index, c.source) for c in submission.cells] == cells


@pytest.mark.parametrize("version, shown", [
    (b"99", "99"), (b"5", "5"), (b"0", "0"), (b"true", "true"), (b'"four"', '"four"'),
    (b"4.0", "4.0"), (b"[4]", "a list"), (b'"' + b"4" * 100 + b'"',
                                          '"' + "4" * 39 + "… (62 more characters)"),
])
def test_a_format_nbformat_cannot_read_is_refused_naming_it(tmp_path, version, shown):
    path = tmp_path / "alice.ipynb"
    path.write_bytes(b'{"nbformat": ' + version + b', "nbformat_minor": 0, "cells": [], '
                     b'"metadata": {}}')
    with pytest.raises(SubmissionError) as info:
        loading.load(path)
    assert str(info.value) == (
        f"{path}: has nbformat {shown}, which the grader's nbformat {nbformat.__version__} "
        "cannot read (it reads versions 1 to 4); re-save it from Jupyter (File > Save) as a "
        "version 4 notebook and hand it in again")


# --------------------------------------------------------------------------- languages

R_INFO = {"name": "R", "codemirror_mode": "r", "file_extension": ".r",
          "mimetype": "text/x-r-source", "pygments_lexer": "r", "version": "4.3.1"}
FIX = ("change its kernel to Python 3 (Kernel > Change Kernel), or paste the code into a "
       "Python notebook, run it there, save it and hand it in again")


@pytest.mark.parametrize("metadata, kernel", [
    ({"kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
      "language_info": R_INFO}, "ir (R)"),
    ({"kernelspec": {"name": "ir", "display_name": "R"}}, "ir (R)"),
    ({"language_info": R_INFO}, "R"),
    ({"kernelspec": {"name": "julia-1.9", "display_name": "Julia 1.9.3", "language": "julia"},
      "language_info": {"name": "julia", "file_extension": ".jl"}}, "julia-1.9 (julia)"),
    ({"kernelspec": {"name": "julia-1.10"}}, "julia-1.10 (Julia)"),
    ({"kernelspec": {"name": "conda-env-stats-r", "display_name": "R [conda env:stats]"}},
     "conda-env-stats-r (R)"),
])
def test_a_notebook_of_another_language_is_refused(make_submission, metadata, kernel):
    path = make_submission(["softmax <- function(x) exp(x) / sum(exp(x))"], metadata=metadata)
    with pytest.raises(SubmissionError) as info:
        loading.load(path, assignment="udl_attention")
    assert str(info.value) == (f"{path}: this notebook's kernel is {kernel}; udl_attention "
                               f"needs Python; {FIX}")
    with pytest.raises(SubmissionError) as info:
        loading.load(path)
    assert str(info.value) == (f"{path}: this notebook's kernel is {kernel}; the grader runs "
                               f"Python; {FIX}")


@pytest.mark.parametrize("metadata", [
    {},
    {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                    "language": "python"},
     "language_info": {"name": "python", "version": "3.11.7"}},
    {"kernelspec": {"name": "python", "display_name": "Python"}},
    {"kernelspec": {"name": "conda-env-torch-py", "display_name": "Python [conda env:torch]",
                    "language": "python"}},
    {"kernelspec": {"name": "venv", "display_name": "attention (venv)"}},
    {"kernelspec": {"name": "ir", "language": "python"}},  # a Python kernel named ir
    # PySpark's kernel names its language pyspark, and says it is Python in the rest.
    {"kernelspec": {"name": "pysparkkernel", "display_name": "PySpark", "language": ""},
     "language_info": {"name": "pyspark", "mimetype": "text/x-python",
                       "codemirror_mode": {"name": "python", "version": 3},
                       "pygments_lexer": "python3"}},
    {"kernelspec": "ir", "language_info": ["R"]},  # not metadata Jupyter writes: no word
])
def test_python_notebooks_are_graded_whatever_their_kernel_is_called(make_submission,
                                                                     metadata):
    path = make_submission(["x = 1"], metadata=metadata)
    assert [c.source for c in loading.load(path, assignment="udl_attention").cells] == ["x = 1"]


def test_an_old_notebook_of_another_language_is_refused_after_its_upgrade(tmp_path):
    path = tmp_path / "alice.ipynb"
    path.write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {
        "kernelspec": {"name": "ir", "display_name": "R", "language": "R"}},
        "worksheets": [{"cells": [{"cell_type": "code", "input": "x <- 1", "language": "R",
                                   "outputs": []}], "metadata": {}}]}))
    with pytest.raises(SubmissionError, match="this notebook's kernel is ir \\(R\\); the "
                                              "grader runs Python; change its kernel"):
        loading.load(path)


def test_other_extensions_and_folders_are_refused(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(SubmissionError, match="has the extension '.txt'; hand in a .ipynb"):
        loading.load(tmp_path / "a.txt")
    with pytest.raises(SubmissionError, match="is a folder, not a file"):
        loading.load(tmp_path)
    with pytest.raises(SubmissionError, match="cannot be read"):
        loading.load(tmp_path / "missing.ipynb")


# --------------------------------------------------------------------------- size limits

MB = 1 << 20


def _notebook(path, cells: list[str], outputs: list | None = None):
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source,
         "outputs": outputs or []} for source in cells]}))
    return path


def _refusal(path, limits: Limits) -> str:
    with pytest.raises(SubmissionError) as info:
        loading.load(path, limits)
    return str(info.value)


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "alice.ipynb"
    path.write_bytes(b" " * (3 * MB // 2))
    monkeypatch.setattr(loading.submissions, "read_bytes", None)  # never called
    assert _refusal(path, Limits(submission_mb=1)) == (
        f"{path}: is 1.5 MB, over the 1 MB limit for a submission file (--max-submission-mb); "
        "clear the outputs (Cell > All Output > Clear) and hand it in again")


def test_outputs_count_only_towards_the_file(tmp_path):
    image = {"output_type": "display_data", "metadata": {},
             "data": {"image/png": "iVBORw0KGgo" * (MB // 10)}}
    path = _notebook(tmp_path / "plots.ipynb", ["x = 1", "y = 2"], outputs=[image])
    assert path.stat().st_size > 2 * MB
    limits = Limits(submission_mb=3, cell_code_mb=0.001, code_mb=0.001)
    assert [c.source for c in loading.load(path, limits).cells] == ["x = 1", "y = 2"]


def test_a_cell_over_the_code_limit(tmp_path):
    path = _notebook(tmp_path / "alice.ipynb", ["x = 1", "data = " + "1" * (MB * 6 // 10)])
    assert _refusal(path, Limits(cell_code_mb=0.5)) == (
        f"{path}: cell 2 has 0.6 MB of code, over the 0.5 MB limit for one cell "
        "(--max-cell-code-mb); remove pasted data or generated code from it and hand it in "
        "again")
    module = tmp_path / "alice.py"
    module.write_text("data = " + "1" * (MB * 6 // 10))
    assert _refusal(module, Limits(cell_code_mb=0.5)) == (
        f"{module}: has 0.6 MB of code, over the 0.5 MB limit for one cell "
        "(--max-cell-code-mb); remove pasted data or generated code from it and hand it in "
        "again")


def test_all_the_code_over_its_limit_and_sizes_shown_precisely_enough(tmp_path):
    path = _notebook(tmp_path / "alice.ipynb", ["x = '" + "a" * (MB * 4 // 10) + "'"] * 3)
    assert _refusal(path, Limits(code_mb=1)) == (
        f"{path}: has 1.2 MB of code, over the 1 MB limit for all the code of a submission "
        "(--max-code-mb); remove pasted data, generated code and unused cells, and hand it in "
        "again")
    just_over = _notebook(tmp_path / "bob.ipynb", ["#" * (MB + 10)])
    assert _refusal(just_over, Limits()).startswith(
        f"{just_over}: cell 1 has 1,048,586 bytes of code, over the 1 MB limit for one cell")


def test_code_in_several_bytes_per_character_is_measured_in_bytes(tmp_path):
    path = _notebook(tmp_path / "alice.ipynb", ["s = '" + "é" * (MB * 3 // 10) + "'"])
    assert "cell 1 has 0.6 MB of code" in _refusal(path, Limits(cell_code_mb=0.5))


def test_too_many_code_cells_or_statements(tmp_path):
    path = _notebook(tmp_path / "alice.ipynb", ["x = 1"] * 4)
    assert _refusal(path, Limits(code_cells=3)) == (
        f"{path}: has 4 code cells, over the limit of 3 (--max-code-cells); merge or delete "
        "scratch cells and hand it in again")
    assert len(loading.load(path, Limits(code_cells=4)).cells) == 4
    many = _notebook(tmp_path / "bob.ipynb", ["x = 1\n" * 3000, "y = 2\n" * 3000])
    assert _refusal(many, Limits()) == (
        f"{many}: has 6,000 top-level statements, over the limit of 5,000 (--max-statements); "
        "put repeated code in a loop or a function and hand it in again")
    module = tmp_path / "bob.py"
    module.write_text("x = 1\n" * 11)
    assert "has 11 top-level statements, over the limit of 10" in _refusal(
        module, Limits(statements=10))


def test_the_defaults_accept_a_course_notebook():
    limits = Limits()
    assert (limits.submission_mb, limits.cell_code_mb, limits.code_mb, limits.code_cells,
            limits.statements) == (50, 1, 2, 500, 5000)
    for notebook in (ROOT / "exercises").glob("*.ipynb"):
        loading.load(notebook, limits)


# --------------------------------------------------------------------------- linear time

N = 60_000  # the size of the cell that cost 46 s of grader CPU in review #9
PATHOLOGICAL = {  # cell -> what loading records; each was quadratic, or raised
    "blank lines, then an open bracket": ("\n" * (N - 1) + "(",
                                          "SyntaxError: '(' was never closed (line 1)"),
    "indented blank lines": (" \n" * (N // 2 - 1) + "(\n",
                             "SyntaxError: '(' was never closed (line 1)"),
    "a long name asking for help": ("a" * (N - 2) + ")?", "SyntaxError: unmatched ')' (line 1)"),
    "many failing help lines": ("a)?\n" * (N // 4), "SyntaxError: unmatched ')' (line 1)"),
    "many magics": ("x = %ls\n" * (N // 8), "cannot be parsed: more than 500 magics, shell "
                    "escapes and help lines in one cell (IPython stops there too)"),
    "shell escapes opening brackets": ("!(\n" * (N // 3), "cannot be parsed: its magics or "
                                       "shell escapes leave brackets open, and reading the "
                                       "code after each of them again would take too long"),
    "pip lines and spaces": (("pip" + " " * 97 + "\n") * (N // 100) + "(",
                             f"SyntaxError: '(' was never closed (line {N // 100 + 1})"),
    "bad dedents and a magic": ("if 1:\n        x\n    y\n" * (N // 24) + "%ls\n",
                                "SyntaxError: unindent does not match any outer indentation "
                                "level (line 3)"),
}


class Tokenized:
    """Counts the characters the tokenizer reads: the work of transforming IPython syntax."""

    def __init__(self, monkeypatch) -> None:
        self.chars = 0
        real = tokenize.generate_tokens

        def counting(readline):
            def counted():
                line = readline()
                self.chars += len(line)
                return line
            return real(counted)

        monkeypatch.setattr(tokenize, "generate_tokens", counting)


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_cells_load_in_linear_work(monkeypatch, name):
    source, error = PATHOLOGICAL[name]
    tokenized = Tokenized(monkeypatch)
    searched: list[int] = []
    pattern = inputtransformer2._help_end_re  # quadratic on a long line: never given one
    monkeypatch.setattr(inputtransformer2, "_help_end_re", SimpleNamespace(
        search=lambda text: searched.append(len(text)) or pattern.search(text)))
    cell = loading.prepare_cell(1, source)
    assert cell.syntax_error == error and cell.statements == ()
    assert tokenized.chars <= ipython_syntax.TOKENIZE_FACTOR * len(source) + 1000
    assert max(searched, default=0) <= ipython_syntax.HELP_CHARS


def test_ipython_tokenizes_again_after_each_magic_and_we_do_not(monkeypatch):
    magics = 100  # IPython's work grows with its square
    source = "x = %ls\n" * magics + "y = 1\n" * magics
    tokenized = Tokenized(monkeypatch)
    ours = ipython_syntax.transform_cell(source)
    assert tokenized.chars == len(source)  # each line read once
    tokenized.chars = 0
    assert inputtransformer2.TransformerManager().transform_cell(source) == ours
    # What IPython's loop reads: after each magic, the rest of the cell, half of it at least.
    assert tokenized.chars > magics // 2 * len(source)


def test_a_cell_of_500_magics_is_transformed_where_ipython_raises(monkeypatch):
    cell = loading.prepare_cell(1, "%who\n" * 250 + "%cd /\n" * 250)
    assert [s.skip_reason for s in cell.statements] == [None] * 250 + [
        "magic `%cd` is never run by the grader"] * 250
    # IPython changes a cell one magic at a time, and gives up after TRANSFORM_LOOP_LIMIT
    # changes: shown with a limit of 5 and 6 magics, where 500 took IPython 12 to 40 s.
    assert inputtransformer2.TRANSFORM_LOOP_LIMIT == 500
    monkeypatch.setattr(inputtransformer2, "TRANSFORM_LOOP_LIMIT", 5)
    assert "%who" not in inputtransformer2.TransformerManager().transform_cell("%who\n" * 4)
    with pytest.raises(RuntimeError, match="5 iterations"):
        inputtransformer2.TransformerManager().transform_cell("%who\n" * 6)


def test_the_automagic_pattern_stays_on_its_line():
    source = "\n \npip install x\n\t conda install y\npip\n install z"
    assert ipython_syntax._AUTOMAGIC.sub(r"\1%\2", source) == \
        "\n \n%pip install x\n\t %conda install y\npip\n install z"
    assert ipython_syntax._AUTOMAGIC.pattern.count("\\s") == 0  # \s would match line breaks


def test_a_long_shell_command_is_shown_capped():
    (statement,) = loading.prepare_cell(1, "!echo " + "x" * 500).statements
    assert statement.skip_reason == (
        "shell command `!echo " + "x" * 95 + "… (405 more characters)` is never run by the "
        "grader")


# --------------------------------------------------------------------------- IPython's result

LINES = ["%ls", "%time x = 1", "!ls", "!echo (", "x = %who", "y = !pwd", "z?", "np.dot??",
         "(", "x = (", "'''", '"', "\\", "# c \\", "def f():", "    !ls", "    x = %ls",
         "        y?", "  w = 1", "if x:", "    pass", "", "   ", ">>> x", "... y",
         "In [1]: x", "%%bash", "/f a", ",f a b", ";g a b", "x = 1; !ls", "[1,", "'abc",
         "x = '''", "!ls \\", "%ls \\", "more", "\t!ls", "x == %ls", "f(x = %ls)",
         "print('%ls')", "%matplotlib inline", "pip install torch"]
SUNKEN = [")", "2]", "a)?", "}"]  # brackets closed before they open: a syntax error anyway


def _ipython(source: str) -> str | None:
    try:
        return inputtransformer2.TransformerManager().transform_cell(source)
    except Exception:  # IPython's own limits (RuntimeError, IndentationError)
        return None


def _syntax_error(source: str) -> tuple[str, int | None] | None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return exc.msg, exc.lineno
    return None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=8), st.booleans())
@example(["[1,", "z?"], False)  # help on an unclosed bracket's line: IPython 9 says it is none
def test_cells_transform_as_ipython_transforms_them(lines, newline):
    source = "\n".join(lines) + ("\n" if newline else "")
    expected = _ipython(source)
    if expected is not None:
        assert ipython_syntax.transform_cell(source) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LINES + SUNKEN), min_size=1, max_size=8))
def test_with_unbalanced_brackets_the_same_syntax_error(lines):
    source = "\n".join(lines)
    expected = _ipython(source)
    if expected is not None:
        assert _syntax_error(ipython_syntax.transform_cell(source)) == _syntax_error(expected)


def test_a_dedent_that_ipython_cannot_tokenize_is_a_syntax_error_not_a_crash():
    source = "if 1:\n        x = 1\n    y = 2\n!ls\n"
    with pytest.raises(IndentationError):
        inputtransformer2.TransformerManager().transform_cell(source)
    cell = loading.prepare_cell(1, source)
    assert cell.syntax_error == ("SyntaxError: unindent does not match any outer indentation "
                                 "level (line 3)")


def test_a_cell_names_the_packages_it_imports_anywhere_but_relative_ones():
    cell = loading.prepare_cell(1, "import numpy as np, matplotlib.pyplot as plt\n"
                                   "from os import path\nfrom . import sibling\n"
                                   "%matplotlib inline\ndef f():\n    import torch.nn\n")
    assert cell.imports == ("matplotlib", "numpy", "os", "torch")
    assert loading.prepare_cell(2, "import (").imports == ()


NESTED_IMPORTS = """import a0
def f():
    import b0
    class C:
        import c0
        def m(self):
            if x:
                import d0
            elif y:
                import e0
            else:
                from f0.sub import g
for i in y:
    import g0
else:
    import h0
while z:
    import i0
try:
    import j0
except ImportError:
    import k0
else:
    import l0
finally:
    import m0
with open('x') as fh:
    import n0
async def af():
    async with q:
        import o0
    async for r in s:
        import p0
match v:
    case 1:
        import q0
    case _:
        from .r0 import t
x = [1, 2, (lambda: 3)]
"""


def test_imports_are_found_in_every_kind_of_block_and_nowhere_else():
    """Only statements hold imports: the blocks are read, never an expression's nodes (a
    cell that is a list of 300,000 numbers took a second to walk)."""
    tree = ast.parse(NESTED_IMPORTS)
    walked = {node.names[0].name if isinstance(node, ast.Import) else node.module
              for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
              and not getattr(node, "level", 0)}
    expected = tuple(sorted(f"{letter}0" for letter in "abcdefghijklmnopq"))
    assert tuple(sorted(name.partition(".")[0] for name in walked)) == expected
    assert loading.prepare_cell(1, NESTED_IMPORTS).imports == expected
