"""JUnit XML, which GitLab, Jenkins and most CI systems read: one testcase per check."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from grader import text
from grader.report.advice import is_tip
from grader.results import CheckStatus, Result, ResultStatus

# Two characters that `text.clean` keeps and XML 1.0 cannot hold.
_NOT_XML = str.maketrans("", "", "\ufffe\uffff")


def _clean(value: str) -> str:
    """Text of a `clean`ed result that XML can hold."""
    return value.translate(_NOT_XML)


def render(results: Sequence[Result]) -> str:
    """A <testsuites> document with one <testsuite> per submission."""
    suites = ET.Element("testsuites", name="attention-grader")
    for result in results:
        result = text.clean_fields(result)
        checks = [(e, c) for e in result.exercises for c in e.checks]
        wrong = [c for e, c in checks if not is_tip(e, c)]  # a tip is advice, not a failure
        failures = sum(1 for c in wrong if c.status is CheckStatus.FAILED)
        errors = sum(1 for c in wrong if c.status not in (CheckStatus.FAILED, CheckStatus.PASSED))
        suite = ET.SubElement(suites, "testsuite", name=_clean(result.submission),
                              tests=str(max(len(checks), 1)), failures=str(failures),
                              errors=str(errors + (result.status is ResultStatus.ERROR)))
        if result.timed:  # not once hidden cases ran: their time is the submission's to choose
            suite.set("time", f"{result.duration_s:.3f}")
        if result.status is ResultStatus.ERROR:
            case = ET.SubElement(suite, "testcase", classname=result.assignment,
                                 name="load submission", time="0")
            ET.SubElement(case, "error", message=_clean(result.error or ""),
                          type="SubmissionError")
            continue
        for exercise, check in checks:
            case = ET.SubElement(suite, "testcase",
                                 classname=f"{result.assignment}.{exercise.name}",
                                 name=f"{check.name} ({check.visibility.value})", time="0")
            tip = is_tip(exercise, check)
            headline = (f"[{check.diagnosis.id}] {check.diagnosis.message}" if check.diagnosis
                        else (check.message.splitlines() or [check.status.value])[0])
            if check.caution or tip:  # a property every runner shows
                properties = ET.SubElement(case, "properties")
                if check.caution:  # how it passed, or failed
                    ET.SubElement(properties, "property", name="caution",
                                  value=_clean(check.caution))
                if tip:  # worth no points: advice, never a failure
                    ET.SubElement(properties, "property", name="tip", value=_clean(headline))
            if check.passed or tip:
                continue
            tag = "failure" if check.status is CheckStatus.FAILED else "error"
            element = ET.SubElement(case, tag, message=_clean(headline),
                                    type=check.status.value)
            element.text = _clean(check.message)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
