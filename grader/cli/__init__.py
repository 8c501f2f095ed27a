"""The `grade` command.

- `parser`: the one argument parser (every limit's flag from the fields of `Limits`), and the
  exceptions that end a parse (`--help`, `--version`, a usage error); it imports nothing heavy.
  `class_arguments`: the arguments the class's commands share (roster, time policy, times,
  similarity, override and log).
- `app`: the one exit point, `run(argv, out, err)`: parse, run, print errors, exit codes.
- One module per command noun: `grade_commands` (`run`, `check`), `batch_command` (`batch`),
  `gradebook_commands` (`gradebook export`, `override`, `log`, `report` and `similar`),
  `gradescope_commands` (`gradescope build` and `run`), `serve_command` (`serve`), and
  `author_commands` (`list`, `assign`, `release`, `validate`, `references` and `doctor`).
- `output`: writing the files a command was asked for.
- `serve_command`: `grade serve`, a warm grader; `served`: where it listens, and the client
  side that hands `grade run` and `grade check` to it when it runs.

`entry` is the console script: it hands the command to a running `grade serve` when there is
one; else it starts the fork server, when the command needs it, between the parse and the
import of the command's modules.
"""

from grader.cli.app import run
from grader.cli.entry import main
from grader.cli.parser import build_parser, parse

__all__ = ["build_parser", "main", "parse", "run"]
