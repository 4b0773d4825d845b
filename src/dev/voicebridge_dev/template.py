"""Reads template.yaml the way ``sam local invoke`` does: a function's handler, timeout and environment.

Intrinsic functions are resolved for a local run: ``!Ref`` of a parameter gives its value (an override, else its
default), ``!Ref``/``!GetAtt`` of a resource gives the physical name the local cloud creates for it
(:func:`local_physical_id`), and ``!Sub`` substitutes both. Pseudo parameters take the local account and region.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

LOCAL_ACCOUNT = "111111111111"
_NO_VALUE = "\x00no-value"


class TemplateError(ValueError):
    """The template does not declare what was asked, or uses an intrinsic this reader cannot resolve."""


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML was built with it (its wheels are): template.yaml reads some twenty times faster."""


class _CfnLoader(_SafeLoader):  # type: ignore[misc]
    """SafeLoader that turns CloudFormation short-form tags (``!Ref x``) into their long form (``{"Ref": x}``)."""


def _construct_tag(loader: _CfnLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:
        raise TemplateError(f"cannot read the !{tag_suffix} tag at {node.start_mark}")
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


def load_template(path: str | Path) -> dict[str, Any]:
    """template.yaml as plain data, short-form intrinsics in long form: the caller's own copy, so it may change it.

    A simulation or a local run reads the same template many times; it is parsed again only when it changed."""
    stat = Path(path).stat()
    data = _parsed(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    if not isinstance(data, dict) or "Resources" not in data:
        raise TemplateError(f"{path} is not a CloudFormation template")
    return copy.deepcopy(data)


@functools.lru_cache(maxsize=8)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    with open(path, encoding="utf-8") as stream:
        return yaml.load(stream, Loader=_CfnLoader)


def local_physical_id(logical_id: str) -> str:
    """The name the local cloud gives a template resource (lower-case, valid as a bucket or table name)."""
    return "voicebridge-local-" + re.sub(r"(?<!^)(?=[A-Z])", "-", logical_id).lower()


@dataclass
class FunctionSpec:
    """What a local run of one function needs."""

    logical_id: str
    handler: str
    timeout_s: int
    memory_mb: int
    environment: dict[str, str] = field(default_factory=dict)
    reserved_concurrency: int | None = None
    """``ReservedConcurrentExecutions``, when the template reserves some: at most that many run at once."""
    on_failure: str | None = None
    """The function (logical ID) ``EventInvokeConfig.DestinationConfig.OnFailure`` names, when it names one of the
    template's functions (``Type: Lambda``, ``Destination: !GetAtt X.Arn``)."""


@dataclass
class Resolver:
    """Resolves intrinsic functions for a local run."""

    template: Mapping[str, Any]
    region: str = "us-east-1"
    parameters: Mapping[str, str] = field(default_factory=dict)

    def arn(self, logical_id: str) -> str:
        resource = self.template["Resources"][logical_id]
        kind = resource.get("Type", "")
        name = local_physical_id(logical_id)
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{name}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:aws:dynamodb:{self.region}:{LOCAL_ACCOUNT}:table/{name}"
        if kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            return f"arn:aws:lambda:{self.region}:{LOCAL_ACCOUNT}:function:{name}"
        if kind == "AWS::SecretsManager::Secret":
            return f"arn:aws:secretsmanager:{self.region}:{LOCAL_ACCOUNT}:secret:{name}"
        return f"arn:aws:local:{self.region}:{LOCAL_ACCOUNT}:{name}"

    def ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": LOCAL_ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::StackName": "voicebridge-local",
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self.parameters:
            return self.parameters[name]
        declared = self.template.get("Parameters", {})
        if name in declared:
            return str(declared[name].get("Default", ""))
        resources = self.template["Resources"]
        if name in resources:
            # Locally a secret is referred to by name, which GetSecretValue accepts as well as an ARN.
            return local_physical_id(name)
        raise TemplateError(f"!Ref {name}: no such parameter or resource")

    def get_att(self, logical_id: str, attribute: str) -> str:
        if logical_id not in self.template["Resources"]:
            raise TemplateError(f"!GetAtt {logical_id}.{attribute}: no such resource")
        if attribute == "Arn":
            return self.arn(logical_id)
        return local_physical_id(logical_id)

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {key: self.resolve(item) for key, item in value.items()}
        ((key, arg),) = value.items()
        if key == "Ref":
            return self.ref(arg)
        if key == "Fn::GetAtt":
            return self.get_att(arg[0], arg[1])
        if key == "Fn::Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))
            return re.sub(r"\$\{([^}!]+)\}", lambda m: self._sub_one(m.group(1), extra), text)
        if key == "Fn::Join":
            return str(arg[0]).join(str(self.resolve(item)) for item in arg[1])
        if key == "Fn::If":
            name, when_true, when_false = arg
            return self.resolve(when_true if self.condition(name) else when_false)
        return {key: self.resolve(arg)}

    def condition(self, name: str) -> bool:
        """The value of a template condition for this local run."""
        conditions = self.template.get("Conditions", {})
        if name not in conditions:
            raise TemplateError(f"condition {name} is not declared")
        return self._truth(conditions[name])

    def _truth(self, expression: Any) -> bool:
        if isinstance(expression, bool):
            return expression
        if not isinstance(expression, dict) or len(expression) != 1:
            raise TemplateError(f"cannot evaluate condition {expression!r}")
        ((key, arg),) = expression.items()
        if key == "Condition":
            return self.condition(arg)
        if key == "Fn::Equals":
            return str(self.resolve(arg[0])) == str(self.resolve(arg[1]))
        if key == "Fn::Not":
            return not self._truth(arg[0])
        if key == "Fn::And":
            return all(self._truth(item) for item in arg)
        if key == "Fn::Or":
            return any(self._truth(item) for item in arg)
        raise TemplateError(f"cannot evaluate {key} in a condition")

    def _sub_one(self, name: str, extra: Mapping[str, Any]) -> str:
        if name in extra:
            return str(extra[name])
        if "." in name and not name.startswith("AWS::"):
            logical_id, attribute = name.split(".", 1)
            return self.get_att(logical_id, attribute)
        return self.ref(name)


def function_spec(
    template: Mapping[str, Any],
    logical_id: str,
    *,
    region: str = "us-east-1",
    parameters: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> FunctionSpec:
    """Handler, timeout, memory and resolved environment of ``logical_id``, Globals merged as SAM merges them.

    ``overrides`` takes SAM's ``--env-vars`` file format: ``{"Parameters": {...}, "<LogicalId>": {...}}``.
    """
    resource = template["Resources"].get(logical_id)
    if resource is None or resource.get("Type") not in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
        functions = sorted(
            name for name, res in template["Resources"].items() if res.get("Type") == "AWS::Serverless::Function"
        )
        raise TemplateError(f"{logical_id} is not a function in the template (functions: {', '.join(functions)})")
    glob = template.get("Globals", {}).get("Function", {})
    props = resource.get("Properties", {})
    resolver = Resolver(template, region=region, parameters=parameters or {})
    variables: dict[str, Any] = {
        **glob.get("Environment", {}).get("Variables", {}),
        **props.get("Environment", {}).get("Variables", {}),
    }
    environment = {}
    for name, value in variables.items():
        resolved = resolver.resolve(value)
        if resolved != _NO_VALUE:
            environment[name] = str(resolved)
    overrides = overrides or {}
    for scope in ("Parameters", logical_id):
        for name, value in (overrides.get(scope) or {}).items():
            if name in environment:
                environment[name] = str(value)
    handler = props.get("Handler") or glob.get("Handler")
    if not handler:
        raise TemplateError(f"{logical_id} has no Handler")
    return FunctionSpec(
        logical_id=logical_id,
        handler=str(handler),
        timeout_s=int(resolver.resolve(props.get("Timeout", glob.get("Timeout", 3)))),
        memory_mb=int(resolver.resolve(props.get("MemorySize", glob.get("MemorySize", 128)))),
        environment=environment,
        reserved_concurrency=_reserved(resolver.resolve(props.get("ReservedConcurrentExecutions"))),
        on_failure=_failure_destination(props),
    )


def _failure_destination(props: Mapping[str, Any]) -> str | None:
    """The template function an asynchronous invocation's failure record goes to, if one does."""
    on_failure = (props.get("EventInvokeConfig") or {}).get("DestinationConfig", {}).get("OnFailure") or {}
    destination = on_failure.get("Destination")
    if on_failure.get("Type") != "Lambda" or not isinstance(destination, Mapping):
        return None
    target = destination.get("Fn::GetAtt")
    if isinstance(target, str):
        target = target.split(".")
    if isinstance(target, list) and len(target) == 2 and target[1] == "Arn":
        return str(target[0])
    return None


def _reserved(value: Any) -> int | None:
    if value is None or value == _NO_VALUE or value == "":
        return None
    return int(value)
