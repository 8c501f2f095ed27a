"""Grading one submission: load it (`loading`), run it in the sandbox and call each exercise
(`grading`), compare the outputs with the references (`compare`), name the mistake
(`diagnose`, `notebook_globals`, `hints`), decide what a student may see (`disclosure`),
score it (`scoring`, `combine`) and fingerprint it (`fingerprint`)."""
