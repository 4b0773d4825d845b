"""What Connect accepts in a flow (docs/protocols.md, *The flow language*): limits, identifiers, and per action type its
parameters, error types, conditions and where it may run.

The rules come from Connect's *Flow language* reference (:data:`REFERENCE`; each :class:`ActionSpec` names its page
in ``source``) and from the flows contact centres really export (``tests/data/flows``). Where the two disagree the
exports win, since Connect stored them; where the reference is silent or ambiguous the rule accepts and its spec's
``note`` says so. ``docs/flows.md`` is the table of it all.

:data:`ACTION_TYPES` maps each action type to its :class:`ActionSpec`; a spec's ``check`` returns why the values of
the parameters are wrong, one reason a string, none when they are right::

    >>> ACTION_TYPES["Loop"].check({"LoopCount": "101"}, CheckContext(known_functions=None, known_names=None))
    ["LoopCount must be a string holding an integer 0–100 (or one JSONPath), not '101'"]

It also holds the template tokens: the ``Fn::Sub`` placeholder (:data:`PLACEHOLDER`) that validation and rendering
share, and every templating system's tokens (:data:`TEMPLATE_TOKEN`, :func:`template_value`); the numeric bounds
and the AWS text each comes from (:data:`BOUNDS`: one no source gives is only a warning); and the kinds of resource
a parameter names (:class:`ResourceKind`, :func:`resource_reason`: an ARN that does not parse names none).

The action types the console exports that the reference has no page for (:data:`NEWER_TYPES`) name the admin
guide's block page or the API operation whose parameters they carry; their parameters, errors and conditions are
accepted as exported, since no source pins them down.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

FLOW_LANGUAGE_VERSION = "2019-10-30"
MAX_ACTIONS = 250
MAX_CONTENT_CHARS = 256_000
MAX_IDENTIFIER_CHARS = 50
FORBIDDEN_IDENTIFIER_CHARS = frozenset("%:(\\/)=$,;[]{}")
RESERVED_IDENTIFIERS = frozenset(
    {
        "__proto__",
        "constructor",
        "__defineGetter__",
        "__defineSetter__",
        "toString",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "valueOf",
    }
)

REFERENCE = "https://docs.aws.amazon.com/connect/latest/APIReference/"
# Identifier, Type, Parameters, Transitions (NextAction, Errors, Conditions) and the limits above.
ACTIONS_PAGE = REFERENCE + "flow-language-actions.html"
# The export format: Version, StartAction, Metadata ("may be filled in with data as desired"), Actions.
EXAMPLE_PAGE = REFERENCE + "flow-language-example.html"

# The admin guide's block pages: what the console's blocks take, for the action types the reference has no page for.
ADMIN_GUIDE = "https://docs.aws.amazon.com/connect/latest/adminguide/"


@dataclass(frozen=True)
class Bound:
    """A numeric bound on a value: enforced (an error past it) when ``source`` names the AWS text that gives it;
    otherwise only a warning past it, saying ``why`` no source is named."""

    low: int
    high: int
    source: str = ""
    why: str = ""

    @property
    def enforced(self) -> bool:
        return bool(self.source)


_NO_SOURCE = "no AWS source gives this bound, so Connect may accept the value"
BOUNDS: Mapping[str, Bound] = {
    # The flow language's Actions page: "This Identifier can be up to 50 characters long"; and a flow's actions.
    "Actions": Bound(1, MAX_ACTIONS, ACTIONS_PAGE),
    "Identifier": Bound(1, MAX_IDENTIFIER_CHARS, ACTIONS_PAGE),
    # ContactFlow.Content: "Length Constraints: Minimum length of 1. Maximum length of 256000."
    "Content": Bound(1, MAX_CONTENT_CHARS, REFERENCE + "API_ContactFlow.html"),
    # "You can enter maximum of 8 seconds for Synchronous mode and 60 seconds for Asynchronous mode."
    "InvokeLambdaFunction.InvocationTimeLimitSeconds": Bound(1, 8, ADMIN_GUIDE + "invoke-lambda-function-block.html"),
    "InvokeLambdaFunction.InvocationTimeLimitSeconds.ASYNCHRONOUS": Bound(
        1, 60, ADMIN_GUIDE + "invoke-lambda-function-block.html"
    ),
    # "a positive integer value no greater than 604800 (seven days)".
    "Wait.TimeoutSeconds": Bound(1, 604_800, REFERENCE + "flow-control-actions-wait.html"),
    # Bounds no AWS text gives, which flows are commonly assumed to keep: past them is a warning, not an error (a
    # published survey flow waits 300 s for its answer).
    "GetParticipantInput.InputTimeLimitSeconds": Bound(1, 180, why=_NO_SOURCE),
    "Loop.LoopCount": Bound(0, 100, why=_NO_SOURCE),
    "TransferParticipantToThirdParty.ThirdPartyConnectionTimeLimitSeconds": Bound(0, 600, why=_NO_SOURCE),
    "TransferParticipantToThirdParty.ThirdPartyDTMFDigits": Bound(1, 50, why=_NO_SOURCE),
}

# Legacy export blocks and the flow-language action that replaced each.
LEGACY_TYPES = {
    "PlayPrompt": "MessageParticipant",
    "InvokeExternalResource": "InvokeLambdaFunction",
    "StartMediaStreaming": "UpdateContactMediaStreamingBehavior",
    "StopMediaStreaming": "UpdateContactMediaStreamingBehavior",
    "SetAttributes": "UpdateContactAttributes",
    "CheckAttribute": "Compare",
    "GetUserInput": "GetParticipantInput",
    "SetQueue": "UpdateContactTargetQueue",
    "Transfer": "TransferContactToQueue",
    "SetLoggingBehavior": "UpdateFlowLoggingBehavior",
    "Disconnect": "DisconnectParticipant",
}

# CloudFormation Fn::Sub: ${X}, ${X.Attr}, ${AWS::Region}; ${!X} is a literal ${X}.
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# Every templating system's token that public flows ship with: Fn::Sub's ${X}, {{x}} (mustache, e.g. the Amazon
# Connect rules engine), %%X%% (Salesforce Service Cloud Voice samples), %x% (batch-style, a Q in Connect sample's
# %QconnectAssistantArn%), __X__ (sed-style, __LEX_BOT_ALIAS_ARN__), <<x>> and REPLACE_WITH_… (words for a person).
TEMPLATE_TOKEN = re.compile(
    r"\$\{[^}]*\}"
    r"|\{\{[^{}]*\}\}"
    r"|%%[^%\s]+%%"
    r"|%[A-Za-z_][A-Za-z0-9_.-]*%"
    r"|__[A-Z][A-Z0-9_]*__"
    r"|<<[^<>\s]+>>"
    r"|REPLACE_WITH_[A-Za-z0-9_]*"
)
# A CloudFormation intrinsic function left in the flow as an object ({"Fn::GetAtt": [...]}, {"Ref": "X"}).
INTRINSIC_KEYS = frozenset({"Ref", "Condition"})


def intrinsic(value: Any) -> bool:
    """Whether ``value`` is a CloudFormation intrinsic function object, which only CloudFormation resolves."""
    return (
        isinstance(value, dict)
        and len(value) == 1
        and all(isinstance(k, str) and (k.startswith("Fn::") or k in INTRINSIC_KEYS) for k in value)
    )


def template_value(value: Any) -> bool:
    """Whether ``value`` holds a template token or is an intrinsic function object: something filled before
    import."""
    return intrinsic(value) or (isinstance(value, str) and TEMPLATE_TOKEN.search(value) is not None)


FUNCTION_ARN_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}")
_LAMBDA_ARN = re.compile(r"arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]+)?")
_QUEUE_ARN = re.compile(r"arn:aws[a-z-]*:connect:[a-z0-9-]+:\d{12}:instance/[0-9a-f-]+/(queue|agent)/[0-9a-f-]+")
_CONNECT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A resource's ID in Connect (lower-case hexadecimal, as a UUID)."""
_JSONPATH = re.compile(r"\$\.[A-Za-z0-9_.\[\]'\"-]+")
_PLACEHOLDER_ONLY = re.compile(r"\$\{[A-Za-z0-9_:.]+\}")
_E164 = re.compile(r"\+[1-9]\d{1,14}")
_DTMF_DIGITS = re.compile(r"[0-9,*#]+")

