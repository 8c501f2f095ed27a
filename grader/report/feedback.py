"""Feedback beside the student's code: their own notebook, outputs kept as handed in, with a
Markdown cell of the grader's after each exercise's defining cell (verdict, points, diagnosis,
mismatch or error, the report's heatmaps as attached SVG images) and after each cell that did
not simply run, as nbgrader's feedback notebooks do; the first cell links to each of them.
`annotate` makes the notebook (nbformat 4), `to_html` renders it through nbconvert with a
template of ours (`templates/nbconvert/feedback`): one page, no script, no network. Its math
is MathML made on the server (`mathml`), and an image it may not load (from the web) is
replaced by its text alternative.

What a feedback cell says comes from `feedback.md.j2`, with the reports' own rules: a hidden
check shows only what its message holds once `grader.pipeline.disclosure` has decided it,
failures are grouped by `render.failures`, untrusted text is escaped by `render.md_escape`.
"""

from __future__ import annotations

import base64
import copy
import html
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from grader import text
from grader.report import heatmap, mathml
from grader.report.render import environment, failures
from grader.results import CheckStatus, ExerciseResult, Result, ResultStatus

KEY = "grader"
"""The cell metadata key that marks a feedback cell: `{"grader": {"feedback": "passed" |
"failed", "exercises": [...]}}`; a student's own cell never keeps it."""
TAG = "grader-feedback"
"""The tag of a feedback cell, so that Jupyter can hide or find them."""

_ID = re.compile(r"[a-zA-Z0-9-_]{1,64}")
"""A cell id as nbformat 4.5 allows it."""
_TAGS = frozenset({"a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del",
                   "details", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6",
                   "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "samp", "span",
                   "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
                   "thead", "tr", "u", "ul"})
"""What a student's markdown or HTML output may keep in the page; any other tag (a script, a
style, a form, an iframe) is shown as text."""
_MATHML = frozenset({"math", "semantics", "annotation", "menclose", "merror", "mfenced",
                     "mfrac", "mi", "mmultiscripts", "mn", "mo", "mover", "mpadded", "mphantom",
                     "mprescripts", "mroot", "mrow", "ms", "mspace", "msqrt", "mstyle", "msub",
                     "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder",
                     "munderover", "none"})
"""MathML's presentation tags, which `mathml` writes for the notebook's TeX."""
_MATHML_ATTRIBUTES = frozenset({
    "xmlns", "display", "mathvariant", "stretchy", "fence", "separator", "separators",
    "accent", "accentunder", "lspace", "rspace", "columnalign", "rowalign", "columnspacing",
    "rowspacing", "columnlines", "rowlines", "frame", "width", "height", "depth",
    "linethickness", "minsize", "maxsize", "movablelimits", "symmetric", "largeop", "form",
    "notation", "open", "close", "scriptlevel", "displaystyle", "voffset", "bevelled",
    "encoding"})
"""Its attributes that draw: none holds an address or a script."""
_VERDICT = re.compile(r"grader-verdict grader-(passed|failed|error|missing|timeout|tip)")
"""The one class of the grader's own that its feedback cells may carry: a coloured verdict."""
_IMAGE = re.compile(r"<img\b([^>]*)>")
_ALT = re.compile(r'\balt="([^"]*)"')


def _attribute(tag: str, name: str, value: str) -> bool:
    """The attributes a student's HTML may keep: no event handler, no style, no class of the
    grader's own (a forged feedback cell), links to the web only, images from data only."""
    if tag in _MATHML:
        return name in _MATHML_ATTRIBUTES
    if name in ("id", "title", "alt"):
        return True
    if name == "class":
        return "grader" not in value
    if tag == "a" and name == "href":
        return not value.strip().lower().startswith("data:")
    if tag == "img" and name in ("width", "height"):
        return True
    if tag == "img" and name == "src":
        return value.strip().lower().startswith("data:image/")
    return tag in ("td", "th") and name in ("align", "colspan", "rowspan")


def clean(markup: str) -> str:
    """A student's HTML cut to an allow-list of tags and attributes (`_TAGS`, `_MATHML`,
    `_attribute`); an image the page may not load (any but data) is replaced by its text
    alternative, so that no broken image is drawn."""
    import bleach

    kept = bleach.clean(str(markup), tags=_TAGS | _MATHML, attributes=_attribute,
                        protocols={"http", "https", "mailto", "data"}, strip=False,
                        strip_comments=True)
    return _IMAGE.sub(_drawable, kept)


