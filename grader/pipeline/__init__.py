"""Grading one submission, stage by stage (`grading` drives them, in this order):

- found (`submissions`) and loaded (`loading`: `notebooks` reads a notebook's JSON,
  `ipython_syntax` turns magics into Python);
- run in the sandbox, each exercise called on each case (`checking`);
- compared with the reference and the mistake named (`judging`, `compare`, `diagnose`,
  `notebook_globals`; `hints` for cell errors the environment causes);
- what a student may see decided (`disclosure`), scored (`scoring`; `combine` for several
  files of one student) and fingerprinted (`fingerprint`).
"""
