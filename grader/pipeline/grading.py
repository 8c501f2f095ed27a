"""The grading pipeline: load -> execute in the sandbox -> compare -> score -> `Result`.

This is the only module that drives all stages; each stage imports only the data model and
the stages before it.
"""

from __future__ import annotations

import builtins
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from grader.errors import GraderError, IsolationError, SpecError, SubmissionError, UsageError
from grader.model import Assignment, Case, Exercise, Inputs, Visibility
from grader.pipeline import (
    combine,
    compare,
    diagnose,
    disclosure,
    fingerprint,
    hints,
    loading,
    notebook_globals,
    scoring,
    submissions,
)
from grader.results import (
    CellResult,
    CheckResult,
    CheckStatus,
    Diagnosis,
    ExerciseResult,
    Result,
    ResultStatus,
)
from grader.sandbox import isolation, zygote
from grader.sandbox.limits import Limits, cap
from grader.sandbox.session import NOT_IMPLEMENTED, Engine, OnError, SandboxConfig, Session
from grader.spec import references, registry
from grader.submission import Submission

REPLY_FLOOR = 1 << 20
REPLY_FACTOR = 16
LATE = ("passes right after the cell that defines it, but not at the end of the notebook: a "
        "later cell changes something it uses")


@dataclass(frozen=True)
class Options:
    """How to grade."""

    limits: Limits = field(default_factory=Limits)
    """Time, memory and output limits of the student's code."""
    on_error: OnError = OnError.STATEMENT
    """After a failing statement: go on ("statement"), skip the rest of the cell ("cell", as
    when cells are run one by one in Jupyter) or stop everything ("stop", as Run All does)."""
    engine: Engine = Engine.FAST
    """"fast" (each submission's worker is a fork of a warm zygote interpreter, or a fresh
    interpreter where no zygote can be had; the cells run in it, and each call of an exercise
    runs in a fork of it), "fresh" (a fresh interpreter per submission) or "kernel" (a real
    Jupyter kernel through nbclient)."""
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


def failed_result(assignment: Assignment, submission: str, error: str,
                  duration_s: float = 0.0, **fields: object) -> Result:
    """The result of a submission that could not be graded at all."""
    return Result(assignment=assignment.name, submission=submission, status=ResultStatus.ERROR,
                  score=0.0, max_score=assignment.max_score, duration_s=round(duration_s, 3),
                  error=error, **fields)  # type: ignore[arg-type]


def infer_assignment(path: Path, explicit: str | None = None,
                     limits: Limits | None = None) -> str | None:
    """The assignment of a submission: explicit, else notebook metadata, else its file name.

    The notebook is read as loading reads it: never through a link, never past the size limit.
    """
    if explicit:
        return explicit
    if path.suffix == ".ipynb":
        limit = int((limits or Limits()).submission_mb * (1 << 20))
        try:
            name = loading.metadata_assignment(
                json.loads(submissions.read_bytes(path, limit)).get("metadata"))
            if name in registry.assignments():
                return name
        except (OSError, ValueError, AttributeError, RecursionError):
            pass
    matches = [name for name in registry.assignments() if name in path.name]
    return max(matches, key=len) if matches else None


def ready(assignment: Assignment, options: Options) -> references.References:
    """Everything grading needs from the instructor, checked once before any submission:
    the references (present, complete, fresh) and every case's inputs. An instructor's
    mistake raises one GraderError naming the file and the fix."""
    offer = isolation.offered()
    if options.require_namespaces and not offer.namespaces:
        raise IsolationError(f"refusing to grade: --require-namespaces was given, and Linux "
                             f"namespaces are not available here ({offer.reason}); run `grade "
                             "doctor` to see what to change, or leave the option out to grade "
                             "with the isolation this machine gives")
    stored = references.ready(assignment, public_only=options.public_only)
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
    started = time.monotonic()
    try:
        submission = loading.load(path, options.limits, assignment.name)
    except SubmissionError as exc:
        return failed_result(assignment, str(path), exc.message, time.monotonic() - started,
                             public_only=options.public_only)
    session = _session(submission, assignment, options, started)
    try:
        with zygote.kept(), session:
            cells = _located(session.run(submission), submission)
            names = [exercise.name for exercise in assignment.exercises]
            reads = notebook_globals.globals_read(submission, names)
            prints = fingerprint.fingerprints(submission, names)
            calls = _grade_calls(session, assignment, stored, options.public_only, reads)
            exercises = tuple(
                replace(_exercise_result(exercise, calls), fingerprint=prints[exercise.name])
                for exercise in assignment.exercises)
            output, hidden_output = _outputs(session.captured_output(), calls,
                                             options.limits.output_bytes)
    except GraderError:
        raise
    except Exception as exc:  # our bug: this submission gets an error, the batch goes on
        return failed_result(assignment, str(path),
                             f"{path}: the grader failed ({type(exc).__name__}: {exc}); "
                             "grade it again, and report this if it repeats",
                             time.monotonic() - started, public_only=options.public_only,
                             sha256=submission.sha256, grader_failed=True)
    score, max_score = scoring.total(exercises)
    result = Result(assignment=assignment.name, submission=str(path), status=ResultStatus.GRADED,
                    score=score, max_score=max_score,
                    duration_s=round(time.monotonic() - started, 3), cells=cells,
                    exercises=exercises, isolation=session.isolation, output=output,
                    hidden_output=hidden_output, worker=session.worker.value,
                    public_only=options.public_only, sha256=submission.sha256)
    return disclosure.disclose(result, assignment, options.clock())