def clean_ours(markup: str) -> str:
    """A feedback cell's HTML: cleaned as a student's is (`clean`), with its verdicts'
    colours kept. Only the grader's own cells are rendered through it."""
    import bleach

    def attribute(tag: str, name: str, value: str) -> bool:
        if tag == "span" and name == "class":
            return _VERDICT.fullmatch(value) is not None
        return _attribute(tag, name, value)

    kept = bleach.clean(str(markup), tags=_TAGS, attributes=attribute, protocols={"data"},
                        strip=False, strip_comments=True)
    return _IMAGE.sub(_drawable, kept)


def _drawable(match: re.Match[str]) -> str:
    """An <img> that bleach kept: as it is when it is drawn from data, else its text
    alternative (an "Open in Colab" badge becomes the words "Open in Colab")."""
    attributes = match.group(1)
    if re.search(r'\bsrc="data:image/', attributes):
        return match.group(0)
    alt = _ALT.search(attributes)
    words = html.unescape(alt.group(1)) if alt else ""
    return f"<span>[{html.escape(words)}]</span>" if words else ""


def _verdict(exercises: list[ExerciseResult]) -> str:
    return "passed" if all(e.status is CheckStatus.PASSED for e in exercises) else "failed"


def _cell(source: str, minor: int, number: int, verdict: str, exercises: list[str],
          attachments: Mapping[str, str] | None = None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "markdown", "source": source.strip() + "\n",
                            "metadata": {KEY: {"feedback": verdict, "exercises": exercises,
                                               "anchor": _anchor(number)},
                                         "tags": [TAG]}}
    if attachments:  # SVG heatmaps, drawn by Jupyter and by the page alike
        cell["attachments"] = {name: {"image/svg+xml": base64.b64encode(
            svg.encode("utf-8")).decode("ascii")} for name, svg in attachments.items()}
    if minor >= 5:  # cell ids are part of nbformat 4.5, and invalid before it
        cell["id"] = f"grader-feedback-{number}"
    return cell


def _anchor(number: int) -> str:
    """The page's id of the feedback cell after cell `number`, which the first cell links."""
    return f"feedback-{number}"


def _pictures(result: Result, exercises: list[ExerciseResult], count: int
              ) -> tuple[dict[str, dict[str, list[tuple[str, str]]]], dict[str, str]]:
    """The heatmaps of the failures the cell shows, as the HTML report draws them: for each
    exercise and check, (attachment name, text alternative) of each; and each attachment's
    SVG. Names are numbered from `count`, unique within the notebook."""
    macros: Any = environment().get_template("heatmap.svg.j2").module
    draw = macros.draw
    shown: dict[str, dict[str, list[tuple[str, str]]]] = {}
    files: dict[str, str] = {}
    for exercise in exercises:
        for failure in failures(exercise, result.hidden_shown):
            for view in failure.check.views:
                for drawing in heatmap.pair(view):
                    name = f"heatmap-{count + len(files) + 1}.svg"
                    files[name] = str(draw(drawing, name.removesuffix(".svg")))
                    shown.setdefault(exercise.name, {}).setdefault(
                        failure.check.name, []).append((name, drawing.description))
    return shown, files


def _own(cell: Any) -> Any:
    """A student's cell, without the marks of a feedback cell."""
    if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict):
        metadata = cell["metadata"]
        metadata.pop(KEY, None)
        if isinstance(metadata.get("tags"), list):
            metadata["tags"] = [tag for tag in metadata["tags"] if tag != TAG]
    return cell


