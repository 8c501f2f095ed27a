"""The fast engine's `get_ipython()` does what Jupyter's shell does, or says in one line that it
did not; it never raises an error that Jupyter would not. Each attribute a notebook commonly
uses is run in both engines, and both must give the same cells and output; the fast engine's
only extra is its "[grader] not run: ..." line where it cannot do what Jupyter does."""

from __future__ import annotations

import importlib.machinery
import json
import re
import subprocess
import sys
from importlib.metadata import version

import pytest

from grader.course import registry
from grader.pipeline import grading
from grader.results import CellStatus, ResultStatus
from grader.sandbox.inside import displays, shell
from grader.sandbox.limits import Limits
from tests.conftest import ROOT

LIMITS = Limits(cell_timeout=5, call_timeout=2, memory_mb=1024)
NOTE = "[grader] not run: "
MARK = "@@case "
IPYTHON_9 = int(version("ipython").split(".")[0]) >= 9

def grade(path, engine: str):
    result = grading.grade(path, registry.get("attention_basics"),
                           grading.Options(limits=LIMITS, engine=engine))
    assert result.status is ResultStatus.GRADED, result.error
    return result


def timings(text: str) -> str:
    """The numbers of `%time` and `%timeit` differ from run to run."""
    text = re.sub(r"(?m)^CPU times: .*$", "CPU times: ...", text)
    text = re.sub(r"(?m)^Wall time: .*$", "Wall time: ...", text)
    return re.sub(r"(?m)^\S+ \S+ ± \S+ \S+ per loop \(.*\)$", "... per loop", text)


def notes(engine: str, *lines: str) -> str:
    """What only the fast engine prints: the things it did not run."""
    return "".join(f"{NOTE}{line}\n" for line in lines) if engine == "fast" else ""


