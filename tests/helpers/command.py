"""The command line as a function (`grade` run in this process), and a master notebook for it."""

from __future__ import annotations

import io
import json
from pathlib import Path

from grader import cli


def run(*argv: str) -> tuple[int, str, str]:
    """Run `grade *argv` in this process: (exit code, standard output, standard error)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def write_master(path: Path, cells: list[tuple[str, str]], metadata: dict | None = None) -> Path:
    """A master notebook of (cell type, source) cells, with the outputs and execution counts
    a notebook saved from Jupyter has (which `grade assign` must clear)."""
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": metadata or {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "secret_note": "instructor only"},
        "cells": [{"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": source,
                   **({"outputs": [{"output_type": "stream", "name": "stdout",
                                    "text": "[0. 2.25 0.]\n"}], "execution_count": 3}
                      if kind == "code" else {})}
                  for i, (kind, source) in enumerate(cells)]}
    path.write_text(json.dumps(notebook))
    return path
