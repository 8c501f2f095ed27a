"""Grading on Gradescope: `grade gradescope build` writes the autograder bundle, and `grade
gradescope run` grades inside it (`autograder`)."""
