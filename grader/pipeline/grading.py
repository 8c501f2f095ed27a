"""The grading pipeline: load -> execute in the sandbox -> compare -> score -> `Result`.

This is the only module that drives all stages; each stage imports only the data model and
the stages before it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.course import references, registry
from grader.errors import (
    GraderError,
    IsolationError,
    SpecError,
    SubmissionError,
    UsageError,
)
from grader.model import Assignment, Visibility
from grader.pipeline import (
    checking,
    combine,
    disclosure,
    fingerprint,
    hints,
    loading,
    missing,
    notebook_globals,
    notebooks,
    owncode,
    scoring,
    submissions,
    vocabulary,
)
from grader.results import (
    CellResult,
    Result,
    ResultStatus,
)
from grader.sandbox import isolation
from grader.sandbox.config import SandboxConfig
from grader.sandbox.limits import Engine, Limits, OnError
from grader.sandbox.session import Session
from grader.sandbox.zygote import Zygotes
from grader.submission import Submission


@dataclass(frozen=True)
class Options:
    """How to grade."""

    limits: Limits = field(default_factory=Limits)
    """Time, memory, output and size limits of the student's code (a `grade` flag each)."""
    on_error: OnError = OnError.STATEMENT
    """What follows a failing statement (`--on-error`); passed on to the sandbox."""
    engine: Engine = Engine.FAST
    """How the submission's worker is started (`--engine`); passed on to the sandbox."""
    public_only: bool = False
    """Grade the public cases only, against the references shipped in the package."""
    require_namespaces: bool = False
    """Refuse to grade where Linux namespaces are not available (`--require-namespaces`)."""
    closed: tuple[isolation.Closed, ...] = ()
    """More paths the grader holds, besides those of the assignment and the submission (a
    batch's output folder, the Gradescope tree): where there are no namespaces, the worker's
    user must be unable to open them."""
    clock: disclosure.Clock = disclosure.wall_clock
    """Now, to tell whether the assignment's `show_hidden_after` has passed (tests pass
    their own)."""
    zygotes: Zygotes | None = field(default=None, compare=False, repr=False)
    """The warm interpreters of the command that grades (`zygote.Zygotes`, `--engine fast`);
    with None, each grading starts its own and stops it when it is done."""
    fork_every_call: bool = False
    """Every call in a fork of its own, never in a shared call process (the tests' yardstick
    for `call_process`; no flag sets it)."""


def failed_result(assignment: Assignment, submission: str, error: str,
                  duration_s: float = 0.0, **fields: object) -> Result:
    """The result of a submission that could not be graded at all."""
    return Result(assignment=assignment.name, submission=submission, status=ResultStatus.ERROR,
                  score=0.0, max_score=assignment.max_score, duration_s=round(duration_s, 3),
                  error=error, **fields)  # type: ignore[arg-type]


def infer_assignment(path: Path, explicit: str | None = None,
                     limits: Limits | None = None,
                     known: Collection[str] | None = None) -> str | None:
    """The assignment of a submission: explicit, else notebook metadata, else its file name;
    one of `known` (by default the registry's: `grade check` adds those released beside it).

    The notebook is read as loading reads it: never through a link, never past the size limit.
    """
    if explicit:
        return explicit
    names = registry.assignments().keys() if known is None else known
    if path.suffix == ".ipynb":
        limit = int((limits or Limits()).submission_mb * (1 << 20))
        try:
            text = submissions.read_bytes(path, limit).decode("utf-8-sig")
            notebook = notebooks.read(str(path), text)
            name = notebooks.metadata_assignment(notebook.get("metadata"))
            if name in names:
                return name
        except (OSError, ValueError, SubmissionError):
            pass  # the file's own grading says what is wrong with it
    matches = [name for name in names if name in path.name]
    return max(matches, key=len) if matches else None


def ready(assignment: Assignment, options: Options,
          given: references.References | None = None) -> references.References:
    """Everything grading needs from the instructor, checked once before any submission:
    the references (present, complete, fresh; or `given`, a release's check data) and every
    case's inputs. An instructor's mistake raises one GraderError naming the file and the fix."""
    offer = isolation.offered()
    if options.require_namespaces and not offer.namespaces:
        raise IsolationError(f"refusing to grade: --require-namespaces was given, and Linux "
                             f"namespaces are not available here ({offer.reason}); run `grade "
                             "doctor` to see what to change, or leave the option out to grade "
                             "with the isolation this machine gives")
    stored = given or references.ready(assignment, public_only=options.public_only)
    for exercise in assignment.exercises:
        for case in exercise.cases:
            try:
                case.inputs()
            except Exception as exc:
                raise SpecError(f"{assignment.name}: the inputs of {exercise.name}/{case.name} "
                                f"cannot be made ({type(exc).__name__}: {exc}); fix its "
                                "declaration") from None
    return stored