# Every non-terminal action may branch on NoMatchingError, "if no other Error matches": exports carry it even where
# the reference lists no errors (UpdateFlowAttributes), so the catch-all is accepted everywhere.
CATCH_ALL_ERROR = "NoMatchingError"

COMPARE_OPERATORS = frozenset(
    {
        "Equals",
        "NumberGreaterThan",
        "NumberGreaterOrEqualTo",
        "NumberLessThan",
        "NumberLessOrEqualTo",
        "TextStartsWith",
        "TextEndsWith",
        "TextContains",
        # Not in the reference's list; reported accepted by Connect, so accepted here.
        "KeyExists",
    }
)

# The flow types Connect distinguishes, as a DescribeContactFlow's Type, the designer's Metadata.type, or (a module)
# a top-level Settings object, grouped as the reference's restrictions speak of them.
FLOW_FAMILIES = {
    "CONTACT_FLOW": "inbound",
    "contactFlow": "inbound",
    "CUSTOMER_QUEUE": "customer queue",
    "customerQueue": "customer queue",
    "CUSTOMER_HOLD": "hold",
    "customerHold": "hold",
    "AGENT_HOLD": "hold",
    "agentHold": "hold",
    "CUSTOMER_WHISPER": "whisper",
    "customerWhisper": "whisper",
    "AGENT_WHISPER": "whisper",
    "agentWhisper": "whisper",
    "OUTBOUND_WHISPER": "whisper",
    "outboundWhisper": "whisper",
    "AGENT_TRANSFER": "transfer",
    "agentTransfer": "transfer",
    "QUEUE_TRANSFER": "transfer",
    "queueTransfer": "transfer",
}
MODULE = "module"


@dataclass(frozen=True)
class CheckContext:
    """What the template declares: function logical IDs (``${X.Arn}``) and all names (``${X}``); ``None`` is
    unknown, and skips the check. ``templated`` says the flow is a template whose references (tokens such as
    ``%%X%%``, ``{{x}}``, ``${x}``, blanks, words for a person to replace) are filled before import."""

    known_functions: set[str] | None
    known_names: set[str] | None
    templated: bool = False

    def reference_left_open(self, value: Any) -> bool:
        """Whether a reference (an ARN, an ID) goes unchecked: a token, or anything at all in a template, whose
        references (blank, or ``ENTER LAMBDA HERE``) are filled before import."""
        return self.templated or self.placeholder(value)

    def placeholder(self, value: Any) -> bool:
        """Whether ``value`` holds a template token (or is an intrinsic function object): its check is left to the
        token rules."""
        return template_value(value)


_Check = Callable[[Mapping[str, Any], CheckContext], list[str]]


