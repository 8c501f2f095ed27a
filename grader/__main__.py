"""`python -m grader` runs the `grade` command."""

from grader.cli.entry import main

main()