def grade_files(paths: Sequence[Path], assignment: Assignment, options: Options | None = None,
                stored: references.References | None = None) -> Result:
    """Grade one student's files for one assignment (the book's two notebooks, say): each
    file on its own, then each exercise from the file where it scores best."""
    options = options or Options()
    if stored is None:
        stored = ready(assignment, options)
    with zygote.kept():  # one zygote for every file
        return combine.best_of(assignment, [grade(path, assignment, options, stored)
                                            for path in paths])


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
            closed=closed(assignment, Path(submission.path), options))
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


@dataclass(frozen=True)
class Context:
    """What the diagnosis may know of a submission's source, beyond a call's outputs."""

    reads: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """The numeric notebook globals that the exercise's function reads, with their values
    (at the end of the notebook, then where the function is defined)."""
    example: Inputs | None = None
    """The inputs of the exercise's first public case: the notebook's own example."""

    @classmethod
    def of(cls, exercise: Exercise, reads: Mapping[str, tuple[float, ...]]) -> Context:
        """The context of one exercise, given the globals its function reads."""
        public = next((c for c in exercise.cases if c.visibility is Visibility.PUBLIC), None)
        return cls(reads, public.inputs() if public else None)


@dataclass(frozen=True)
class Call:
    """One case of one exercise, checked: its result and what its calls printed."""

    exercise: str
    """The exercise's name."""
    check: CheckResult
    """The compared, diagnosed, scored case (before the exercise's diagnoses agree)."""
    printed: str = ""
    """What the calls of the case printed (at the end, then at the definition)."""

    @property
    def hidden(self) -> bool:
        """Whether it is a hidden case's: what it printed may show hidden inputs."""
        return self.check.visibility is Visibility.HIDDEN


def _grade_calls(session: Session, assignment: Assignment, stored: references.References,
                 public_only: bool, reads: Mapping[str, Mapping[str, tuple[float, ...]]]
                 ) -> list[Call]:
    """Every case of every exercise, public ones first. The calls of one submission share its
    private /tmp: a hidden call could leave its inputs there for a later call to print, so no
    public call runs after any hidden one, and only public calls' output reaches students."""
    contexts = {e.name: Context.of(e, reads[e.name]) for e in assignment.exercises}
    calls = []
    for visibility in (Visibility.PUBLIC, Visibility.HIDDEN):
        if public_only and visibility is Visibility.HIDDEN:
            break
        for exercise in assignment.exercises:
            for case in exercise.cases:
                if case.visibility is visibility:
                    check, printed = _grade_case(session, exercise, case, stored,
                                                 contexts[exercise.name])
                    calls.append(Call(exercise.name, check, printed))
    return calls


def _exercise_result(exercise: Exercise, calls: Sequence[Call]) -> ExerciseResult:
    """An exercise's checks in the order of its cases, their diagnoses agreed, scored."""
    by_case = {call.check.name: call.check for call in calls if call.exercise == exercise.name}
    checks = [by_case[case.name] for case in exercise.cases if case.name in by_case]
    agreed = diagnose.consistent([c.diagnosis for c in checks],
                                 [c.alternatives for c in checks])
    checks = [replace(c, diagnosis=d) for c, d in zip(checks, agreed, strict=True)]
    return scoring.exercise_result(exercise, checks)


HIDDEN_PRINTED = ("[grader] {count} of the hidden checks' calls printed something; it is not "
                  "shown, since it could show their hidden inputs")


def _outputs(cells: str, calls: Sequence[Call], limit: int) -> tuple[str, str]:
    """(what students see, what only the instructor sees) of a submission's output: the
    cells' output (capped already) and the public calls' under a line naming each call; one
    line saying that hidden calls printed, whose output goes to the second text alone."""
    shown: list[str] = []
    kept: list[str] = []
    for call in calls:
        if not call.printed:
            continue
        label = f"[grader] {call.exercise}, case '{call.check.name}', printed:\n{call.printed}"
        (kept if call.hidden else shown).append(label)
    calls_text = cap("\n".join(shown), limit)
    if kept:
        calls_text = "\n".join(filter(None, [calls_text, HIDDEN_PRINTED.format(count=len(kept))]))
    return "\n".join(filter(None, [cells, calls_text])), cap("\n".join(kept), limit)


