"""IPython's display functions outside a kernel: as in a notebook whose outputs nobody looks at.

`display()`, `clear_output()` and `update_display()` show nothing, and `display` returns the
handle IPython returns. `quiet_ipython` makes IPython's own functions these, now or as soon
as student code imports IPython; the fast engine's worker puts `display` in the namespace.
`DisplayFormatter` is `get_ipython().display_formatter`: it turns an object into IPython's
`(data, metadata)` pair, which notebooks then publish themselves.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from grader.sandbox.inside.import_hooks import patch_on_import

DISPLAY_MODULE = "IPython.core.display_functions"
FORMATTERS_MODULE = "IPython.core.formatters"
REPR_METHODS = (
    ("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"),
    ("application/pdf", "_repr_pdf_"), ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"), ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"))
"""The MIME types IPython's formatter asks an object for besides text/plain, with the method
it asks, in IPython's order."""
Bundle = tuple[dict[str, Any], dict[str, Any]]


class DisplayHandle:
    """What `display(obj, display_id=...)` returns in IPython; here it shows nothing."""

    def __init__(self, display_id: str | None = None) -> None:
        self.display_id = display_id or os.urandom(16).hex()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} display_id={self.display_id}>"

    def display(self, obj: Any, **kwargs: Any) -> None:
        """Show `obj` again under this handle's id: nothing to show here."""

    def update(self, obj: Any, **kwargs: Any) -> None:
        """Replace what this handle shows: nothing to replace here."""


def display(*objs: Any, display_id: Any = None, **kwargs: Any) -> DisplayHandle | None:
    """IPython's `display`, showing nothing: a handle when a display id is asked for (True
    makes a new one), else None, as IPython returns."""
    if not display_id:
        return None
    return DisplayHandle(None if display_id is True else str(display_id))


def _show_nothing(*args: Any, **kwargs: Any) -> None:
    """IPython's `clear_output` and `update_display`: nothing is shown, nothing to change."""


def _quiet(module: Any) -> None:
    """Make IPython's display functions the worker's. Outside a kernel IPython's own print
    their objects (and terminal escapes), and `display` returns None even for a display id."""
    module.display = display
    module.clear_output = module.update_display = _show_nothing
    module.DisplayHandle = DisplayHandle


def quiet_ipython() -> None:
    """Make IPython's display functions quiet, now or when they are imported.
    `IPython.display` and `IPython.core.display` take their names from that module, so every
    way of importing `display`, `clear_output` or `update_display` gets the worker's."""
    patch_on_import(DISPLAY_MODULE, _quiet)


class DisplayFormatter:
    """`get_ipython().display_formatter`: `format(obj)` returns IPython's pair, a dict of MIME
    type to data and a dict of MIME type to metadata. When IPython is already imported (the
    notebook imported it, or asked the shell about a part only ipykernel knows), it is IPython's
    own formatter that answers; the worker never imports IPython itself, and without it the
    object's own `_repr_*_` methods and `repr()` give the pair."""

    def __init__(self) -> None:
        self._ipython: Any = None

    def format(self, obj: Any, include: Any = None, exclude: Any = None) -> Bundle:
        """IPython's `DisplayFormatter.format`: `include` and `exclude` name MIME types."""
        module = sys.modules.get(FORMATTERS_MODULE)
        if module is not None:
            if self._ipython is None:
                self._ipython = module.DisplayFormatter()
            data, metadata = self._ipython.format(obj, include=include, exclude=exclude)
            return data, metadata
        return mime_bundle(obj, include, exclude)


def mime_bundle(obj: Any, include: Any = None, exclude: Any = None) -> Bundle:
    """IPython's pair without IPython: what an object shows itself (`_ipython_display_`, then
    nothing), else its `_repr_mimebundle_`, each `_repr_*_` method and `repr()` as text/plain.
    A method that fails is left out with its traceback printed, as IPython leaves it out."""
    if callable(getattr(obj, "_ipython_display_", None)):
        obj._ipython_display_()
        return {}, {}
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    bundle = _ask(obj, "_repr_mimebundle_", include=include, exclude=exclude)
    if isinstance(bundle, tuple) and len(bundle) == 2:
        bundle, metadata = bundle
    data.update(bundle if isinstance(bundle, dict) else {})
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    for mime, method in (("text/plain", "__repr__"), *REPR_METHODS):
        if mime in data or not _wanted(mime, include, exclude):
            continue
        shown = _ask(obj, method) if method != "__repr__" else repr(obj)
        if isinstance(shown, tuple) and len(shown) == 2:
            shown, metadata[mime] = shown
        if shown is not None:
            data[mime] = shown
    return ({mime: v for mime, v in data.items() if _wanted(mime, include, exclude)},
            {mime: v for mime, v in metadata.items() if _wanted(mime, include, exclude)})


def _wanted(mime: str, include: Any, exclude: Any) -> bool:
    return (not include or mime in include) and not (exclude and mime in exclude)


def _ask(obj: Any, method: str, **kwargs: Any) -> Any:
    """`obj.method(**kwargs)`, or None when it has no such method or the method fails."""
    function = getattr(obj, method, None)
    if not callable(function):
        return None
    try:
        return function(**kwargs)
    except Exception:
        traceback.print_exc()
        return None
