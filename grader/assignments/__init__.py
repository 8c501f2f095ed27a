"""Assignment declarations; each module defines `ASSIGNMENT` (see `grader.spec.registry`)."""