def grade(path: Path, assignment: Assignment, options: Options | None = None,
          stored: references.References | None = None) -> Result:
    """Grade one submission file. A student's mistake is data in the result, never raised.

    `stored` is what `ready` returned, for a batch that checks it once.
    """
    options = options or Options()
    if stored is None:
        stored = ready(assignment, options)
    with _zygotes(options) as options:
        return _grade(path, assignment, options, stored)


def _zygotes(options: Options) -> contextlib.AbstractContextManager[Options]:
    """`options` with the command's zygotes, or with zygotes of their own, stopped on leaving
    (a grading that no command gave any: a test, the release's check)."""
    if options.zygotes is not None or options.engine is not Engine.FAST:
        return contextlib.nullcontext(options)
    return _own_zygotes(options)


@contextlib.contextmanager
def _own_zygotes(options: Options) -> Iterator[Options]:
    with Zygotes() as zygotes:
        yield replace(options, zygotes=zygotes)


def _grade(path: Path, assignment: Assignment, options: Options,
           stored: references.References) -> Result:
    started = time.monotonic()
    try:
        submission = loading.load(path, options.limits, assignment.name)
    except SubmissionError as exc:
        return failed_result(assignment, str(path), exc.message, time.monotonic() - started,
                             public_only=options.public_only)
    session = _session(submission, assignment, options, started)
    try:
        with session:
            cells = _located(session.run(submission), submission)
            names = [exercise.name for exercise in assignment.exercises]
            statements = notebook_globals.top_level(submission)  # parsed once for both
            reads = notebook_globals.globals_read(submission, names, statements=statements)
            prints = fingerprint.fingerprints(submission, names)
            written = notebook_globals.numbers_written(submission, names, statements=statements)
            calls = checking.grade_calls(session, assignment, stored, options.public_only, reads,
                                         written, statements)
            blamed = {} if options.public_only else owncode.blame(session, assignment, calls,
                                                                  stored, statements)
            exercises = tuple(vocabulary.close(result, exercise) for result, exercise in zip(
                missing.explain([replace(owncode.attribute(
                    checking.exercise_result(exercise, calls), exercise, blamed,
                    assignment.credit), fingerprint=prints[exercise.name])
                                 for exercise in assignment.exercises], submission, cells,
                                {e.name: e.notebook for e in assignment.exercises}),
                assignment.exercises, strict=True))
            output, hidden_output = checking.outputs(session.captured_output(), calls,
                                                     options.limits.output_bytes,
                                                     session.late_output())
    except GraderError:
        raise
    except Exception as exc:  # our bug: this submission gets an error, the batch goes on
        # The exception's message may hold what a hidden call returned: the instructor's.
        return failed_result(assignment, str(path),
                             f"{path}: the grader failed ({type(exc).__name__}); grade it "
                             "again, and report this if it repeats",
                             time.monotonic() - started, public_only=options.public_only,
                             sha256=submission.sha256, grader_failed=True,
                             hidden_output=f"the grader failed: {type(exc).__name__}: {exc}")
    score, max_score = scoring.total(exercises)
    result = Result(assignment=assignment.name, submission=str(path), status=ResultStatus.GRADED,
                    score=score, max_score=max_score,
                    duration_s=round(time.monotonic() - started, 3), cells=cells,
                    exercises=exercises, isolation=session.isolation, output=output,
                    hidden_output=hidden_output, worker=session.worker.value,
                    public_only=options.public_only, sha256=submission.sha256)
    return disclosure.disclose(result, assignment, options.clock())