def _check_nothing(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    return []


@dataclass(frozen=True)
class ActionSpec:
    """One action type.

    ``required`` and ``optional`` are the parameters it takes (a missing required one is an error, one it does not
    take a warning, unless ``open_parameters``: the reference has no page for it, so any is accepted; of each group in
    ``exactly_one`` it takes one), ``check`` the rules on their values and ``advise`` what is only worth a warning (a
    value past a bound no source gives). ``errors``
    are the error types the reference or the exports give it (``open_errors``: the reference does not pin them
    down, so others are accepted too). ``conditions`` says whether it branches on conditions, ``operators`` and
    ``operands`` what those may be (``None``: any), ``required_operands`` which it must have. ``terminal`` actions
    end the flow with empty Transitions; ``next_action_optional`` ones may omit NextAction. ``unavailable_in`` lists
    the flow families (:data:`FLOW_FAMILIES`) the reference says it does not run in. ``source`` is its page of the
    reference, ``note`` where the reference is silent or the exports disagree, ``aliases`` its other spellings.
    """

    source: str
    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    exactly_one: tuple[tuple[str, ...], ...] = ()
    check: _Check = _check_nothing
    advise: _Check = _check_nothing
    open_parameters: bool = False
    errors: frozenset[str] = frozenset()
    open_errors: bool = False
    conditions: bool = False
    operators: frozenset[str] | None = None
    operands: frozenset[str] | None = None
    required_operands: frozenset[str] = frozenset()
    terminal: bool = False
    next_action_optional: bool = False
    unavailable_in: frozenset[str] = frozenset()
    note: str = ""
    aliases: tuple[str, ...] = field(default=())

    @property
    def parameters(self) -> frozenset[str]:
        return self.required | self.optional


# --- value checks -------------------------------------------------------------------------------------------


def is_jsonpath(value: Any) -> bool:
    """A single JSONPath reference such as ``$.Attributes.X`` (a value "defined dynamically")."""
    return isinstance(value, str) and _JSONPATH.fullmatch(value) is not None


def _is_int_string(value: Any, low: int, high: int) -> bool:
    return isinstance(value, str) and value.isdigit() and low <= int(value) <= high


def _require_string(params: Mapping[str, Any], name: str) -> list[str]:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        return [f"{name} must be a non-empty string"]
    return []


def _flat_string_map(value: Any, name: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{name} must be an object"]
    bad = [k for k, v in value.items() if not isinstance(v, str)]
    return [f"{name}.{k} must be a string (flat string map)" for k in bad]


def _skip(value: Any, ctx: CheckContext, *, dynamic: bool = True) -> bool:
    """Whether a value is not checked here: absent, a template token, or (when allowed) a single JSONPath."""
    return value is None or ctx.placeholder(value) or (dynamic and is_jsonpath(value))


def _one_of(name: str, allowed: Iterable[str], *, dynamic: bool = False) -> _Check:
    choices = tuple(allowed)

    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        value = params.get(name)
        if _skip(value, ctx, dynamic=dynamic) or value in choices:
            return []
        return [f"{name} must be one of {', '.join(choices)}, not {value!r}"]

    return check


def _int_string(name: str, low: int, high: int, *, dynamic: bool = False) -> _Check:
    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        value = params.get(name)
        if _skip(value, ctx, dynamic=dynamic) or _is_int_string(value, low, high):
            return []
        also = " (or one JSONPath)" if dynamic else ""
        return [f"{name} must be a string holding an integer {low}–{high}{also}, not {value!r}"]

    return check


def _past_bound(name: str, bound_name: str) -> _Check:
    """A warning (an :attr:`ActionSpec.advise` check) when ``name`` holds a whole number outside an unsourced
    bound of :data:`BOUNDS`."""
    bound = BOUNDS[bound_name]

    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        value = params.get(name)
        if not isinstance(value, str) or not value.isdigit() or bound.low <= int(value) <= bound.high:
            return []
        return [f"{name} {value} is outside {bound.low}–{bound.high}: {bound.why}"]

    return check


def _jsonpath_only(name: str) -> _Check:
    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        value = params.get(name)
        if _skip(value, ctx):
            return []
        return [f"{name} must be a single JSONPath ($.…): it cannot be set statically, not {value!r}"]

    return check


def _string_map(name: str) -> _Check:
    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        return [] if name not in params else _flat_string_map(params[name], name)

    return check


def _object(name: str) -> _Check:
    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        return [] if name not in params or isinstance(params[name], dict) else [f"{name} must be an object"]

    return check


def _at_most_one(*names: str) -> _Check:
    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        given = [n for n in names if n in params]
        return [] if len(given) <= 1 else [f"at most one of {', '.join(names)} is allowed, found {', '.join(given)}"]

    return check


def _all(*checks: _Check) -> _Check:
    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        return [reason for one in checks for reason in one(params, ctx)]

    return check


def _check_lambda(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    reasons: list[str] = []
    arn = params.get("LambdaFunctionARN")
    match = FUNCTION_ARN_PLACEHOLDER.fullmatch(arn) if isinstance(arn, str) else None
    if match is not None:
        name = match.group(1)
        if ctx.known_functions is not None and name not in ctx.known_functions and not ctx.templated:
            known = ", ".join(sorted(ctx.known_functions)) or "none"
            reasons.append(f"LambdaFunctionARN names {name}, not a function of the template (known: {known})")
    elif (
        arn is not None
        and not (is_jsonpath(arn) or ctx.reference_left_open(arn))
        and not (isinstance(arn, str) and _LAMBDA_ARN.fullmatch(arn))
    ):
        reasons.append(
            f"LambdaFunctionARN {arn!r} is neither a Lambda function ARN, a single JSONPath, "
            "nor a ${Function.Arn} placeholder"
        )
    invocation = params.get("InvocationType", "SYNCHRONOUS")
    if invocation not in ("SYNCHRONOUS", "ASYNCHRONOUS"):
        reasons.append(f"InvocationType must be SYNCHRONOUS or ASYNCHRONOUS, not {invocation!r}")
    name = "InvokeLambdaFunction.InvocationTimeLimitSeconds"
    bound = BOUNDS[name + (".ASYNCHRONOUS" if invocation == "ASYNCHRONOUS" else "")]
    seconds = params.get("InvocationTimeLimitSeconds")
    if seconds is not None and not ctx.placeholder(seconds) and not _is_int_string(seconds, bound.low, bound.high):
        reasons.append(
            f"InvocationTimeLimitSeconds must be a string holding an integer {bound.low}–{bound.high}, "
            f"not {seconds!r} ({bound.source})"
        )
    if "LambdaInvocationAttributes" in params:
        reasons += _flat_string_map(params["LambdaInvocationAttributes"], "LambdaInvocationAttributes")
    if "ResponseValidation" in params:
        validation = params["ResponseValidation"]
        if not isinstance(validation, dict) or validation.get("ResponseType") not in ("STRING_MAP", "JSON"):
            reasons.append("ResponseValidation.ResponseType must be STRING_MAP or JSON")
    return reasons


@dataclass(frozen=True)
class ResourceKind:
    """What a parameter that names a resource may hold: an ARN of ``service`` whose resource part matches
    ``resource`` (its account twelve digits, or ``aws`` for what AWS manages, such as the step-by-step guides'
    views), a bare ID when ``ids`` (what the console writes when the resource is picked), a single JSONPath, or
    blank; ``what`` names it in a reason."""

    what: str
    service: str
    resource: re.Pattern[str]
    ids: re.Pattern[str] | None = None
    managed: bool = False


_ARN = re.compile(r"arn:(aws[a-z-]*):([a-z0-9-]+):([a-z0-9-]*):([^:]*):(.+)", re.DOTALL)
_ACCOUNT = re.compile(r"\d{12}")
# An upper-case word of words joined by underscores (FORM_VIEW_ARN, QUEUE_ID): a name left for a person to fill,
# where Connect's IDs are lower-case hexadecimal and its names (voices, bot aliases) have no underscores.
_SCREAMING_NAME = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")
_VIEW_ID = re.compile(r"[a-z0-9][a-z0-9_-]*")


def _connect(what: str, kind: str, *, ids: re.Pattern[str] | None = _CONNECT_ID) -> ResourceKind:
    return ResourceKind(what, "connect", re.compile(rf"instance/[^/]+/{kind}/[^/]+"), ids)


QUEUE = _connect("queue", "queue")
AGENT = ResourceKind("agent", "connect", re.compile(r"instance/[^/]+/agent/[^/]+"), re.compile(r"[^\s]+"))
# A flow or module may be named by its name too: the simulator's library and the console's metadata know flows so.
_NAMED = re.compile(r".*\S.*", re.DOTALL)
CONTACT_FLOW = _connect("flow", "contact-flow", ids=_NAMED)
FLOW_MODULE = _connect("flow module", "flow-module", ids=_NAMED)
HOURS = _connect("hours of operation", "operating-hours")
PROMPT = _connect("prompt", "prompt")
DATA_TABLE = _connect("data table", "data-table")
VIEW = ResourceKind("view", "connect", re.compile(r"(instance/[^/]+/)?view/[^/]+"), _VIEW_ID, managed=True)
LEX_ALIAS = ResourceKind("Lex V2 bot alias", "lex", re.compile(r"bot-alias/[^/]+/[^/]+"))
ASSISTANT = ResourceKind("Q in Connect assistant", "wisdom", re.compile(r"assistant/[^/]+"))


def resource_reason(name: str, value: Any, kind: ResourceKind, ctx: CheckContext) -> str | None:
    """Why ``value`` of the parameter ``name`` names no ``kind`` (an ARN that does not parse, of another service
    or resource type, an account not twelve digits, a name left for a person to fill), or None when it may."""
    if ctx.reference_left_open(value) or is_jsonpath(value) or value == "":
        return None
    if not isinstance(value, str):
        return f"{name} must be a string naming a {kind.what}, not {value!r}"
    match = _ARN.fullmatch(value)
    if match is not None:
        _, service, _, account, resource = match.groups()
        if service != kind.service or not kind.resource.fullmatch(resource):
            return f"{name} names no {kind.what}: {value!r} is an ARN of another service or resource type"
        if not (_ACCOUNT.fullmatch(account) or (kind.managed and account == "aws")):
            return f"{name} names no {kind.what}: the account of {value!r} is not twelve digits"
        return None
    if _SCREAMING_NAME.fullmatch(value):
        return f"leftover template value {value} in {name}: a name for a person to replace with a {kind.what}"
    if kind.ids is not None and kind.ids.fullmatch(value):
        return None
    return f"{name} names no {kind.what}: {value!r} is neither its ARN, its ID, nor a single JSONPath"


def _resource(path: str, kind: ResourceKind) -> _Check:
    """The check that the parameter at ``path`` names a ``kind``: ``A.B`` looks inside an object, ``A.*`` at
    every value of one, ``A[].B`` inside every item of a list."""
    head, _, rest = path.partition(".")
    each = head.endswith("[]")
    head = head.removesuffix("[]")

    def check(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
        if head not in params:
            return []
        value = params[head]
        if not rest:
            reason = resource_reason(head, value, kind, ctx)
            return [] if reason is None else [reason]
        items = value if each and isinstance(value, list) else [value]
        reasons: list[str] = []
        for item in items:
            if not isinstance(item, dict) or ctx.placeholder(item):
                continue
            inner = item.items() if rest == "*" else [(rest, item[rest])] if rest in item else []
            for key, found in inner:
                reason = resource_reason(f"{head}.{key}", found, kind, ctx)
                reasons += [] if reason is None else [reason]
        return reasons

    return check


def _check_media(media: Any) -> list[str]:
    if not isinstance(media, dict):
        return ["Media must be an object {Uri, SourceType, MediaType}"]
    reasons = [f"Media.{r}" for r in _require_string(media, "Uri")]
    if media.get("SourceType") != "S3":
        reasons.append(f"Media.SourceType must be S3, not {media.get('SourceType')!r}")
    if media.get("MediaType") != "Audio":
        reasons.append(f"Media.MediaType must be Audio, not {media.get('MediaType')!r}")
    return reasons


PROMPT_KINDS = ("Text", "SSML", "PromptId", "Media")


def _check_prompt_kinds(params: Mapping[str, Any], *, required: bool) -> list[str]:
    given = [k for k in PROMPT_KINDS if k in params]
    if len(given) > 1:
        return [f"exactly one of Text, SSML, PromptId, Media is allowed, found {', '.join(given)}"]
    if not given:
        return ["exactly one of Text, SSML, PromptId, Media is required"] if required else []
    kind = given[0]
    if kind == "Media":
        return _check_media(params["Media"])
    # A console export may leave a prompt empty (PromptId ""); Connect stores it, so only the type is checked.
    return [] if isinstance(params[kind], str) else [f"{kind} must be a string"]


def _check_message(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    given = [k for k in PROMPT_KINDS if k in params]
    if len(given) != 1:
        return []
    return _check_media(params["Media"]) if given[0] == "Media" else _require_string(params, given[0])


def _check_get_input(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    reasons = _check_prompt_kinds(params, required=False)
    if "StoreInput" in params and params["StoreInput"] not in ("True", "False"):
        reasons.append('StoreInput must be "True" or "False"')
    seconds = params.get("InputTimeLimitSeconds")
    if not _skip(seconds, ctx) and not _is_int_string(seconds, 1, 2**31):
        reasons.append(f"InputTimeLimitSeconds must be a string holding a whole number of seconds, not {seconds!r}")
    return reasons


def _check_messages(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    messages = params.get("Messages")
    if messages is None:
        return []
    if not isinstance(messages, list) or not messages:
        return ["Messages must be a non-empty list of {Text}, {SSML}, {PromptId} or {Media}"]
    reasons: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            reasons.append(f"Messages[{index}] must be an object")
            continue
        reasons += [f"Messages[{index}]: {r}" for r in _check_prompt_kinds(message, required=True)]
    return reasons


def _check_streaming(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    reasons: list[str] = []
    if params.get("MediaStreamingState") not in ("Enabled", "Disabled"):
        reasons.append(f"MediaStreamingState must be Enabled or Disabled, not {params.get('MediaStreamingState')!r}")
    if params.get("MediaStreamType") != "Audio":
        reasons.append(f"MediaStreamType must be Audio, not {params.get('MediaStreamType')!r}")
    participants = params.get("Participants")
    if not isinstance(participants, list) or not participants:
        return [*reasons, "Participants must be a non-empty list"]
    for participant in participants:
        if not isinstance(participant, dict) or participant.get("ParticipantType") != "Customer":
            reasons.append("each participant must have ParticipantType Customer")
            continue
        directions = participant.get("MediaDirections")
        if (
            not isinstance(directions, list)
            or not directions
            or not set(directions) <= {"From", "To"}
            or len(set(directions)) != len(directions)
        ):
            reasons.append("MediaDirections must be a non-empty list of distinct From/To")
    return reasons


def _check_attributes(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    attributes = params.get("Attributes")
    if attributes is None:
        return []
    reasons = _flat_string_map(attributes, "Attributes")
    if isinstance(attributes, dict) and not attributes:
        reasons.append("Attributes must set at least one attribute")
    if params.get("TargetContact", "Current") not in ("Current", "Related"):
        reasons.append("TargetContact must be Current or Related")
    return reasons


def _check_flow_attributes(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    attributes = params.get("FlowAttributes")
    if attributes is None:
        return []
    if not isinstance(attributes, dict) or not attributes:
        return ["FlowAttributes must be an object setting at least one attribute"]
    return [
        f"FlowAttributes.{name} must be an object holding a Value"
        for name, attribute in attributes.items()
        if not isinstance(attribute, dict) or "Value" not in attribute
    ]


def _check_compare(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    value = params.get("ComparisonValue")
    if _skip(value, ctx):
        return []
    return [f"ComparisonValue must be a single JSONPath ($.…), not {value!r}"]


def _check_target_queue(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    given = [k for k in ("QueueId", "AgentId") if k in params]
    if len(given) != 1:
        return []
    value = params[given[0]]
    if ctx.reference_left_open(value):
        return []
    if given[0] == "AgentId":
        reason = resource_reason("AgentId", value, AGENT, ctx)
        return [] if reason is None or value == "" else [reason]
    reason = resource_reason("QueueId", value, QUEUE, ctx) if isinstance(value, str) and value else None
    if reason is not None and (value.startswith("arn:") or _SCREAMING_NAME.fullmatch(value)):
        return [reason]
    if not isinstance(value, str) or not (
        _PLACEHOLDER_ONLY.fullmatch(value)
        or _QUEUE_ARN.fullmatch(value)
        or _CONNECT_ID.fullmatch(value)
        or is_jsonpath(value)
        or ctx.reference_left_open(value)
    ):
        return [f"{given[0]} must be an ID, an ARN, a single JSONPath or a ${{Name}} placeholder, not {value!r}"]
    return []


_EVENT_HOOKS = (
    "AgentHold",
    "AgentWhisper",
    "CustomerHold",
    "CustomerQueue",
    "CustomerRemaining",
    "CustomerWhisper",
    "DefaultAgentUI",
    "DisconnectAgentUI",
    "PauseContact",
    "ResumeContact",
)


def _check_event_hooks(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    hooks = params.get("EventHooks")
    if hooks is None:
        if "EventHooksConfiguration" not in params:
            return ["EventHooks or EventHooksConfiguration must be set: UpdateContactEventHooks requires one"]
        return _check_hooks_configuration(params["EventHooksConfiguration"])
    if not isinstance(hooks, dict) or len(hooks) != 1:
        return ["EventHooks must be an object with exactly one entry (event type: flow ID or ARN)"]
    ((event, flow),) = hooks.items()
    reasons: list[str] = []
    if event not in _EVENT_HOOKS:
        reasons.append(f"EventHooks key must be one of {', '.join(_EVENT_HOOKS)}, not {event!r}")
    if not isinstance(flow, str):
        reasons.append(f"EventHooks.{event} must be a flow ID or ARN (a string)")
    return reasons


def _check_hooks_configuration(configuration: Any) -> list[str]:
    """The console's form that turns a hook off (``{"CustomerWhisper": {"DisableExecution": "true"}}``), as AWS's
    Amazon Connect starter kits export it (docs/flows.md, *The console's own forms*)."""
    if not isinstance(configuration, dict) or not configuration:
        return ['EventHooksConfiguration must be an object of event type: {DisableExecution: "true" or "false"}']
    reasons: list[str] = []
    for event, setting in configuration.items():
        if event not in _EVENT_HOOKS:
            reasons.append(f"EventHooksConfiguration key must be one of {', '.join(_EVENT_HOOKS)}, not {event!r}")
        disable = setting.get("DisableExecution") if isinstance(setting, dict) else None
        if disable not in ("true", "false"):
            reasons.append(f'EventHooksConfiguration.{event}.DisableExecution must be "true" or "false"')
    return reasons


VOICE_ID_ENDED = (
    "Voice ID's support ended on 2026-05-20 (" + ADMIN_GUIDE + "amazonconnect-voiceid-end-of-support.html): "
    "the block is still part of the flow language, but the Voice ID resources it needs can no longer be reached, so "
    "plan for its error branch"
)


def _voice_id_ended(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    """A warning on every Voice ID block: Connect still stores the flow (its reference keeps the block's page)."""
    return [VOICE_ID_ENDED]


_AGENTIC_IDS = ("WorkspaceId", "ApplicationId", "Alias")


def _check_agentic(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    """The Agentic CX block's application (``AgentConfiguration``: workspace, application and alias, each a string,
    and ``ContextVariables``, a map of names to values or JSONPaths), as the console exports it."""
    configuration = params.get("AgentConfiguration")
    if configuration is None:
        return []
    if not isinstance(configuration, dict):
        return ["AgentConfiguration must be an object (WorkspaceId, ApplicationId, Alias, ContextVariables)"]
    reasons = [
        f"AgentConfiguration.{name} must be a string, not {configuration[name]!r}"
        for name in _AGENTIC_IDS
        if name in configuration and not isinstance(configuration[name], str)
    ]
    variables = configuration.get("ContextVariables")
    if variables is not None:
        reasons += _flat_string_map(variables, "AgentConfiguration.ContextVariables")
    return reasons


def _check_routing_behavior(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    given = [k for k in ("QueuePriority", "QueueTimeAdjustmentSeconds") if k in params]
    if len(given) != 1:
        return []
    value = params[given[0]]
    if ctx.placeholder(value):
        return []
    if given[0] == "QueuePriority":
        if _is_int_string(value, 1, 2**63 - 1):
            return []
        return [f"QueuePriority must be an integer above 0, not {value!r}"]
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        return []
    return [f"QueueTimeAdjustmentSeconds must be an integer, not {value!r}"]


def _check_third_party(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    reasons = _one_of("ContinueFlowExecution", ("True", "False"))(params, ctx)
    reasons += _int_string("ThirdPartyConnectionTimeLimitSeconds", 0, 2**31, dynamic=True)(params, ctx)
    number = params.get("ThirdPartyPhoneNumber")
    if not _skip(number, ctx) and not (isinstance(number, str) and _E164.fullmatch(number)):
        reasons.append(f"ThirdPartyPhoneNumber must be an E.164 number (+…) or a single JSONPath, not {number!r}")
    digits = params.get("ThirdPartyDTMFDigits")
    if not _skip(digits, ctx) and not (isinstance(digits, str) and _DTMF_DIGITS.fullmatch(digits)):
        reasons.append("ThirdPartyDTMFDigits must be digits 0-9 , * #, or a single JSONPath")
    return reasons


def _advise_third_party(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    name = "TransferParticipantToThirdParty."
    reasons = _past_bound("ThirdPartyConnectionTimeLimitSeconds", name + "ThirdPartyConnectionTimeLimitSeconds")(
        params, ctx
    )
    digits = params.get("ThirdPartyDTMFDigits")
    bound = BOUNDS[name + "ThirdPartyDTMFDigits"]
    if isinstance(digits, str) and not _skip(digits, ctx) and len(digits) > bound.high:
        reasons.append(f"ThirdPartyDTMFDigits holds {len(digits)} digits, more than {bound.high}: {bound.why}")
    return reasons


def _check_wait(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    if "TimeoutSeconds" in params and "TimeLimitSeconds" in params:
        return ["at most one of TimeLimitSeconds and TimeoutSeconds is allowed"]
    name = "TimeoutSeconds" if "TimeoutSeconds" in params else "TimeLimitSeconds"
    bound = BOUNDS["Wait.TimeoutSeconds"]
    reasons = _int_string(name, bound.low, bound.high, dynamic=True)(params, ctx)
    events = params.get("Events")
    if events is not None and (
        not isinstance(events, list) or not set(events) <= {"CustomerReturned", "BotParticipantDisconnected"}
    ):
        reasons.append("Events must be a list of CustomerReturned, BotParticipantDisconnected")
    return reasons


def _check_lex(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    reasons = _check_prompt_kinds(params, required=False)
    bots = [k for k in ("LexV2Bot", "LexBot") if k in params]
    if bots == ["LexV2Bot"]:
        bot = params["LexV2Bot"]
        alias = bot.get("AliasArn") if isinstance(bot, dict) else None
        if not isinstance(alias, str) or not (alias or ctx.templated):
            reasons.append("LexV2Bot.AliasArn must be a non-empty string")
    elif bots == ["LexBot"]:
        bot = params["LexBot"]
        if not isinstance(bot, dict) or not all(isinstance(bot.get(k), str) for k in ("Name", "Region", "Alias")):
            reasons.append("LexBot must be an object {Name, Region, Alias} of strings")
    if "LexSessionAttributes" in params:
        reasons += _flat_string_map(params["LexSessionAttributes"], "LexSessionAttributes")
    return reasons


def _check_recording(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    behavior = params.get("RecordingBehavior")
    if behavior is None:
        return []
    if not isinstance(behavior, dict):
        return ["RecordingBehavior must be an object"]
    recorded = behavior.get("RecordedParticipants", [])
    if not isinstance(recorded, list) or not set(recorded) <= {"Agent", "Customer"}:
        return ["RecordingBehavior.RecordedParticipants must be a list of Agent, Customer"]
    return []


def _check_view(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    resource = params.get("ViewResource")
    reasons: list[str] = []
    if resource is not None and (not isinstance(resource, dict) or not isinstance(resource.get("Id"), str)):
        reasons.append("ViewResource must be an object with an Id")
    seconds = params.get("InvocationTimeLimitSeconds")
    # The reference shows a number, exports a string: both are accepted.
    if not _skip(seconds, ctx) and not (isinstance(seconds, int) or _is_int_string(seconds, 1, 2**31)):
        reasons.append(f"InvocationTimeLimitSeconds must be a whole number of seconds, not {seconds!r}")
    return reasons


_METRIC_TYPES = (
    "NumberOfAgentsAvailable",
    "NumberOfAgentsStaffed",
    "NumberOfAgentsOnline",
    "OldestContactInQueueAgeSeconds",
    "NumberOfContactsInQueue",
)

# --- action types -------------------------------------------------------------------------------------------

_NO_MATCH = frozenset({CATCH_ALL_ERROR})
_QUEUE_FULL = frozenset({"QueueAtCapacity", CATCH_ALL_ERROR})
_PROMPT = frozenset(PROMPT_KINDS)
_NOT_PINNED = "the reference gives the parameters and errors only in part: others are accepted"
_NEWER = "no page of the flow-language reference: its parameters, errors and conditions are accepted as exported"


def _page(slug: str) -> str:
    return f"{REFERENCE}{slug}.html"


def _contact(name: str) -> str:
    return _page(f"contact-actions-{name.lower()}")


def _control(name: str) -> str:
    return _page(f"flow-control-actions-{name.lower()}")


def _interaction(name: str) -> str:
    return _page(f"interactions-{name.lower()}")


def _participant(name: str) -> str:
    return _page(f"participant-actions-{name.lower()}")


def _partly_pinned(
    source: str, optional: Iterable[str], *, check: _Check = _check_nothing, errors: frozenset[str] = _NO_MATCH
) -> ActionSpec:
    """An action whose parameters and errors the reference gives only in part: all optional, other errors accepted."""
    return ActionSpec(
        source, optional=frozenset(optional), check=check, errors=errors, open_errors=True, note=_NOT_PINNED
    )


class _Conditions(TypedDict):
    """The fields of an :class:`ActionSpec` that say how it branches on conditions."""

    conditions: bool
    operators: frozenset[str]
    operands: frozenset[str] | None
    required_operands: frozenset[str]


def _equals(*operands: str, required: Iterable[str] | None = None) -> _Conditions:
    """Conditions that compare with Equals against one of ``operands`` (none given: any), the flow having a branch
    for each of ``required`` (by default, each of the operands)."""
    return {
        "conditions": True,
        "operators": frozenset({"Equals"}),
        "operands": frozenset(operands) if operands else None,
        "required_operands": frozenset(operands if required is None else required),
    }


def _case(slug: str, *parameters: str, errors: Iterable[str] = (), open_errors: bool = False) -> ActionSpec:
    """A Cases action: it takes the case's fields and may link the contact to the case (``ContactToLink``, which
    contact: the console writes ``Current``, undocumented by the reference), and fails when the contact is not
    linked to one."""
    return ActionSpec(
        _page(slug),
        optional=frozenset({"LinkContactToCase", "ContactToLink", *parameters, "CaseRequestFields"}),
        errors=frozenset({*errors, "ContactNotLinked", CATCH_ALL_ERROR}),
        open_errors=open_errors,
    )


def _data_table(action: str, *parameters: str, conditions: bool = True) -> ActionSpec:
    """One of the Data Table block's actions (Evaluate, List, Write): no page of the flow-language reference, so its
    parameters (a table named by ARN, ID or JSONPath, and those an export or the block's page gives), errors and
    conditions are accepted as exported."""
    return ActionSpec(
        ADMIN_GUIDE + "data-table-block.html",
        optional=frozenset({"DataTableId", *parameters}),
        check=_resource("DataTableId", DATA_TABLE),
        open_parameters=True,
        errors=_NO_MATCH,
        open_errors=True,
        conditions=conditions,
        note=_NEWER + f" (the Data Table block's {action} action)",
    )


_PROFILE_DATA = frozenset({"ProfileRequestData", "ProfileResponseData"})
_QUEUE_OR_AGENT = (_resource("QueueId", QUEUE), _resource("AgentId", AGENT))


def _profile(name: str, errors: frozenset[str] = _NO_MATCH) -> ActionSpec:
    """A Customer Profiles action: it takes the request and response data; the reference lists its errors in part."""
    return ActionSpec(_interaction(name), optional=_PROFILE_DATA, errors=errors, open_errors=True)


_SPECS: dict[str, ActionSpec] = {
    # --- participant actions ---------------------------------------------------------------------------------
    "ConnectParticipantWithLexBot": ActionSpec(
        _participant("ConnectParticipantWithLexBot"),
        optional=_PROMPT | {"LexV2Bot", "LexBot", "LexSessionAttributes", "LexInitilizationData", "LexTimeoutSeconds"},
        exactly_one=(("LexV2Bot", "LexBot"),),
        check=_all(_check_lex, _resource("LexV2Bot.AliasArn", LEX_ALIAS), _resource("PromptId", PROMPT)),
        errors=frozenset({"InputTimeLimitExceeded", "NoMatchingError", "NoMatchingCondition"}),
        conditions=True,
        note="conditions are the bot's intents; the reference spells LexInitilizationData so",
    ),
    "DisconnectParticipant": ActionSpec(_participant("DisconnectParticipant"), terminal=True),
    "GetParticipantInput": ActionSpec(
        _participant("GetParticipantInput"),
        required=frozenset({"InputTimeLimitSeconds"}),
        optional=_PROMPT
        | {"StoreInput", "InputValidation", "InputEncryption", "DTMFConfiguration", "TextToSpeechType"},
        check=_all(_check_get_input, _resource("PromptId", PROMPT)),
        advise=_past_bound("InputTimeLimitSeconds", "GetParticipantInput.InputTimeLimitSeconds"),
        errors=frozenset({"InputTimeLimitExceeded", "NoMatchingCondition", "NoMatchingError", "InvalidPhoneNumber"}),
        conditions=True,
        note="conditions are the digits pressed; StoreInput is absent from some exports, so optional; "
        "TextToSpeechType is seen in exports, not in the reference",
    ),
    "MessageParticipant": ActionSpec(
        _participant("MessageParticipant"),
        optional=_PROMPT | {"TextToSpeechType", "SkipWhenDTMFBufferEnabled"},
        exactly_one=(PROMPT_KINDS,),
        check=_all(_check_message, _resource("PromptId", PROMPT)),
        errors=_NO_MATCH,
        unavailable_in=frozenset({"hold"}),
        note="TextToSpeechType and SkipWhenDTMFBufferEnabled are seen in exports, not in the reference",
    ),
    "MessageParticipantIteratively": ActionSpec(
        _participant("MessageParticipantIteratively"),
        required=frozenset({"Messages"}),
        optional=frozenset({"InterruptFrequencySeconds", "ContinueMessagingDuringInterrupt"}),
        check=_all(_check_messages, _resource("Messages[].PromptId", PROMPT)),
        errors=_NO_MATCH,
        **_equals("MessagesInterrupted", required=()),
        next_action_optional=True,
        unavailable_in=frozenset({"inbound", "whisper", "transfer"}),
        note="loops until interrupted: exports omit NextAction; ContinueMessagingDuringInterrupt is written by the "
        "console, not in the reference",
    ),
    "ShowView": ActionSpec(
        _participant("ShowView"),
        required=frozenset({"ViewResource"}),
        optional=frozenset({"InvocationTimeLimitSeconds", "ViewData", "SensitiveDataConfiguration"}),
        check=_all(_check_view, _resource("ViewResource.Id", VIEW)),
        errors=frozenset({"NoMatchingError", "NoMatchingCondition", "TimeLimitExceeded"}),
        conditions=True,
        unavailable_in=frozenset({"hold", "whisper", "transfer"}),
        note="conditions depend on the view",
    ),
    "TransferParticipantToThirdParty": ActionSpec(
        _participant("TransferParticipantToThirdParty"),
        optional=frozenset(
            {
                "ThirdPartyPhoneNumber",
                "ThirdPartyConnectionTimeLimitSeconds",
                "ContinueFlowExecution",
                "ThirdPartyDTMFDigits",
                "CallerId",
                "VoiceConnector",
            }
        ),
        check=_check_third_party,
        advise=_advise_third_party,
        errors=frozenset({"CallFailed", "ConnectionTimeLimitExceeded", "NoMatchingError"}),
        note="the reference says ThirdPartyConnectionTimeoutSeconds, exports ThirdPartyConnectionTimeLimitSeconds; "
        "CallFailed and ConnectionTimeLimitExceeded are seen in exports",
    ),
    # --- flow control actions --------------------------------------------------------------------------------
    "CheckHoursOfOperation": ActionSpec(
        _control("CheckHoursOfOperation"),
        optional=frozenset({"HoursOfOperationId"}),
        check=_resource("HoursOfOperationId", HOURS),
        errors=_NO_MATCH,
        **_equals("True", "False"),
        unavailable_in=frozenset({"hold", "whisper"}),
    ),
    "CheckMetricData": ActionSpec(
        _control("CheckMetricData"),
        required=frozenset({"MetricType"}),
        optional=frozenset({"QueueId", "AgentId"}),
        check=_all(_one_of("MetricType", _METRIC_TYPES), _at_most_one("QueueId", "AgentId"), *_QUEUE_OR_AGENT),
        errors=frozenset({"NoMatchingError", "NoMatchingCondition"}),
        conditions=True,
        note="NoMatchingCondition is documented for the queue metrics only, exported for every metric",
    ),
    "CheckOutboundCallStatus": ActionSpec(
        _control("CheckOutboundCallStatus"),
        errors=_NO_MATCH,
        **_equals("CallAnswered", "VoicemailBeep", "VoicemailNoBeep", "NotDetected", required=()),
        note="outbound campaigns only",
    ),
    "CheckVoiceId": ActionSpec(
        _control("CheckVoiceId"),
        required=frozenset({"CheckVoiceIdOption"}),
        check=_one_of("CheckVoiceIdOption", ("enrollmentStatus", "voiceAuthentication", "fraudDetection")),
        advise=_voice_id_ended,
        errors=_NO_MATCH,
        conditions=True,
        note="the reference names the results by their labels (Not enrolled), exports without spaces: "
        "any operand is accepted",
    ),
    "Compare": ActionSpec(
        _control("Compare"),
        required=frozenset({"ComparisonValue"}),
        check=_check_compare,
        errors=frozenset({"NoMatchingCondition"}),
        conditions=True,
    ),
    "DistributeByPercentage": ActionSpec(
        _control("DistributeByPercentage"),
        errors=frozenset({"NoMatchingCondition"}),
        conditions=True,
        unavailable_in=frozenset({"hold", "whisper"}),
        note="the reference asks for a chain of NumericLessThan conditions; exports write NumberLessThan",
    ),
    "EndFlowExecution": ActionSpec(_control("EndFlowExecution"), terminal=True),
    "GetMetricData": ActionSpec(
        _control("GetMetricData"),
        optional=frozenset({"QueueId", "AgentId", "QueueChannel", "MetricsFilter"}),
        check=_all(_at_most_one("QueueId", "AgentId"), *_QUEUE_OR_AGENT),
        errors=_NO_MATCH,
        note="newer exports carry more filters than the reference lists",
    ),
    "Loop": ActionSpec(
        _control("Loop"),
        required=frozenset({"LoopCount"}),
        check=_int_string("LoopCount", 0, 2**31, dynamic=True),
        advise=_past_bound("LoopCount", "Loop.LoopCount"),
        **_equals("ContinueLooping", "DoneLooping"),
    ),
    "StartVoiceIdStream": ActionSpec(
        _control("StartVoiceIdStream"), advise=_voice_id_ended, errors=_NO_MATCH, unavailable_in=frozenset({"hold"})
    ),
    "TransferToFlow": ActionSpec(
        _control("TransferToFlow"),
        required=frozenset({"ContactFlowId"}),
        check=_resource("ContactFlowId", CONTACT_FLOW),
        errors=_NO_MATCH,
        unavailable_in=frozenset({"hold", "customer queue", "whisper"}),
    ),
    "UpdateFlowAttributes": ActionSpec(
        _control("UpdateFlowAttributes"),
        required=frozenset({"FlowAttributes"}),
        check=_check_flow_attributes,
        note="the reference says Errors: None; exports carry NoMatchingError",
    ),
    "UpdateFlowLoggingBehavior": ActionSpec(
        _control("UpdateFlowLoggingBehavior"),
        required=frozenset({"FlowLoggingBehavior"}),
        check=_one_of("FlowLoggingBehavior", ("Enabled", "Disabled")),
    ),
    "UpdateContactRoutingCriteria": ActionSpec(
        _control("UpdateRoutingCriteria"),
        required=frozenset({"RoutingCriteria"}),
        check=_object("RoutingCriteria"),
        errors=_NO_MATCH,
        open_errors=True,
        aliases=("UpdateRoutingCriteria",),
        note="the page is titled UpdateRoutingCriteria; exports use UpdateContactRoutingCriteria: both accepted",
    ),
    "Wait": ActionSpec(
        _control("Wait"),
        optional=frozenset({"TimeLimitSeconds", "TimeoutSeconds", "Events", "ContinueExecution"}),
        check=_check_wait,
        errors=frozenset({"NoMatchingError", "ParticipantNotFound"}),
        **_equals(required=("WaitCompleted",)),
        note="the reference says TimeoutSeconds, exports TimeLimitSeconds: both accepted",
    ),
    # --- interactions ----------------------------------------------------------------------------------------
    "AssociateContactToCustomerProfile": ActionSpec(
        _interaction("AssociateContactToCustomerProfile"),
        required=frozenset({"ProfileRequestData"}),
        optional=frozenset({"ProfileResponseData"}),
        errors=_NO_MATCH,
    ),
    "CreateCallbackContact": _partly_pinned(
        _interaction("CreateCallbackContact"),
        (
            "QueueId",
            "AgentId",
            "InitialCallDelaySeconds",
            "MaximumConnectionAttempts",
            "RetryDelaySeconds",
            "ContactFlowId",
            "CustomerCallbackNumber",
        ),
        check=_all(_at_most_one("QueueId", "AgentId"), *_QUEUE_OR_AGENT, _resource("ContactFlowId", CONTACT_FLOW)),
    ),
    "CreateCustomerProfile": _profile("CreateCustomerProfile"),
    "GetCalculatedAttributesForCustomerProfile": _profile("GetCalculatedAttributesForCustomerProfile"),
    "GetCustomerProfile": _profile(
        "GetCustomerProfile", frozenset({"MultipleFoundError", "NoneFoundError", "NoMatchingError"})
    ),
    "GetCustomerProfileObject": _profile("GetCustomerProfileObject", frozenset({"NoneFoundError", "NoMatchingError"})),
    "InvokeLambdaFunction": ActionSpec(
        _interaction("InvokeLambdaFunction"),
        required=frozenset({"LambdaFunctionARN", "InvocationTimeLimitSeconds"}),
        optional=frozenset({"InvocationType", "LambdaInvocationAttributes", "ResponseValidation"}),
        check=_check_lambda,
        errors=_NO_MATCH,
        note="LambdaFunctionARN may be static or dynamic ($.Attributes.X, $.FlowAttributes.X)",
    ),
    "UpdateCustomerProfile": _profile("UpdateCustomerProfile"),
    # --- contact actions -------------------------------------------------------------------------------------
    "CompleteOutboundCall": _partly_pinned(_contact("CompleteOutboundCall"), ("CallerId", "VoiceConnector")),
    "CreateCase": _case("createcase", "CaseTemplateId"),
    "CreateTask": _partly_pinned(
        _page("createtask"),
        (
            "Name",
            "Description",
            "ContactFlowId",
            "QuickConnectId",
            "Attributes",
            "References",
            "ScheduledTime",
            "TaskTemplateId",
            "DelaySeconds",
        ),
        check=_all(_string_map("Attributes"), _resource("ContactFlowId", CONTACT_FLOW)),
    ),
    "CreateWisdomSession": ActionSpec(
        _page("createwisdomsession"),
        optional=frozenset({"WisdomAssistantArn"}),
        check=_resource("WisdomAssistantArn", ASSISTANT),
        errors=_NO_MATCH,
        open_errors=True,
    ),
    "DequeueContactAndTransferToQueue": ActionSpec(
        _contact("DequeueContactAndTransferToQueue"),
        optional=frozenset({"QueueId", "AgentId"}),
        check=_all(_at_most_one("QueueId", "AgentId"), *_QUEUE_OR_AGENT),
        errors=_QUEUE_FULL,
        unavailable_in=frozenset({"inbound", "hold", "whisper", "transfer"}),
    ),
    "EndFlowModuleExecution": ActionSpec(
        _page("endflowmoduleexecution"), optional=frozenset({"Result", "ResultData"}), terminal=True
    ),
    "GetCase": _case(
        "getcase", "GetLastUpdatedCase", "CaseResponseFields", errors=("MultipleFound", "NoneFound"), open_errors=True
    ),
    "InvokeFlowModule": ActionSpec(
        _page("flow-language-actions-invoke-flow-module"),
        required=frozenset({"FlowModuleId"}),
        optional=frozenset({"Input"}),
        check=_all(_object("Input"), _resource("FlowModuleId", FLOW_MODULE)),
        errors=frozenset({"NoMatchingError", "NoMatchingCondition"}),
        conditions=True,
        note="conditions are the module's own results",
    ),
    "StartOutboundChatContact": ActionSpec(
        _contact("StartOutboundChatContact"),
        optional=frozenset(
            {
                "SourceEndpoint",
                "DestinationEndpoint",
                "ContactFlowArn",
                "ContactSubtype",
                "InitialSystemMessage",
                "RelatedContact",
            }
        ),
        check=_resource("ContactFlowArn", CONTACT_FLOW),
        errors=_NO_MATCH,
        open_errors=True,
        note="RelatedContact is written by the console, not in the reference",
    ),
    "TagContact": ActionSpec(
        _contact("TagContact"),
        required=frozenset({"Tags"}),
        check=_string_map("Tags"),
        note="the reference says Errors: None; the catch-all is accepted as everywhere",
    ),
    "TransferContactToAgent": ActionSpec(_contact("TransferContactToAgent"), errors=_NO_MATCH),
    "TransferContactToQueue": ActionSpec(
        _contact("TransferContactToQueue"),
        errors=_QUEUE_FULL,
        unavailable_in=frozenset({"whisper", "customer queue", "hold"}),
    ),
    "UntagContact": ActionSpec(
        _contact("UnTagContact"),
        optional=frozenset({"TagKeys"}),
        errors=_NO_MATCH,
        aliases=("UnTagContact",),
        note="the page spells it UnTagContact, the service UntagContact: both accepted",
    ),
    "UpdateCase": _case("updatecase", "CaseId"),
    "UpdateContactAttributes": ActionSpec(
        _contact("UpdateContactAttributes"),
        required=frozenset({"Attributes"}),
        optional=frozenset({"TargetContact"}),
        check=_check_attributes,
        errors=_NO_MATCH,
    ),
    "UpdateContactCallbackNumber": ActionSpec(
        _contact("UpdateContactCallbackNumber"),
        required=frozenset({"CallbackNumber"}),
        check=_jsonpath_only("CallbackNumber"),
        errors=frozenset({"InvalidCallbackNumber", "CallbackNumberNotDialable"}),
        unavailable_in=frozenset({"whisper", "hold"}),
    ),
    "UpdateContactData": ActionSpec(
        _contact("UpdateContactData"),
        optional=frozenset(
            {
                "LanguageCode",
                "Name",
                "Description",
                "CustomerId",
                "TargetContact",
                "IsVoiceIdStreamingEnabled",
                "IsFraudDetectionEnabled",
                "IsVoiceAuthenticationEnabled",
                "VoiceAuthenticationThreshold",
                "VoiceAuthenticationResponseTime",
                "FraudDetectionThreshold",
                "FraudDetectionWatchlistId",
                "RoutingCriteria",
                "Priority",
                "WisdomSessionArn",
            }
        ),
        errors=_NO_MATCH,
        note=_NOT_PINNED + "; WisdomSessionArn ($.Wisdom.SessionArn) is written by the console's Amazon Q in Connect "
        "block",
    ),
    "UpdateContactEventHooks": ActionSpec(
        _contact("UpdateContactEventHooks"),
        optional=frozenset({"EventHooks", "EventHooksConfiguration"}),
        check=_all(_check_event_hooks, _resource("EventHooks.*", CONTACT_FLOW)),
        errors=_NO_MATCH,
        note="the reference requires EventHooks; the console also writes EventHooksConfiguration alone (a hook "
        "turned off), which AWS's starter kits deploy",
    ),
    "UpdateContactMediaProcessing": _partly_pinned(
        _contact("UpdateContactMediaProcessing"), ("ChatProcessorSettings",)
    ),
    "UpdateContactMediaStreamingBehavior": ActionSpec(
        _contact("UpdateContactMediaStreamingBehavior"),
        required=frozenset({"MediaStreamingState", "MediaStreamType", "Participants"}),
        check=_check_streaming,
        errors=_NO_MATCH,
    ),
    "UpdateContactRecordingAndAnalyticsBehavior": _partly_pinned(
        _contact("UpdateContactRecordingAndAnalyticsBehavior"),
        ("VoiceBehavior", "ChatBehavior", "EmailBehavior"),
        errors=frozenset({"NoMatchingError", "InFlightRedactionConfigurationFailed"}),
    ),
    "UpdateContactRecordingBehavior": _partly_pinned(
        _contact("UpdateContactRecordingBehavior"),
        ("RecordingBehavior", "AnalyticsBehavior", "IVRRecordingBehavior"),
        check=_check_recording,
        errors=frozenset(),
    ),
    "ResumeContact": ActionSpec(_contact("ResumeContact"), errors=_NO_MATCH, open_errors=True),
    "UpdateContactRoutingBehavior": ActionSpec(
        _contact("UpdateContactRoutingBehavior"),
        optional=frozenset({"QueuePriority", "QueueTimeAdjustmentSeconds"}),
        exactly_one=(("QueuePriority", "QueueTimeAdjustmentSeconds"),),
        check=_check_routing_behavior,
        unavailable_in=frozenset({"transfer", "whisper", "customer queue", "hold"}),
    ),
    "UpdateContactTargetQueue": ActionSpec(
        _contact("UpdateContactTargetQueue"),
        optional=frozenset({"QueueId", "AgentId"}),
        exactly_one=(("QueueId", "AgentId"),),
        check=_check_target_queue,
        errors=_NO_MATCH,
    ),
    "UpdateContactTextToSpeechVoice": ActionSpec(
        _contact("UpdateContactTextToSpeechVoice"),
        required=frozenset({"TextToSpeechVoice"}),
        optional=frozenset({"TextToSpeechEngine", "TextToSpeechStyle"}),
        check=_one_of("TextToSpeechStyle", ("None", "Conversational", "Newscaster"), dynamic=True),
        note="the reference now asks for a NoMatchingError branch; older exports have none, so it is optional",
    ),
    "UpdatePreviousContactParticipantState": _partly_pinned(
        _contact("UpdatePreviousContactParticipantState"), ("PreviousContactParticipantState",)
    ),
    # --- newer than the reference's pages: the console exports them, the admin guide's blocks describe them ----
    "CheckSegmentMembershipForCustomerProfile": ActionSpec(
        ADMIN_GUIDE + "customer-profiles-block.html",
        optional=_PROFILE_DATA,
        open_parameters=True,
        errors=_NO_MATCH,
        open_errors=True,
        conditions=True,
        note=_NEWER + "; it branches on whether the profile is in the segment",
    ),
    "CreateContact": ActionSpec(
        REFERENCE + "API_CreateContact.html",
        optional=frozenset(
            {"Channel", "InitiationMethod", "RelatedContactId", "Attributes", "References", "Name", "Description"}
        ),
        open_parameters=True,
        errors=_NO_MATCH,
        open_errors=True,
        note=_NEWER + "; its parameters are named as the CreateContact API's",
    ),
    "CreatePersistentContactAssociation": ActionSpec(
        ADMIN_GUIDE + "create-persistent-contact-association-block.html",
        optional=frozenset({"RehydrationType", "SourceContactId"}),
        # The RehydrationType values of the CreatePersistentContactAssociation API, and the console's spelling of
        # the one a console export shows ("From Segment"): the flow language and the API do not spell it alike.
        check=_one_of("RehydrationType", ("ENTIRE_PAST_SESSION", "FROM_SEGMENT", "From Segment"), dynamic=True),
        errors=_NO_MATCH,
        note=_NEWER + "; the block has Success and Error branches, and voice and task contacts take Error",
    ),
    "EvaluateDataTableValues": _data_table("Evaluate", "Queries"),
    "ConnectParticipantWithAgenticCX": ActionSpec(
        ADMIN_GUIDE + "agentic-cx-block.html",
        optional=frozenset({"AgentConfiguration", "SpeechRecognitionConfiguration", "AudioFillerConfiguration"}),
        check=_check_agentic,
        errors=frozenset({"NoMatchingError", "NoMatchingCondition", "InputTimeLimitExceeded"}),
        open_errors=True,
        **_equals("Escalation", required=()),
        note=_NEWER + " (the Agentic CX block); its parameters, its Escalation condition and its three errors are a "
        "console export's of 2026-09-10 (tests/data/flows/sample-aicc-builder-for-amazon-connect-ai-agent)",
    ),
    "CheckSecurityStatus": ActionSpec(
        ADMIN_GUIDE + "check-voice-id.html",
        open_parameters=True,
        advise=_voice_id_ended,
        errors=_NO_MATCH,
        open_errors=True,
        conditions=True,
        note=_NEWER + " (the Check Voice ID block as an older CreateContactFlow request writes it, branching on "
        "Authenticated, NotAuthenticated, Inconclusive, OptedOut, NotEnrolled)",
    ),
    "ListDataTableValues": _data_table("List", "PrimaryKeyGroups"),
    "RenderMessageTemplate": ActionSpec(
        ADMIN_GUIDE + "contact-block-definitions.html",
        open_parameters=True,
        errors=_NO_MATCH,
        open_errors=True,
        note=_NEWER + "; no block page names its parameters, so any is accepted",
    ),
    "SetSecurityBehavior": ActionSpec(
        ADMIN_GUIDE + "set-voice-id.html",
        optional=frozenset({"SecurityBehaviorOption", "VoiceAuthentication"}),
        open_parameters=True,
        advise=_voice_id_ended,
        errors=_NO_MATCH,
        open_errors=True,
        note=_NEWER + " (the Set Voice ID block as an older CreateContactFlow request writes it)",
    ),
    "UpsertDataTableValues": _data_table("Write", "LockVersion", "DataTableUpsertAttributes", conditions=False),
    "StartOutboundEmailContact": ActionSpec(
        REFERENCE + "API_StartOutboundEmailContact.html",
        optional=frozenset({"FromEmailAddress", "DestinationEmailAddress", "AdditionalRecipients", "EmailMessage"}),
        open_parameters=True,
        errors=_NO_MATCH,
        open_errors=True,
        note=_NEWER + " (the Send message block on the email channel); its parameters are named as the API's",
    ),
}

# The action types the console exports that the flow language's reference has no page for.
NEWER_TYPES = frozenset(
    {
        "CheckSegmentMembershipForCustomerProfile",
        "CreateContact",
        "CreatePersistentContactAssociation",
        "EvaluateDataTableValues",
        "RenderMessageTemplate",
        "StartOutboundEmailContact",
        "ConnectParticipantWithAgenticCX",
        "ListDataTableValues",
        "UpsertDataTableValues",
        "SetSecurityBehavior",
        "CheckSecurityStatus",
    }
)

# The action types by their own names; ACTION_TYPES adds the other spellings the reference or the service use.
CANONICAL_TYPES: Mapping[str, ActionSpec] = _SPECS
ACTION_ALIASES: Mapping[str, str] = {alias: name for name, spec in _SPECS.items() for alias in spec.aliases}
ACTION_TYPES: Mapping[str, ActionSpec] = {**_SPECS, **{alias: _SPECS[name] for alias, name in ACTION_ALIASES.items()}}
