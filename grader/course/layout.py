"""Where an assignment's files live: one `Layout`, and the one place that reads it from the
environment.

A course folder DIR (`grade assign --out DIR`) holds `DIR/exercises/` (what students get),
`DIR/solutions/` (solutions, hidden references in its `references/`) and the declarations and
public references: in `DIR/grader/assignments/` and `DIR/grader/course/public/` when DIR is this
project, else in `DIR/assignments/` and `DIR/references/`. Grading finds them through the
`GRADER_*` variables below, read only by `Layout.from_environment`, which is read when asked
(never at import), and written back by `Layout.environment`. Gradescope's tree is
`/autograder` (`GRADER_AUTOGRADER_ROOT` moves it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""The `grader` package."""
PROJECT_DIR = PACKAGE_DIR.parent
"""The folder above it: this project, when the package is not installed."""
AUTOGRADER = Path("/autograder")
"""Where Gradescope unpacks the bundle and the submission."""

ENV_ASSIGNMENTS = "GRADER_ASSIGNMENTS"
ENV_SOLUTIONS = "GRADER_SOLUTIONS"
ENV_REFERENCES = "GRADER_REFERENCES"
ENV_PUBLIC = "GRADER_PUBLIC_REFERENCES"
ENV_AUTOGRADER = "GRADER_AUTOGRADER_ROOT"
VARIABLES = (ENV_ASSIGNMENTS, ENV_SOLUTIONS, ENV_REFERENCES, ENV_PUBLIC, ENV_AUTOGRADER)
"""Every variable that locates files, in the order `environment` writes them."""
CHECK_SUFFIX = ".check.npz"
"""How the check data `grade release` writes beside a released assignment is named:
`<assignment>.check.npz` (read by `checkfile`)."""

_DERIVED = cast(Path, None)  # a field left out is derived from `root` in __post_init__


@dataclass(frozen=True)
class Layout:
    """The folders of one course's assignments. `Layout(DIR)` is the course folder DIR laid
    out as `grade assign` writes it; a field given overrides what DIR implies."""

    root: Path
    """The course folder: the student's stubs are in its `exercises/`."""
    solutions: Path = _DERIVED
    """The reference solutions (`$GRADER_SOLUTIONS`); `root/solutions` unless given."""
    hidden_references: Path = _DERIVED
    """The folder of the hidden references (`$GRADER_REFERENCES`); `solutions/references`
    unless given."""
    public_references: Path = _DERIVED
    """The folder of the public references (`$GRADER_PUBLIC_REFERENCES`); unless given,
    `root/grader/course/public` for this project, else `root/references`."""
    declaration_folders: tuple[Path, ...] = cast(tuple[Path, ...], None)
    """The folders of declarations that the registry reads besides the package's
    (`$GRADER_ASSIGNMENTS`); unless given, none for this project, else `root/assignments`."""
    autograder: Path = AUTOGRADER
    """Gradescope's tree (`$GRADER_AUTOGRADER_ROOT`)."""

    def __post_init__(self) -> None:
        if self.solutions is None:
            object.__setattr__(self, "solutions", self.root / "solutions")
        if self.hidden_references is None:
            object.__setattr__(self, "hidden_references", self.solutions / "references")
        if self.public_references is None:
            object.__setattr__(self, "public_references", self.root / (
                "grader/course/public" if self.is_project else "references"))
        if self.declaration_folders is None:
            object.__setattr__(self, "declaration_folders",
                               () if self.is_project else (self.declarations,))

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Layout:
        """The layout that the `GRADER_*` variables of `env` (else of this process, read now)
        describe: unset, the project's. The one place that reads them."""
        env = os.environ if env is None else env
        solutions = Path(env.get(ENV_SOLUTIONS) or PROJECT_DIR / "solutions")
        folders = env.get(ENV_ASSIGNMENTS, "").split(os.pathsep)
        return cls(root=solutions.resolve().parent, solutions=solutions,
                   hidden_references=Path(env.get(ENV_REFERENCES) or solutions / "references"),
                   public_references=Path(env.get(ENV_PUBLIC) or PACKAGE_DIR / "course" / "public"),
                   declaration_folders=tuple(Path(folder) for folder in folders if folder),
                   autograder=Path(env.get(ENV_AUTOGRADER) or AUTOGRADER))

    @classmethod
    def current(cls) -> Layout:
        """The layout grading uses now (`from_environment`)."""
        return cls.from_environment()

    def environment(self) -> dict[str, str]:
        """The variables that make `grade` find these files, the inverse of `from_environment`
        (none for this project)."""
        defaults = {ENV_SOLUTIONS: PROJECT_DIR / "solutions",
                    ENV_REFERENCES: self.solutions / "references",
                    ENV_PUBLIC: PACKAGE_DIR / "course" / "public", ENV_AUTOGRADER: AUTOGRADER}
        values = {ENV_SOLUTIONS: self.solutions, ENV_REFERENCES: self.hidden_references,
                  ENV_PUBLIC: self.public_references, ENV_AUTOGRADER: self.autograder}
        written = {ENV_ASSIGNMENTS: os.pathsep.join(map(str, self.declaration_folders))}
        written.update((name, str(value)) for name, value in values.items()
                       if not _same(value, defaults[name]))
        return {name: value for name, value in written.items() if value}

    @property
    def is_project(self) -> bool:
        """Whether the root is this project, which keeps declarations in the package."""
        return (self.root / "grader" / "assignments" / "__init__.py").is_file()

    @property
    def exercises(self) -> Path:
        """The student's stubs: notebooks and modules."""
        return self.root / "exercises"

    @property
    def declarations(self) -> Path:
        """The folder where `grade assign` writes a declaration."""
        return self.root / ("grader/assignments" if self.is_project else "assignments")

    def declaration(self, name: str) -> Path:
        """The declaration file of an assignment."""
        return self.declarations / f"{name}.py"

    def solution(self, name: str) -> Path:
        """The solution module of an assignment."""
        return self.solutions / f"{name}.py"

    def hidden(self, name: str) -> Path:
        """The file of all references of an assignment."""
        return self.hidden_references / f"{name}.npz"

    def public(self, name: str) -> Path:
        """The file of the public references of an assignment."""
        return self.public_references / f"{name}.npz"

    def module(self, name: str) -> Path:
        """The student's module of stubs."""
        return self.exercises / f"{name}.py"

    def notebooks(self, name: str, parts: tuple[str, ...] = ()) -> tuple[Path, ...]:
        """The student's notebooks: the parts the exercises name, else `<name>.ipynb`."""
        return tuple(self.exercises / part for part in dict.fromkeys(parts or (f"{name}.ipynb",)))


def _same(path: Path, other: Path) -> bool:
    """Whether two paths name one folder (`grade assign --out .` in the project)."""
    return path == other or path.resolve() == other.resolve()
