"""`python -m grader` runs the `grade` command."""

from grader.entry import main

main()
