"""The gradebook: the SQLite file in a batch's output folder that records every result the
moment it is graded (`store`), with who each downloaded student is (`identities`) and where
each batch read its submissions (`origins`).

Everything the class's side knows of grading comes from here, and comes back typed: a
recorded `Row` with its `Result`, read back from its JSON by `grader.result_json`. Nothing
above the gradebook reads a result's JSON.
"""

from grader.gradebook.store import (
    FILENAME,
    Gradebook,
    Recorded,
    Row,
    best,
    best_of,
    existing,
)

__all__ = ["FILENAME", "Gradebook", "Recorded", "Row", "best", "best_of", "existing"]
