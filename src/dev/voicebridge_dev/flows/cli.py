"""The ``voicebridge flows`` commands: read the flow files, print what is wrong, give the exit status::

    voicebridge flows validate                                       # contact_flows/*.json, template.yaml
    voicebridge flows validate contact_flows other/flow.json         # every *.json under a folder, and files
    voicebridge flows render contact_flows/voice-agent.json --stack voicebridge

Each command is one function here; :mod:`voicebridge_dev.cli` parses the arguments and calls it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from voicebridge_dev.flows.errors import InvalidFlowError
from voicebridge_dev.flows.render import render
from voicebridge_dev.flows.stack import stack_outputs, template_functions, template_names
from voicebridge_dev.flows.validate import FLOW, Problem, validate
from voicebridge_dev.template import TemplateError


def cli_validate(paths: list[str], template: str = "template.yaml", *, templated: bool = False) -> int:
    """``voicebridge flows validate [PATH…|DIR]``: print each error as ``file: action: reason`` and each warning
    as ``file: warning: action: reason``.

    A folder stands for every ``*.json`` file under it, in its subfolders too; with no paths, validates
    ``contact_flows/*.json`` beside the template. ``templated`` validates the files as templates whose tokens are
    filled before import (see :func:`validate`). Returns the exit status: 0 when no flow has an error (warnings
    allowed), 1 otherwise (a folder without flows too).
    """
    template_path = Path(template)
    known_functions: set[str] | None = None
    known_names: set[str] | None = None
    if template_path.is_file():
        try:
            known_functions = template_functions(template_path)
            known_names = template_names(template_path)
        except TemplateError as exc:
            print(f"{template_path}: {exc}", file=sys.stderr)
            return 1
    else:
        print(f"{template_path}: not found; placeholders are checked for form only", file=sys.stderr)
    files, failed = (
        _flow_files(paths) if paths else (sorted((template_path.parent / "contact_flows").glob("*.json")), False)
    )
    if not files:
        print("no flow files to validate", file=sys.stderr)
        return 1
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            problems = [Problem(FLOW, f"cannot read: {exc.strerror or exc}")]
        else:
            problems = validate(
                text, known_functions=known_functions, known_names=known_names, templated=templated, warnings=True
            )
        for problem in problems:
            print(f"{path}: warning: {problem}" if problem.warning else f"{path}: {problem}")
        failed = failed or any(not p.warning for p in problems)
    return 1 if failed else 0


def _flow_files(paths: list[str]) -> tuple[list[Path], bool]:
    """The files ``paths`` name, a folder standing for every ``*.json`` under it; and whether a folder held none."""
    files: list[Path] = []
    empty_folder = False
    for given in map(Path, paths):
        if not given.is_dir():
            files.append(given)
            continue
        found = sorted(given.rglob("*.json"))
        if not found:
            print(f"{given}: no flow files (*.json) under this folder", file=sys.stderr)
            empty_folder = True
        files.extend(found)
    return files, empty_folder


def cli_render(
    path: str | Path,
    outputs: Mapping[str, str] | str,
    *,
    overrides: Mapping[str, str] | None = None,
) -> str:
    """``voicebridge flows render PATH --stack NAME``: the flow, placeholders filled, for a console import.

    ``outputs`` is either a stack name (its outputs are read with :func:`stack_outputs`) or the values
    themselves; ``overrides`` adds or replaces values (e.g. ``{"AgentQueueArn": "arn:…"}``). Raises
    :class:`UnresolvedPlaceholderError` when a placeholder has no value and :class:`InvalidFlowError` when the
    rendered flow is not valid.
    """
    values = dict(stack_outputs(outputs) if isinstance(outputs, str) else outputs)
    values.update(overrides or {})
    rendered = render(Path(path).read_text(encoding="utf-8"), values)
    problems = validate(rendered)
    if problems:
        raise InvalidFlowError(problems)
    return rendered
