"""The term's grades: what a student's final grade is, and where it goes.

The raw scores come from the gradebook; on top of them, at every export, the class `roster`
(who should have handed in, under which platform ids), the time `policy` (deadlines,
extensions and the late penalty), the `overrides` given by hand, and the final `grades` that
result. `exports` writes them for a platform's gradebook import, one dialect per platform.
Nothing here is stored in the raw score: change the policy, export again.
"""