# Each case: the cells, then the output expected of both engines (for the fast engine with the
# notes a function of the engine adds), and the problem cells.
CASES = {
    "kernel": (
        ["k = get_ipython().kernel\nprint(bool(k), hasattr(get_ipython(), 'kernel'))",
         # What libraries do to find out whether they run in Jupyter: no error in either.
         "try:\n    get_ipython().kernel.comm_manager\n    print('in a notebook')\n"
         "except AttributeError:\n    print('not in a notebook')"],
        lambda engine: "True True\nin a notebook\n", []),
    "kernel-call": (
        ["get_ipython().kernel.comm_manager.register_target('x', print)\nprint('went on')"],
        lambda engine: notes(engine, "get_ipython().kernel.comm_manager.register_target(): "
                             f"{shell.NO_KERNEL}") + "went on\n", []),
    "user_ns": (
        ["x = 41\nns = get_ipython().user_ns\nns['y'] = ns['x'] + 1\n"
         "print(y, ns is globals(), get_ipython().user_global_ns is globals())"],
        lambda engine: "42 True True\n", []),
    "run_line_magic": (
        ["ip = get_ipython()\nip.run_line_magic('matplotlib', 'inline')\n"
         "print(ip.run_line_magic('time', '6 * 7'))\nip.run_line_magic('time', 'z = 1')\n"
         "print(z)"],
        lambda engine: "CPU times: ...\nWall time: ...\n42\nCPU times: ...\nWall time: ...\n1\n",
        []),
    "run_line_magic-unknown": (
        ["get_ipython().run_line_magic('load_ext', 'autoreload')\n"
         "get_ipython().run_line_magic('autoreload', '2')\nprint('ok')"],
        lambda engine: "ok\n", []),
    "run_cell_magic": (
        ["get_ipython().run_cell_magic('capture', 'out', 'print(1)\\nimport sys\\n"
         "print(2, file=sys.stderr)')\nprint(repr(out.stdout), repr(out.stderr))\nout.show()",
         "%%capture\nprint('nobody sees this')",
         "%%time\na = 2\nb = a * 3\nprint(b)"],
        lambda engine: "'1\\n' '2\\n'\n1\n2\n6\nCPU times: ...\nWall time: ...\n", []),
    "system": (
        ["def listing():\n    get_ipython().system('ls')\n    return 'listed'\nprint(listing())"],
        lambda engine: f"{NOTE}!ls\nlisted\n", []),  # both engines: the kernel has no sh
    "getoutput": (
        ["def files():\n    return get_ipython().getoutput('ls -a')\nprint(len(files()) >= 0)"],
        lambda engine: f"{NOTE}!ls -a\nTrue\n", []),
    # IPython 9 removed the deprecated magic(): Jupyter's shell has it only before.
    "magic": (
        ["import warnings\nwarnings.simplefilter('ignore', DeprecationWarning)\n"
         "get_ipython().magic('time w = 5')\nprint(w)"],
        lambda engine: "" if IPYTHON_9 else "CPU times: ...\nWall time: ...\n5\n",
        [(1, CellStatus.ERROR, "line 3: AttributeError: 'ZMQInteractiveShell' object has no "
          "attribute 'magic'; line 4: NameError: name 'w' is not defined; the grader ran the "
          "rest of the cell anyway; Jupyter would have stopped at the first error")]
        if IPYTHON_9 else []),
    "display_pub": (
        ["get_ipython().display_pub.publish({'text/plain': 'shown'})\nprint('published')"],
        lambda engine: "published\n", []),
    "display_formatter": (
        ["class Table:\n    def _repr_html_(self):\n        return '<b>t</b>'\n"
         "    def __repr__(self):\n        return 'Table()'\n\n"
         "data, metadata = get_ipython().display_formatter.format(Table())\n"
         "print(sorted(data.items()), metadata)\n"
         "print(get_ipython().display_formatter.format(7, include={'text/plain'}))"],
        lambda engine: "[('text/html', '<b>t</b>'), ('text/plain', 'Table()')] {}\n"
                       "({'text/plain': '7'}, {})\n", []),
    # The cells of nbclient's own display-id notebook (tests/files/update-display-id.ipynb):
    # a notebook that formats objects and publishes them under display ids itself.
    "display-id-notebook": (
        ["from IPython.display import display\nip = get_ipython()\n\n"
         "def show(obj, display_id, update=False, result=False):\n"
         "    data, metadata = ip.display_formatter.format(obj)\n"
         "    content = {'data': data, 'metadata': metadata,\n"
         "               'transient': {'display_id': str(display_id)}}\n"
         "    if result:\n        kind = 'execute_result'\n"
         "        content['execution_count'] = ip.execution_count\n"
         "    else:\n        kind = 'update_display_data' if update else 'display_data'\n"
         "    ip.kernel.session.send(ip.kernel.iopub_socket, kind, content,\n"
         "                           parent=ip.parent_header)\n"
         "    return data",
         "display('above')\nshow(1, 'here')\ndisplay('below')",
         "show(2, 'here')\nshow(3, 'there')\nshow(4, 'here')",
         "show(5, 'there')\nshow(6, 'there', update=True)",
         "show(7, 'here')\nshow(8, 'here', update=True)\nprint(show(9, 'result', result=True))",
         "show(10, 'result', update=True)\nprint('done')"],
        lambda engine: notes(engine, "get_ipython().kernel.session.send(): "
                             f"{shell.NO_KERNEL}") + "{'text/plain': '9'}\ndone\n", []),
    "events": (
        ["def hook(*args):\n    pass\n\nget_ipython().events.register('post_run_cell', hook)\n"
         "get_ipython().events.unregister('post_run_cell', hook)\nprint('registered')"],
        lambda engine: notes(engine, "get_ipython().events.register('post_run_cell', ...): "
                             "the fast engine runs no cell events; --engine kernel does")
        + "registered\n", []),
    "config": (
        ["c = get_ipython().config\nprint(type(c).__name__, 'IPKernelApp' in c)"],
        lambda engine: "Config True\n", []),
    "ev-ex-push": (
        ["ip = get_ipython()\nip.ex('e = 3')\nip.push({'p': ip.ev('e + 1')})\n"
         "def share():\n    local = 9\n    get_ipython().push('local')\n"
         "share()\nprint(e, p, local)"],
        lambda engine: "3 4 9\n", []),
    "IPython.get_ipython": (
        ["from IPython import get_ipython as ipython_get\nimport IPython\n"
         "print(ipython_get() is get_ipython(), IPython.get_ipython().user_ns is globals())"],
        lambda engine: "True True\n", []),
    "missing-attribute": (
        ["print(hasattr(get_ipython(), 'no_such_thing'))\nget_ipython().no_such_thing"],
        lambda engine: "False\n",
        [(1, CellStatus.ERROR, "line 2: AttributeError: 'ZMQInteractiveShell' object has no "
                           "attribute 'no_such_thing'")]),
    "input": (
        ["try:\n    input('name? ')\nexcept NotImplementedError as e:\n"
         "    print(type(e).__name__)\nname = input()"],
        lambda engine: "StdinNotImplementedError\n",
        [(1, CellStatus.ERROR, "line 5: StdinNotImplementedError: raw_input was called, but this "
                           "frontend does not support input requests.")]),
}


@pytest.mark.parametrize("name", CASES)
def test_get_ipython_attribute_works_as_in_jupyter(make_submission, name):
    cells, output, problems = CASES[name]
    result = grade(make_submission(cells), "fast")
    assert [(c.index, c.status, c.message) for c in result.problem_cells] == problems
    assert timings(result.output) == output("fast")


KERNEL_LAST = ("magic", "run_line_magic-unknown")
"""The cases that change the kernel for the cells after them (a warnings filter, autoreload):
last in the kernel's one notebook."""


