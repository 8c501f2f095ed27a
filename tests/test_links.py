"""The map cannot rot: every relative link of README.md and of the guides in docs/ names a file
that exists and, after a `#`, one of its headings, as GitHub spells a heading's anchor."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def pages(root: Path) -> list[Path]:
    """README.md and every guide under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def prose(path: Path) -> str:
    """A page's text with its fenced code blocks set aside: they hold no links or headings."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them: lower case, punctuation dropped,
    spaces made hyphens, a repeated one suffixed -1, -2, ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        number, anchor = 0, slug
        while anchor in found:
            number += 1
            anchor = f"{slug}-{number}"
        found.add(anchor)
    return found


def broken_links(page: Path, root: Path) -> list[str]:
    """Each relative link of `page` whose file or heading is not there, with the reason."""
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto: and the like: not ours to check
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists() or root.resolve() not in (path, *path.parents):
            broken.append(f"{page.name}: {target}: no such file in the repository")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"{page.name}: {target}: {path.name} has no heading #{anchor}")
    return broken


def test_every_relative_link_of_readme_and_the_guides_is_there():
    assert {page.name for page in pages(ROOT)} >= {
        "README.md", "students.md", "grading.md", "class.md", "term.md", "authoring.md",
        "deployment.md", "benchmarks.md"}
    links = [target for page in pages(ROOT) for target in LINK.findall(prose(page))]
    assert len(links) > 20 and any("#" in target for target in links)
    assert [problem for page in pages(ROOT) for problem in broken_links(page, ROOT)] == []


def test_readme_links_to_every_guide_and_to_security():
    linked = set(LINK.findall(prose(ROOT / "README.md")))
    assert {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} <= linked
    assert "SECURITY.md" in linked


def test_a_missing_file_a_missing_heading_and_a_link_out_of_the_repository_are_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Title\n\n## The term: roster, regrades\n\n"
                                        "[ok](docs/a.md#a-warm-grader-grade-serve) "
                                        "[ok](#the-term-roster-regrades) [ok](#title) "
                                        "[web](https://example.org/x#y)\n")
    (tmp_path / "docs" / "a.md").write_text(
        "# A\n\n## A warm grader: `grade serve`\n\n## Notes\n\n## Notes\n\n"
        "```\n# not a heading\n[not a link](nowhere.md)\n```\n\n"
        "[ok](../README.md#title) [ok](#notes-1) [gone](b.md) [no heading](#not-a-heading) "
        "[out](../../outside.md)\n")
    (tmp_path.parent / "outside.md").write_text("# Outside\n")
    assert broken_links(tmp_path / "README.md", tmp_path) == []
    assert broken_links(tmp_path / "docs" / "a.md", tmp_path) == [
        "a.md: b.md: no such file in the repository",
        "a.md: #not-a-heading: a.md has no heading #not-a-heading",
        "a.md: ../../outside.md: no such file in the repository"]