def grade_files(paths: Sequence[Path], assignment: Assignment, options: Options | None = None,
                stored: references.References | None = None, *,
                recorded: Sequence[tuple[str, str]] = (),
                copies: Sequence[Path] = (), keep_going: bool = False) -> Result:
    """Grade one student's files for one assignment (one file, or the book's two notebooks):
    each file on its own, then each exercise from the file where it scores best. The one way
    a student's work is graded: `grade run`, a batch (in a thread or on a Dask worker) and
    Gradescope all come here.

    `recorded` is the (name, hash) each file is recorded under (a batch: its path under the
    submissions folder and the hash it saw, so that a rerun recognises it); `copies` are where
    a Dask worker wrote the files' bytes, graded in their place. A file the grader fails on
    (a bug of ours) is that file's error in the result, never an exception that loses the
    others. An error of the `GraderError` tree (a sandbox that cannot be had, a missing
    reference) stops the command with its message, except with `keep_going` (a batch: that
    file is graded again next time); IsolationError always does.
    """
    options = options or Options()
    if stored is None:
        stored = ready(assignment, options)
    results = []
    with _zygotes(options) as options:  # one zygote for every file
        for index, path in enumerate(paths):
            graded = copies[index] if copies else path
            try:
                result = grade(graded, assignment, options, stored)
            except Exception as exc:
                if isinstance(exc, IsolationError) or (
                        isinstance(exc, GraderError) and not keep_going):
                    raise  # the machine's or the instructor's problem, not the submission's
                result = failed_result(assignment, str(path),
                                       f"{path}: could not be graded ({exc})",
                                       public_only=options.public_only, grader_failed=True)
            if result.error and graded != path:
                result = replace(result, error=result.error.replace(str(graded), str(path)))
            if recorded:
                name, sha256 = recorded[index]
                result = replace(result, submission=name, sha256=sha256)
            results.append(result)
    return combine.best_of(assignment, results)


def _located(results: tuple[CellResult, ...], submission: Submission
             ) -> tuple[CellResult, ...]:
    """The cells' results with the numbers Jupyter shows for them (among the code cells, and
    the `In [n]` the notebook was saved with), and the hints a failure needs."""
    cells = {cell.index: cell for cell in submission.cells}
    located = []
    for result in results:
        cell = cells.get(result.index)
        if cell is not None:
            number = cell.number if submission.kind == "notebook" else 0
            result = replace(result, number=number, execution_count=cell.execution_count)
        located.append(hints.explain(result))
    return tuple(located)


WARM = {"matplotlib": "matplotlib.pyplot"}
"""What the zygote imports for a submission that imports the package: pyplot costs about
300 ms, which each such submission would otherwise pay in its own cells (the book's notebooks
and most seeds import it). Submissions that import none of these share the plain zygote."""


def preload(submission: Submission, assignment: Assignment) -> tuple[str, ...]:
    """The modules imported before the submission's first statement: the assignment's
    `requires`, and what `WARM` names for the packages that the submission imports."""
    warm = sorted(WARM[name] for name in submission.imports & WARM.keys())
    return assignment.requires + tuple(m for m in warm if m not in assignment.requires)


def _session(submission: Submission, assignment: Assignment, options: Options,
             started: float) -> Session:
    try:
        config = SandboxConfig(
            limits=options.limits, preload=preload(submission, assignment),
            module_name="__main__" if submission.kind == "notebook" else "submission",
            on_error=options.on_error, engine=options.engine,
            watch=tuple(exercise.name for exercise in assignment.exercises),
            closed=closed(assignment, Path(submission.path), options), zygotes=options.zygotes,
            fork_every_call=options.fork_every_call,
            call_groups=(Visibility.PUBLIC.value,) if options.public_only
            else tuple(v.value for v in Visibility))
    except ValueError as exc:
        raise UsageError(f"{exc}; use --engine {'|'.join(e.value for e in Engine)} and "
                         f"--on-error {'|'.join(o.value for o in OnError)}") from None
    return Session(config, started)


def closed(assignment: Assignment, path: Path, options: Options
           ) -> tuple[isolation.Closed, ...]:
    """What the grader holds while it grades `path`, which the worker's user must not open
    where there are no namespaces: the hidden references (already in memory), the
    solutions, the grader's project folder (unless it is an installed package, which
    students have too), the folder of the submission (other students' work may be beside
    it) and `options.closed`."""
    held = [isolation.Closed(str(references.hidden_path(assignment.name).parent),
                             "the hidden references"),
            isolation.Closed(str(references.solutions_dir()), "the solutions"),
            isolation.Closed(str(path.resolve().parent), "the folder of the submission, "
                             "where other students' work may be")]
    if not isolation.installed():
        held.append(isolation.Closed(str(isolation.PACKAGE_PARENT),
                                     "the grader's project folder"))
    held += options.closed
    return tuple(dict.fromkeys(held))
