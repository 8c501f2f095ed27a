"""Assignment declarations; each module defines `ASSIGNMENT` (see `grader.registry`)."""
