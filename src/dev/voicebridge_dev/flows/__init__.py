"""Connect's flow language, version 2019-10-30: models, validation, rendering (docs/protocols.md, *The flow language*).

Check a flow file against the template, model it, and fill its placeholders for a console import::

    >>> from pathlib import Path
    >>> from voicebridge_dev.flows import load_flow, render, stack_outputs, template_functions, template_names, validate
    >>> text = Path("contact_flows/voice-agent.json").read_text(encoding="utf-8")
    >>> validate(text, known_functions=template_functions("template.yaml"),
    ...          known_names=template_names("template.yaml"))
    []
    >>> flow = load_flow("contact_flows/voice-agent.json")
    >>> flow["Check turn result"].condition_target("Turn")
    'Remember turn'
    >>> rendered = render(text, stack_outputs("voicebridge"))  # doctest: +SKIP

The modules: :mod:`~voicebridge_dev.flows.model` (:class:`Flow`, :class:`Action`, :func:`parse_flow`),
:mod:`~voicebridge_dev.flows.rules` (what Connect accepts, per action type), :mod:`~voicebridge_dev.flows.validate`
(:func:`validate`, :class:`Problem`), :mod:`~voicebridge_dev.flows.render` (:func:`render`),
:mod:`~voicebridge_dev.flows.stack` (stack outputs, the template's names), :mod:`~voicebridge_dev.flows.errors`,
and :mod:`~voicebridge_dev.flows.cli`, the ``voicebridge flows`` commands. The package does not import the
commands, so a user of the models (the flow simulator) loads no command-line code.
"""

from voicebridge_dev.flows.errors import FlowError, InvalidFlowError, StackOutputsError, UnresolvedPlaceholderError
from voicebridge_dev.flows.model import Action, Condition, ErrorBranch, Flow, action_from_json, load_flow, parse_flow
from voicebridge_dev.flows.render import placeholder_key, render
from voicebridge_dev.flows.rules import (
    ACTION_TYPES,
    CANONICAL_TYPES,
    FLOW_LANGUAGE_VERSION,
    MAX_ACTIONS,
    MAX_CONTENT_CHARS,
    MAX_IDENTIFIER_CHARS,
)
from voicebridge_dev.flows.stack import stack_outputs, template_functions, template_names
from voicebridge_dev.flows.validate import FLOW, FlowContent, Problem, flow_content, nearest_type, validate

__all__ = [
    "ACTION_TYPES",
    "CANONICAL_TYPES",
    "FLOW",
    "FLOW_LANGUAGE_VERSION",
    "MAX_ACTIONS",
    "MAX_CONTENT_CHARS",
    "MAX_IDENTIFIER_CHARS",
    "Action",
    "Condition",
    "ErrorBranch",
    "Flow",
    "FlowContent",
    "FlowError",
    "InvalidFlowError",
    "Problem",
    "StackOutputsError",
    "UnresolvedPlaceholderError",
    "action_from_json",
    "flow_content",
    "load_flow",
    "nearest_type",
    "parse_flow",
    "placeholder_key",
    "render",
    "stack_outputs",
    "template_functions",
    "template_names",
    "validate",
]
