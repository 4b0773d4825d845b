"""The documentation holds together: every relative link in README.md and docs/*.md leads somewhere that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixtures import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCED_BLOCK = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_INLINE_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose(page: Path) -> str:
    """The page without its fenced code blocks, where a ``#`` starts a comment and brackets are code."""
    return _FENCED_BLOCK.sub("", page.read_text(encoding="utf-8"))


def _relative_links(page: Path) -> list[str]:
    text = _CODE_SPAN.sub("", _prose(page))
    targets = _INLINE_LINK.findall(text) + _REFERENCE_DEFINITION.findall(text)
    return [target for target in targets if not _EXTERNAL.match(target)]


def _anchors(page: Path) -> set[str]:
    """The fragment ids GitHub gives the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors: set[str] = set()
    for heading in _HEADING.findall(_prose(page)):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        candidate, repeat = slug, 0
        while candidate in anchors:
            repeat += 1
            candidate = f"{slug}-{repeat}"
        anchors.add(candidate)
    return anchors


def _target(page: Path, link: str) -> tuple[Path, str]:
    path, _, fragment = link.partition("#")
    return (page.parent / path).resolve() if path else page, fragment


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_there_are_docs_pages() -> None:
    assert len(PAGES) > 1


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_points_at_a_file_that_exists(page: Path) -> None:
    missing = [link for link in _relative_links(page) if not _target(page, link)[0].exists()]
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_link_to_a_heading_names_a_heading_of_its_page(page: Path) -> None:
    unknown = []
    for link in _relative_links(page):
        path, fragment = _target(page, link)
        if fragment and path.suffix == ".md" and path.is_file() and fragment not in _anchors(path):
            unknown.append(link)
    assert unknown == []


def test_the_readme_links_every_docs_page() -> None:
    linked = {_target(ROOT / "README.md", link)[0] for link in _relative_links(ROOT / "README.md")}
    assert [_name(page) for page in PAGES[1:] if page.resolve() not in linked] == []
