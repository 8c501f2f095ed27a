"""Submissions as the platforms hand them over: a Canvas, Moodle or Gradescope download (zip
or folder) or a folder of cloned Git repositories, unpacked safely (`archives`), recognised
(`recognise`) and read into one `Handed` per student (`canvas`, `moodle`, `gradescope`,
`git`)."""

from grader.ingest.handed import Handed, Read

__all__ = ["Handed", "Read"]
