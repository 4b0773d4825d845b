"""The corpus of public flows (``tests/data/flows``, sources in its ``SOURCES.md``): every flow a real contact centre
exports validates with no error, and a template fails as it is only on the values it leaves to be filled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixtures.flows import CORPUS, CORPUS_FILES, CORPUS_TEMPLATES, corpus_project
from voicebridge_dev.flows import validate

# What a template leaves open: a token, or a reference (an ARN, an ID) blank or in words for a person to replace.
TEMPLATE_VALUE = re.compile(
    r"leftover template (token|value) |malformed placeholder |LambdaFunctionARN '.*' is neither |names no |"
    r"(QueueId|AgentId) must be an ID|LexV2Bot\.AliasArn must be a non-empty string"
)


def corpus_id(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def test_the_corpus_holds_at_least_30_flows_from_10_projects() -> None:
    assert len(CORPUS_FILES) >= 30
    assert len({corpus_project(path) for path in CORPUS_FILES}) >= 10


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_a_public_flow_validates_with_no_error(path: Path) -> None:
    templated = corpus_project(path) in CORPUS_TEMPLATES
    assert validate(path.read_text(encoding="utf-8"), templated=templated) == []


@pytest.mark.parametrize("path", [p for p in CORPUS_FILES if corpus_project(p) in CORPUS_TEMPLATES], ids=corpus_id)
def test_a_public_template_as_it_is_fails_only_on_what_it_leaves_to_fill(path: Path) -> None:
    errors = validate(path.read_text(encoding="utf-8"))
    assert [str(e) for e in errors if not TEMPLATE_VALUE.search(e.reason)] == []


def test_the_templates_carry_what_they_leave_to_fill() -> None:
    failing = {corpus_project(p) for p in CORPUS_FILES if validate(p.read_text(encoding="utf-8"))}
    assert failing == set(CORPUS_TEMPLATES)


def test_sources_name_every_corpus_file_under_its_project() -> None:
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## `([^`]+)/`\n(.*?)(?=^## |\Z)", sources, flags=re.MULTILINE | re.DOTALL))
    missing = [corpus_id(p) for p in CORPUS_FILES if f"| `{p.name}` |" not in sections.get(corpus_project(p), "")]
    assert missing == []
    for section in sections.values():
        if section.startswith("["):
            assert re.search(r"at `[0-9a-f]{40}`", section), section[:80]
