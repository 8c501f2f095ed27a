"""Where an assignment's files live: one folder laid out as this project is.

`DIR/exercises/` (what students get), `DIR/solutions/` (solutions and hidden references) and
the declaration with the public references: in `DIR/grader/assignments/` and
`DIR/grader/spec/public/` when DIR is this project, else in `DIR/assignments/` and
`DIR/references/`, which the environment variables of `environment()` name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.spec import references, registry


@dataclass(frozen=True)
class Layout:
    """The folders of one course's assignments."""

    root: Path
    """The folder that holds them all (`grade assign --out DIR`)."""

    @classmethod
    def current(cls) -> Layout:
        """The layout grading uses now: the folder above `solutions/` (`$GRADER_SOLUTIONS`)."""
        return cls(references.solutions_dir().resolve().parent)

    @property
    def is_project(self) -> bool:
        """Whether the root is this project, which keeps declarations in the package."""
        return (self.root / "grader" / "assignments" / "__init__.py").is_file()

    @property
    def exercises(self) -> Path:
        """The student's stubs: notebooks and modules."""
        return self.root / "exercises"

    @property
    def solutions(self) -> Path:
        """The reference solutions; hidden references in its `references/`."""
        return self.root / "solutions"

    @property
    def declarations(self) -> Path:
        """The declarations (`$GRADER_ASSIGNMENTS` outside the project)."""
        return self.root / ("grader/assignments" if self.is_project else "assignments")

    @property
    def public_references(self) -> Path:
        """The public references (`$GRADER_PUBLIC_REFERENCES` outside the project)."""
        return self.root / ("grader/spec/public" if self.is_project else "references")

    def declaration(self, name: str) -> Path:
        """The declaration file of an assignment."""
        return self.declarations / f"{name}.py"

    def solution(self, name: str) -> Path:
        """The solution module of an assignment."""
        return self.solutions / f"{name}.py"

    def hidden(self, name: str) -> Path:
        """The file of all references of an assignment."""
        return self.solutions / "references" / f"{name}.npz"

    def public(self, name: str) -> Path:
        """The file of the public references of an assignment."""
        return self.public_references / f"{name}.npz"

    def module(self, name: str) -> Path:
        """The student's module of stubs."""
        return self.exercises / f"{name}.py"

    def notebooks(self, name: str, parts: tuple[str, ...] = ()) -> tuple[Path, ...]:
        """The student's notebooks: the parts the exercises name, else `<name>.ipynb`."""
        return tuple(self.exercises / part for part in dict.fromkeys(parts or (f"{name}.ipynb",)))

    def environment(self) -> dict[str, str]:
        """The variables that make `grade` find these files (none for the project)."""
        if self.is_project:
            return {}
        return {registry.ENV_FOLDERS: str(self.declarations),
                references.ENV_SOLUTIONS: str(self.solutions),
                references.ENV_PUBLIC: str(self.public_references)}
