"""The grades written out, one small dialect per platform: plain CSV (`plain`), Canvas's
gradebook import (`canvas`) and Moodle's (`moodle`). `formats` lists them (the one list of
`grade gradebook export --format`); `files` writes the table in the dialect asked for, each
student's grade page, and the memory of the last export that a dry run compares against.
"""
