"""Errors of the flow package, all under :class:`FlowError`.

Reading the SAM template (:mod:`voicebridge_dev.flows.stack`) raises the template reader's own
:class:`voicebridge_dev.template.TemplateError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voicebridge_dev.flows.validate import Problem


class FlowError(Exception):
    """Base of the errors raised while reading, checking or rendering a flow."""


class InvalidFlowError(FlowError):
    """A flow failed validation; ``problems`` lists why."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


class UnresolvedPlaceholderError(FlowError):
    """:func:`~voicebridge_dev.flows.render.render` found placeholders with no value; ``names`` lists them as
    written (``X.Arn``)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__("unresolved placeholder(s): " + ", ".join("${" + n + "}" for n in names))
        self.names = names


class StackOutputsError(FlowError):
    """The outputs of a CloudFormation stack could not be read."""