def judge(exercise: Exercise, case: Case, value: object, expected: references.Outputs,
          inputs: tuple[object, ...], context: Context | None = None
          ) -> tuple[CheckResult, bool]:
    """Compare a returned value with the reference and diagnose it; (check, passed)."""
    sizes = frozenset(n for item in inputs if isinstance(item, np.ndarray) for n in item.shape)
    result = compare.compare(value, expected, exercise.outputs, case.rtol, case.atol,
                             reveal=case.visibility is Visibility.PUBLIC, axes=exercise.axes,
                             sizes=sizes)
    if result.passed:
        return scoring.passed_check(case.name, exercise, visibility=case.visibility,
                                    note=case.note), True
    diagnosis = None
    alternatives: tuple[Diagnosis, ...] = ()
    if result.obtained is not None:
        context = context or Context()
        matching = diagnose.matches(exercise, inputs, case.init_kwargs, result.obtained,
                                    expected)
        diagnosis = diagnose.diagnose(exercise, inputs, case.init_kwargs, result.obtained,
                                      expected, context.reads, context.example, matching)
        if case.visibility is Visibility.HIDDEN:
            diagnosis = diagnose.without_numbers(diagnosis)
        if len(matching) > 1:
            alternatives = tuple(Diagnosis(m.id, m.message) for m in matching)
    detail = ""
    if case.visibility is Visibility.HIDDEN:  # shown only after show_hidden_after (disclosure)
        detail = cap(compare.compare(value, expected, exercise.outputs, case.rtol, case.atol,
                                     reveal=True).message)
    check = scoring.failed_check(case.name, exercise, CheckStatus.FAILED, result.message,
                                 diagnosis=diagnosis, views=result.views,
                                 visibility=case.visibility, note=case.note)
    return replace(check, alternatives=alternatives, detail=detail), False


_RAISED = re.compile(r"raised (?P<name>[A-Za-z_]\w*)(?P<said>.*?)(?P<where> \(line \d+\))?",
                     re.S)
KNOWN_ERRORS = frozenset(
    {name for name, value in vars(builtins).items()
     if isinstance(value, type) and issubclass(value, BaseException)}
    | {"AxisError", "LinAlgError"})
"""Exception classes whose names a hidden check may say: Python's and numpy's usual ones. A
class the student's code defines has a name it chooses, which could spell out the inputs."""


def hidden_error(message: str) -> str:
    """A hidden call's error as students see it: its exception class (a usual one), never
    its message or its line, which the student's code chooses and could make spell out the
    hidden inputs (`raise ValueError(repr(x))`; an `exec` of as many blank lines as an input's
    digits). Messages the grader writes (a timeout, a crash) are kept."""
    match = _RAISED.fullmatch(message)
    if match is None:
        return message
    name = match["name"]
    what = f"raised {name}" if name in KNOWN_ERRORS else "raised an exception of its own class"
    if not match["said"].strip() and not match["where"]:
        return what
    return (f"{what}; its message and line are shown for public checks only, since the code "
            "could make them spell out this hidden case's inputs")


def reply_limit(expected: references.Outputs) -> int:
    """The most bytes of arrays a call may return: room for any dtype and a wrong shape or
    two, never so much that comparing and diagnosing it costs the grader real memory."""
    return REPLY_FLOOR + REPLY_FACTOR * sum(np.asarray(output).nbytes for output in expected)


def _grade_case(session: Session, exercise: Exercise, case: Case,
                stored: references.References, context: Context) -> tuple[CheckResult, str]:
    """Check one case at the end of the notebook and, failing that, right after the cell that
    defined the exercise: a later cell that rebinds a global must not undo working code.
    Returns the check and what its calls printed."""
    inputs = case.inputs()
    expected = stored.get(exercise.name, case.name)
    first: CheckResult | None = None
    printed: list[str] = []
    for at in ("end", "definition"):
        outcome = session.call(exercise.name, exercise.kind, inputs, dict(case.init_kwargs),
                               exercise.tensors, at=at, max_bytes=reply_limit(expected))
        if outcome.printed:
            printed.append(outcome.printed)
        if outcome.status is CheckStatus.PASSED:
            check, passed = judge(exercise, case, outcome.value, expected, inputs, context)
            if passed and at == "definition":
                check = replace(check, caution=LATE)
            if passed:
                return check, "\n".join(printed)
        else:
            diagnosis: Diagnosis | None
            if outcome.message.startswith(NOT_IMPLEMENTED):
                diagnosis = diagnose.unattempted("still raises NotImplementedError")
            else:  # an index out of range, say, because N is the notebook's global
                diagnosis = diagnose.uses_global(exercise, context.reads, inputs,
                                                 context.example)
            message, detail = outcome.message, ""
            if outcome.status is CheckStatus.MISSING and exercise.notebook:
                message += f" (it belongs in {exercise.notebook})"
            if case.visibility is Visibility.HIDDEN:  # the whole message once it is due
                message, detail = hidden_error(message), cap(message)
            check = scoring.failed_check(
                case.name, exercise, outcome.status, message, diagnosis=diagnosis,
                visibility=case.visibility, note=case.note, detail=detail)
        first = first or check
        if outcome.status in (CheckStatus.MISSING, CheckStatus.TIMEOUT):
            break  # never defined, or too slow to try twice
    assert first is not None
    return first, "\n".join(printed)

