"""The functions a SAM template declares, as the Lambda emulator runs them, and the names an Invoke finds them by.

``FunctionName`` is a logical ID (``SynthesizeFunction``), the local physical name
(:func:`~voicebridge_dev.template.local_physical_id`), or a full or partial ARN with either, optionally
followed by ``:$LATEST``; the only version is ``$LATEST``.

A function's handler output is logged to ``voicebridge_dev.local.lambda_.<LogicalId>``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from voicebridge_dev.local.lambda_.records import LABEL
from voicebridge_dev.local.service import ApiError
from voicebridge_dev.template import (
    LOCAL_ACCOUNT,
    FunctionSpec,
    TemplateError,
    function_spec,
    load_template,
    local_physical_id,
)

if TYPE_CHECKING:
    from voicebridge_dev.local.lambda_.containers import Call, Container

logger = logging.getLogger(__name__)

LATEST: Final = "$LATEST"
_FUNCTION_TYPES: Final = ("AWS::Serverless::Function", "AWS::Lambda::Function")
# Every function logs under the package's logger, so one level set on it quiets them all.
_FUNCTION_LOGS: Final = logging.getLogger(__name__.rpartition(".")[0])


class Function:
    """A template function: its spec, its containers and its Event queue."""

    def __init__(self, spec: FunctionSpec, code_root: Path, runtime: str | None) -> None:
        self.spec = spec
        self.logical_id = spec.logical_id
        self.physical_name = local_physical_id(spec.logical_id)
        self.code_root = code_root
        self.runtime = runtime
        self.log = _FUNCTION_LOGS.getChild(spec.logical_id)
        self.lock = threading.Condition()
        self.idle: list[Container] = []
        self.containers = 0
        self.events: deque[Call] = deque()
        self.dispatchers: list[threading.Thread] = []


class Functions:
    """The functions of one template, by logical ID, with those the local run cannot configure set apart.

    A function whose environment cannot be resolved locally is logged and answers ServiceException with the
    reason; the others run.
    """

    def __init__(self, region: str, functions: dict[str, Function], unrunnable: dict[str, str]) -> None:
        self.region = region
        self._functions = functions
        self._unrunnable = unrunnable
        self._by_name = {
            **{function.physical_name: function for function in functions.values()},
            **functions,
        }

    @classmethod
    def load(cls, template_path: Path, region: str, parameters: dict[str, str]) -> Functions:
        """Read the template's functions."""
        template = load_template(template_path)
        globals_ = template.get("Globals", {}).get("Function", {})
        functions: dict[str, Function] = {}
        unrunnable: dict[str, str] = {}
        for logical_id, resource_ in template["Resources"].items():
            if resource_.get("Type") not in _FUNCTION_TYPES:
                continue
            props = resource_.get("Properties", {})
            try:
                spec = function_spec(template, logical_id, region=region, parameters=parameters)
            except TemplateError as exc:
                # One function the local run cannot configure must not keep the others from running.
                reason = f"{logical_id} cannot run locally: {exc}"
                logger.warning("%s: %s", LABEL, reason)
                unrunnable[logical_id] = unrunnable[local_physical_id(logical_id)] = reason
                continue
            code_uri = props.get("CodeUri", globals_.get("CodeUri"))
            code_root = template_path.parent
            if isinstance(code_uri, str):
                code_root = (code_root / code_uri).resolve()
            runtime = props.get("Runtime", globals_.get("Runtime"))
            functions[logical_id] = Function(spec, code_root, runtime if isinstance(runtime, str) else None)
        if not functions and not unrunnable:
            raise TemplateError(f"{template_path} declares no function")
        return cls(region, functions, unrunnable)

    def __iter__(self) -> Iterator[Function]:
        return iter(self._functions.values())

    def _arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{LOCAL_ACCOUNT}:function:{name}"

    def resolve(self, name: str, qualifier: str | None) -> Function:
        """The function a logical ID, physical name or (partial) ARN names, with an optional qualifier."""
        parts = name.split(":")
        base, embedded = name, None
        if name.startswith("arn:"):
            local = ["aws", "lambda", self.region, LOCAL_ACCOUNT, "function"]
            if len(parts) not in (7, 8) or parts[1:6] != local:
                raise ApiError(404, "ResourceNotFoundException", f"Function not found: {name}")
            base, embedded = parts[6], (parts[7] if len(parts) == 8 else None)
        elif len(parts) in (3, 4) and parts[:2] == [LOCAL_ACCOUNT, "function"]:
            base, embedded = parts[2], (parts[3] if len(parts) == 4 else None)
        elif len(parts) == 2:
            base, embedded = parts
        if embedded is not None and qualifier is not None and embedded != qualifier:
            raise ApiError(
                400,
                "InvalidParameterValueException",
                "The derived qualifier from the function name does not match the specified qualifier.",
            )
        version = embedded or qualifier
        if base in self._unrunnable and version in (None, LATEST):
            raise ApiError(500, "ServiceException", self._unrunnable[base])
        function = self._by_name.get(base)
        if function is None or version not in (None, LATEST):
            missing = self._arn(base) + (f":{version}" if version else "")
            raise ApiError(404, "ResourceNotFoundException", f"Function not found: {missing}")
        return function
