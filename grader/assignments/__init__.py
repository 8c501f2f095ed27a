"""Assignment declarations; each module defines `ASSIGNMENT` (see `grader.course.registry`)."""
