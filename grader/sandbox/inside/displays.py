"""IPython's display functions outside a kernel: as in a notebook whose outputs nobody looks at.

`display()`, `clear_output()` and `update_display()` show nothing, and `display` returns the
handle IPython returns. `quiet_ipython` makes IPython's own functions these, now or as soon
as student code imports IPython; the fast engine's worker puts `display` in the namespace.
"""

from __future__ import annotations

import os
from typing import Any

from grader.sandbox.inside.import_hooks import patch_on_import

DISPLAY_MODULE = "IPython.core.display_functions"


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