@pytest.mark.slow
def test_every_case_gives_the_same_cells_and_output_in_a_jupyter_kernel(make_submission):
    """The cases above in one real kernel, one after another, each behind a cell that prints
    its name: each case's output and problem cells (counted from its first cell) are what the
    fast engine must give, less its notes. One kernel: a kernel for each case would cost about
    0.8 s of CPU more each."""
    order = [name for name in CASES if name not in KERNEL_LAST] + list(KERNEL_LAST)
    cells, first = [], {}
    for name in order:
        cells.append(f"print({MARK + name!r})")
        first[name] = len(cells)
        cells.extend(CASES[name][0])
    result = grade(make_submission(cells), "kernel")
    printed = dict(re.findall(rf"(?ms)^{re.escape(MARK)}(\S+)\n(.*?)(?=^{re.escape(MARK)}|\Z)",
                              result.output))
    problems = {name: [] for name in order}
    for cell in result.problem_cells:
        name = max((n for n in order if first[n] < cell.index), key=first.__getitem__)
        problems[name].append((cell.index - first[name], cell.status, cell.message))
    assert list(printed) == order
    for name in order:
        _, output, expected = CASES[name]
        assert (name, timings(printed[name])) == (name, output("kernel"))
        assert (name, problems[name]) == (name, expected)


def test_time_is_written_as_ipython_writes_it():
    assert [shell._duration(s) for s in (0, 5.84e-5, 1e-9, 0.0123, 1.5)] == [
        "0 ns", "58.4 µs", "1 ns", "12.3 ms", "1.5 s"]


def test_an_absent_part_of_jupyter_is_harmless():
    namespace: dict = {}
    stand_in = shell.ZMQInteractiveShell(namespace)
    kernel = stand_in.kernel
    assert kernel.session.session["x"] is not None and list(kernel) == [] and kernel
    assert kernel.do_shutdown(True) is None  # called from here, not from the notebook: silent
    with pytest.raises(AttributeError):
        kernel.__deepcopy__  # noqa: B018 - copy and pickle must see a plain object


def test_timeit_options_are_not_a_syntax_error(make_submission):
    """`%timeit -n 10 -r 2 ...` was a SyntaxError in the fast engine, and with --on-error stop
    the notebook scored 0 where Jupyter runs it (the review of #22)."""
    result = grade(make_submission(["import numpy as np\n%timeit -n 10 -r 2 np.ones(3)\n"
                                    "print('ran')"]), "fast")
    assert [c.status for c in result.problem_cells] == []
    assert result.output.endswith("per loop (mean ± std. dev. of 1 run, 1 loop each)\nran\n")


class Rich:
    """An object with every kind of rich repr a notebook's objects have."""

    def __repr__(self):
        return "Rich()"

    def _repr_html_(self):
        return "<i>rich</i>"

    def _repr_png_(self):
        return b"\x89PNG", {"width": 3}

    def _repr_latex_(self):
        raise ValueError("no LaTeX today")

    def _repr_markdown_(self):
        return None


class Bundled:
    def __repr__(self):  # a test id without an address: the same in every xdist worker
        return "Bundled()"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": "bundled", "application/x-own": 1}, {"application/x-own": {"a": 1}}


@pytest.mark.parametrize("obj", [7, "text", [1, 2], Rich(), Bundled()], ids=repr)
@pytest.mark.parametrize(("include", "exclude"), [(None, None), ({"text/plain"}, None),
                                                  (None, {"text/plain", "image/png"})])
def test_the_formatter_without_ipython_gives_ipythons_pair(obj, include, exclude, capsys):
    from IPython.core.formatters import DisplayFormatter

    ours = displays.mime_bundle(obj, include, exclude)
    said = capsys.readouterr().err
    assert ours == DisplayFormatter().format(obj, include=include, exclude=exclude)
    assert isinstance(ours, tuple) and len(ours) == 2
    # A method that fails is left out, and its error printed.
    assert ("ValueError: no LaTeX today" in said) == (isinstance(obj, Rich) and not include)


def test_the_stand_in_knows_ipythons_version_without_reading_metadata(tmp_path, monkeypatch):
    """The version that decides what the stand-in has is the installed IPython's, read from
    its release file: a zygote's start imports neither IPython nor `importlib.metadata` (a
    tenth of numpy's import, in every `grade run`)."""
    assert shell._ipython_major() == int(version("ipython").split(".")[0]) > 0
    code = ("import json, sys; import grader.sandbox.inside.startup; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('IPython', "
            "'importlib.metadata')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT)}, timeout=60, check=True)
    assert json.loads(done.stdout) == []
    (tmp_path / "IPython" / "core").mkdir(parents=True)
    (tmp_path / "IPython" / "core" / "release.py").write_text(
        "_version_minor = 1\n_version_major = 9\n")
    spec = importlib.machinery.ModuleSpec("IPython", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path / "IPython")]
    monkeypatch.setattr(shell.importlib.util, "find_spec", lambda name: spec)
    assert shell._ipython_major() == 9
    monkeypatch.setattr(shell.importlib.util, "find_spec", lambda name: None)
    assert shell._ipython_major() == 0
