"""The folder of flows a simulated call may move to: ``TransferToFlow`` targets and ``InvokeFlowModule`` modules.

``voicebridge flows simulate … --flows DIR`` names it. A flow in it is known by its file's name without ``.json``,
by the name its export records (``Metadata.name``, the name the console shows), and — a file holding a
DescribeContactFlow or DescribeContactFlowModule answer, as ``aws connect describe-contact-flow`` saves it — by
its ``Name``, ``Id`` and ``Arn``. An action names the flow to
run by ID, ARN or name (``ContactFlowId``, ``FlowModuleId``; the flow language reference: "may be defined
statically or dynamically"); an ARN (``…/contact-flow/<id>``, ``…/flow-module/<id>[:alias]``) stands for its last
part. Console exports also keep the target's display name in the action's metadata
(``Metadata.ActionMetadata.<id>`` — ``ContactFlow.text``, ``parameters.ContactFlowId.displayName``,
``contactFlowModuleName``…), which finds the flow when its ID means nothing here (a template's token, an ID of the
exporting instance). Flows are read and checked the first time a call reaches them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from voicebridge_dev.flows import Flow
from voicebridge_dev.simulator.loaded import LoadedFlow

__all__ = ["FlowLibrary", "display_names"]

logger = logging.getLogger(__name__)

_NAME_FIELDS = ("ContactFlowId", "FlowModuleId")


class FlowLibrary:
    """The flows of one or more folders, by file name and exported name; each loaded once, when first needed."""

    def __init__(self, folders: Iterable[str | Path], load: Callable[[Path], LoadedFlow]) -> None:
        self._load = load
        self._paths: dict[str, Path] = {}
        self._loaded: dict[Path, LoadedFlow] = {}
        self.ambiguous: set[str] = set()
        for folder in folders:
            root = Path(folder)
            if not root.is_dir():
                raise ValueError(f"--flows {root}: not a folder")
            for path in sorted(root.rglob("*.json")):
                for key in (path.stem, *_exported_keys(path)):
                    self._index(key, path)

    def _index(self, key: str | None, path: Path) -> None:
        if not key:
            return
        known = self._paths.setdefault(key, path)
        if known != path:
            self.ambiguous.add(key)
            logger.warning("flow library: %r names both %s and %s; the first is used", key, known, path)

    def __len__(self) -> int:
        return len(set(self._paths.values()))

    def find(self, reference: str, *, names: Iterable[str] = ()) -> tuple[Path, LoadedFlow] | None:
        """The flow ``reference`` (an ID, ARN or name) names, else the first of ``names`` (display names) found;
        None when none is here. :class:`~voicebridge_dev.flows.InvalidFlowError` when the flow found is invalid."""
        for key in (*_keys(reference), *names):
            path = self._paths.get(key)
            if path is not None:
                if path not in self._loaded:
                    self._loaded[path] = self._load(path)
                return path, self._loaded[path]
        return None


def _keys(reference: str) -> list[str]:
    value = reference.strip()
    if not value:
        return []
    last = value.rsplit("/", 1)[-1].split(":", 1)[0]
    return [value] if last == value else [value, last]


def _exported_keys(path: Path) -> list[str]:
    """The names an export gives its flow: ``Metadata.name``, and a DescribeContactFlow (or DescribeContactFlowModule)
    answer's ``Name``, ``Id`` and ``Arn``."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(document, dict):
        return []
    keys: list[Any] = []
    for wrapper in (document.get("ContactFlow"), document.get("ContactFlowModule")):
        if isinstance(wrapper, dict):
            keys += [wrapper.get("Name"), wrapper.get("Id"), wrapper.get("Arn")]
            try:
                document = json.loads(wrapper.get("Content") or "{}")
            except (TypeError, ValueError):
                document = {}
    metadata = document.get("Metadata") if isinstance(document, dict) else None
    if isinstance(metadata, dict):
        keys.append(metadata.get("name"))
    return [key for key in keys if isinstance(key, str) and key]


def display_names(flow: Flow, identifier: str) -> list[str]:
    """The names the console recorded for the flow or module an action moves to (its metadata), if any."""
    metadata: Any = (flow.metadata.get("ActionMetadata") or {}).get(identifier) or {}
    if not isinstance(metadata, Mapping):
        return []
    names = [
        ((metadata.get("ContactFlow") or {}) if isinstance(metadata.get("ContactFlow"), Mapping) else {}).get("text"),
        metadata.get("contactFlowModuleName"),
    ]
    parameters = metadata.get("parameters")
    if isinstance(parameters, Mapping):
        for field in _NAME_FIELDS:
            entry = parameters.get(field)
            if isinstance(entry, Mapping):
                names.append(entry.get("displayName"))
    return [name for name in names if isinstance(name, str) and name]