def annotate(result: Result, notebook: Mapping[str, Any], defined: Mapping[str, int],
             file: str = "") -> dict[str, Any]:
    """`notebook` (nbformat 4, as `grader.pipeline.notebooks.read` gives it) with the
    feedback cells of `result`: a summary first, then one after each cell that defines an
    exercise (`defined`: exercise name -> 1-based cell position) or did not simply run, and
    one at the end for exercises no cell defines. When the result combines several files,
    `file` is this notebook's name in it: only its exercises and cells are spoken of here."""
    result = text.clean_fields(result)
    macros: Any = environment().get_template("feedback.md.j2").module
    annotated = copy.deepcopy(dict(notebook))
    cells = [_own(cell) for cell in annotated.get("cells", [])]
    minor = annotated.get("nbformat_minor", 0)
    minor = minor if isinstance(minor, int) else 0
    mine = [e for e in result.exercises if (not result.files or e.file == file) and e.handed_in]
    problems = {c.index: c for c in result.problem_cells if not result.files or c.file == file}
    after: dict[int, list[ExerciseResult]] = {}
    nowhere = []
    graded = result.status is ResultStatus.GRADED
    for exercise in mine if graded else []:
        position = defined.get(exercise.name, 0)
        if 0 < position <= len(cells):
            after.setdefault(position, []).append(exercise)
        else:
            nowhere.append(exercise)
    anchors = {e.name: _anchor(position) for position, here in after.items() for e in here}
    anchors.update((e.name, _anchor(len(cells) + 1)) for e in nowhere)
    out = [_cell(macros.head(result, bool(after), anchors), minor, 0, "summary", [])]
    drawn = 0
    for position, cell in enumerate(cells, start=1):
        out.append(cell)
        here = after.get(position, [])
        problem = problems.get(position) if graded else None
        if not (here or problem):
            continue
        pictures, files = _pictures(result, here, drawn)
        drawn += len(files)
        parts = [macros.exercise(result, e, pictures.get(e.name, {})) for e in here]
        if problem is not None:
            parts.append(macros.cell(problem))
        verdict = "failed" if problem is not None else _verdict(here)
        out.append(_cell("\n\n".join(parts), minor, position, verdict, [e.name for e in here],
                         files))
    if nowhere:
        pictures, files = _pictures(result, nowhere, drawn)
        parts = [macros.missing(), *(macros.exercise(result, e, pictures.get(e.name, {}))
                                     for e in nowhere)]
        out.append(_cell("\n\n".join(parts), minor, len(cells) + 1, _verdict(nowhere),
                         [e.name for e in nowhere], files))
    if minor >= 5:
        _ids(out)
    annotated["cells"] = out
    return annotated


def _ids(cells: list[Any]) -> None:
    """Give a cell without a valid id one (nbformat 4.5 requires them; Jupyter adds them when
    it saves, a notebook made by hand may lack them), and a repeated id a fresh one."""
    seen: set[str] = set()
    for number, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        given = cell.get("id")
        if not (isinstance(given, str) and _ID.fullmatch(given)) or given in seen:
            given = f"cell-{number}"
            while given in seen:
                given += "-"
            cell["id"] = given
        seen.add(given)


def _for_page(notebook: Mapping[str, Any], title: str) -> dict[str, Any]:
    """The notebook as the page shows it, titled `title`: no output drawn from a file or an
    address (an output's `svg_filename` or `metadata.filenames`), only from its own data."""
    shown = copy.deepcopy(dict(notebook))
    if not isinstance(shown.get("metadata"), dict):
        shown["metadata"] = {}
    shown["metadata"]["title"] = title
    for cell in shown.get("cells", []):
        for output in cell.get("outputs", []) if isinstance(cell, dict) else []:
            if isinstance(output, dict):
                output.pop("svg_filename", None)
                if isinstance(output.get("metadata"), dict):
                    output["metadata"].pop("filenames", None)
    return shown


def to_html(notebook: Mapping[str, Any], title: str = "Feedback") -> str:
    """The annotated notebook as one HTML page titled `title`, through nbconvert and our
    template."""
    # Imported here: nbconvert costs about half a second, and only --feedback needs it.
    import nbformat
    from nbconvert import HTMLExporter
    from nbformat.v4.rwbase import rejoin_lines

    folder = resources.files("grader") / "templates" / "nbconvert"
    exporter = HTMLExporter(template_name="feedback", extra_template_basedirs=[str(folder)],
                            theme="light", sanitize_html=False)
    exporter.register_filter("feedback_clean", clean)
    exporter.register_filter("feedback_ours", clean_ours)
    exporter.register_filter("feedback_math", mathml.render)
    page, _ = exporter.from_notebook_node(
        rejoin_lines(nbformat.from_dict(_for_page(notebook, text.clean(title)))))
    return page
