"""Opening a gradebook's SQLite file from a test, to read or plant rows behind the grader."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path


@contextmanager
def opened(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to `path` in one transaction, committed and then closed on leaving.
    `with sqlite3.connect(...)` alone commits but never closes: the connection is left to the
    garbage collector, which from Python 3.13 on says so with a ResourceWarning that the
    suite's `filterwarnings = error` turns into a failure of whichever test collects it."""
    with closing(sqlite3.connect(path)) as db, db:
        yield db
