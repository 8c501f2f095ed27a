"""The `grade` command.

- `parser`: the one argument parser (every limit's flag from the fields of `Limits`), and the
  exceptions that end a parse (`--help`, `--version`, a usage error); it imports nothing heavy.
- `app`: the one exit point, `run(argv, out, err)`: parse, run, print errors, exit codes.
- `grade`: `run`, `check` and `batch`; `classwork`: `gradebook` and `gradescope`;
  `authoring`: `list`, `assign`, `release`, `validate`, `references` and `doctor`.
- `output`: writing the files a command was asked for.

`grader.entry` is the console script: it starts the fork server, when the command needs it,
between the parse and the import of the command's modules.
"""

from grader.cli.app import run
from grader.cli.parser import build_parser, parse
from grader.entry import main

__all__ = ["build_parser", "main", "parse", "run"]
