"""Keeps the contact flows embedded in template.yaml identical to their files under contact_flows/.

Each ``AWS::Connect::ContactFlow`` resource names its source file in its Metadata and embeds that file's text,
verbatim, as a YAML literal block under ``Fn::Sub`` (the flows hold ``${SynthesizeFunction.Arn}``-style
placeholders that CloudFormation fills)::

    VoiceAgentFlow:
      Type: AWS::Connect::ContactFlow
      Metadata:
        FlowFile: contact_flows/voice-agent.json
      Properties:
        Content: !Sub |
          {
            "Version": "2019-10-30",
            ...

``python tools/flows_sync.py`` rewrites every such ``Content: !Sub |`` block from its file and leaves each
other line of the template as it was (comments and layout included). ``--check`` writes nothing and exits 1
when a block differs from its file. Exit status 2 means the template could not be read or rewritten.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from voicebridge_dev.template import TemplateError, load_template

CONTACT_FLOW = "AWS::Connect::ContactFlow"
FLOW_FILE_KEY = "FlowFile"
_CONTENT_LINE = re.compile(r"^(?P<indent> +)Content: !Sub \|\s*$")


class FlowSyncError(Exception):
    """The template's flow resources or their ``Content`` blocks are not laid out as this tool expects."""


def embedded_flow_files(template_path: Path) -> dict[str, Path]:
    """Logical ID → flow file (relative to the template's folder) of every contact-flow resource."""
    try:
        resources = load_template(template_path)["Resources"]
    except (OSError, TemplateError) as exc:
        raise FlowSyncError(f"{template_path}: {exc}") from exc
    files: dict[str, Path] = {}
    for logical_id, resource in resources.items():
        if not isinstance(resource, dict) or resource.get("Type") != CONTACT_FLOW:
            continue
        name = (resource.get("Metadata") or {}).get(FLOW_FILE_KEY)
        if not isinstance(name, str):
            raise FlowSyncError(f"{logical_id}: Metadata.{FLOW_FILE_KEY} must name the flow file")
        files[logical_id] = template_path.parent / name
    return files


def sync(template_text: str, flows: Mapping[str, str]) -> str:
    """``template_text`` with the ``Content: !Sub |`` block of each resource in ``flows`` set to its text."""
    lines = template_text.splitlines(keepends=True)
    for logical_id, flow_text in flows.items():
        start, end, indent = _content_block(lines, logical_id)
        lines[start:end] = _literal_block(flow_text, indent + "  ")
    return "".join(lines)


def _content_block(lines: Sequence[str], logical_id: str) -> tuple[int, int, str]:
    """Lines ``[start, end)`` of the resource's ``Content`` block body, and the ``Content:`` line's indent."""
    header = f"  {logical_id}:"
    try:
        resource_line = next(i for i, line in enumerate(lines) if line.rstrip() == header)
    except StopIteration:
        raise FlowSyncError(f"{logical_id}: resource header {header.strip()!r} not found") from None
    for number in range(resource_line + 1, len(lines)):
        line = lines[number]
        if _is_resource_header(line):
            break
        match = _CONTENT_LINE.match(line)
        if match is None:
            continue
        indent = match.group("indent")
        end = number + 1
        while end < len(lines) and (not lines[end].strip() or _indent_of(lines[end]) > len(indent)):
            end += 1
        # Blank lines closing the block separate it from the next resource: they stay outside it.
        while end > number + 1 and not lines[end - 1].strip():
            end -= 1
        return number + 1, end, indent
    raise FlowSyncError(f"{logical_id}: no 'Content: !Sub |' block")


def _is_resource_header(line: str) -> bool:
    return _indent_of(line) <= 2 and bool(line.strip()) and not line.lstrip().startswith("#")


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _literal_block(text: str, indent: str) -> list[str]:
    if not text.endswith("\n") or text.endswith("\n\n"):
        # A clipped literal block (`|`) ends in exactly one newline; any other ending would not round-trip.
        text = text.rstrip("\n") + "\n"
    return [indent + line if line.strip() else "\n" for line in text.splitlines(keepends=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--template", default="template.yaml", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a block drifted")
    args = parser.parse_args(argv)
    template: Path = args.template
    try:
        files = embedded_flow_files(template)
        current = template.read_text(encoding="utf-8")
        synced = sync(current, {name: path.read_text(encoding="utf-8") for name, path in files.items()})
    except (OSError, FlowSyncError) as exc:
        print(f"flows_sync: {exc}", file=sys.stderr)
        return 2
    if synced == current:
        return 0
    if args.check:
        print(f"{template}: embedded flows differ from their files; run `make flows-sync`", file=sys.stderr)
        return 1
    template.write_text(synced, encoding="utf-8")
    print(f"{template}: contact flows rewritten from {', '.join(str(p) for p in files.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
