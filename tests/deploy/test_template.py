"""template.yaml as deployed: functions, least privilege, Connect wiring, flows without drift, operations."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, get_args

import pytest
from packaging.requirements import Requirement

from tests.fixtures import ROOT
from voicebridge.config import Settings, SonicBackendName
from voicebridge.conversation import Action
from voicebridge.converse.responders.scripted import ScriptedResponder
from voicebridge.errors import ConfigurationError
from voicebridge_dev.template import function_spec, load_template

TEMPLATE = load_template(ROOT / "template.yaml")
RESOURCES: dict[str, Any] = TEMPLATE["Resources"]
PARAMETERS: dict[str, Any] = TEMPLATE["Parameters"]
FLOW_FILES = sorted((ROOT / "contact_flows").glob("*.json"))

FUNCTIONS = {
    "SynthesizeFunction": ("voicebridge.handlers.synthesize.handler", 8, 1024),
    "StartListeningFunction": ("voicebridge.handlers.start_listening.handler", 5, 256),
    "TranscribeStreamFunction": ("voicebridge.handlers.transcribe_stream.handler", 900, {"Ref": "ConsumerMemorySize"}),
    "AwaitTurnFunction": ("voicebridge.handlers.await_turn.handler", 8, 256),
    "ConverseFunction": ("voicebridge.handlers.converse.handler", 8, 256),
    "CallRecordFunction": ("voicebridge.handlers.call_record.handler", 60, 256),
}

# What the Speak path's synthesizer reads, wherever it runs (SynthesizeFunction, and the consumer's replies).
SONIC_BACKEND_OF_HOSTING: dict[str, Any] = {
    "Fn::If": [
        "SonicThroughContainerContract",
        "container",
        {"Fn::If": ["SonicThroughCartesiaApi", "cartesia-api", "sagemaker"]},
    ]
}
SPEAK_ENVIRONMENT: dict[str, Any] = {
    "SONIC_BACKEND": SONIC_BACKEND_OF_HOSTING,
    "SONIC_ENDPOINT_NAME": {"Ref": "SonicEndpointName"},
    "SONIC_ENCODING": {"Ref": "SonicEncoding"},
    "SONIC_SAMPLE_RATE": {"Ref": "SonicSampleRate"},
    "SONIC_MODEL_ID": {"Ref": "SonicModelId"},
    "SONIC_PRONUNCIATION_MAP": {"Ref": "SonicPronunciationMap"},
    "SONIC_PRONUNCIATION_DICT_ID": {"Ref": "SonicPronunciationDictId"},
    "SONIC_DEFAULT_VOICE": {"Ref": "DefaultVoiceId"},
    "SONIC_VOICES": {"Ref": "SonicVoices"},
    "SONIC_DEFAULT_LANGUAGE": {"Ref": "DefaultLanguage"},
    "SONIC_BASE_URL": {
        "Fn::If": ["CreateSonicFleet", {"Fn::GetAtt": ["SonicFleet", "Outputs.SonicBaseUrl"]}, {"Ref": "SonicBaseUrl"}]
    },
    "CARTESIA_BASE_URL": {"Ref": "CartesiaBaseUrl"},
    "CARTESIA_API_KEY_SECRET_ARN": None,
    "PROMPT_BUCKET": {"Ref": "PromptBucket"},
}
# The responder's settings (docs/configuration.md, "Responder"), each from the template parameter of its name.
RESPONDER_PARAMETERS = {
    "RESPONDER": "Responder",
    "RESPONDER_RULES": "ResponderRules",
    "APOLOGY_TEXT": "ApologyText",
    "HISTORY_TURNS": "HistoryTurns",
    "SPECULATIVE_REPLIES": "SpeculativeReplies",
    "SPECULATIVE_MAX_PER_TURN": "SpeculativeMaxPerTurn",
    "BEDROCK_MODEL_ID": "BedrockModelId",
    "BEDROCK_SYSTEM_PROMPT": "BedrockSystemPrompt",
    "BEDROCK_MAX_TOKENS": "BedrockMaxTokens",
    "BEDROCK_LATENCY": "BedrockLatency",
    "BEDROCK_GUARDRAIL_ID": "BedrockGuardrailId",
    "BEDROCK_GUARDRAIL_VERSION": "BedrockGuardrailVersion",
    "LEX_BOT_ID": "LexBotId",
    "LEX_BOT_ALIAS_ID": "LexBotAliasId",
    "LEX_LOCALE_ID": "LexLocaleId",
    "LEX_INTENT_ACTIONS": "LexIntentActions",
    "RESPONDER_FUNCTION_ARN": "ResponderFunctionArn",
    "RESPONDER_FUNCTION_SIDE_EFFECT_FREE": "ResponderFunctionSideEffectFree",
}
RESPONDER_ENVIRONMENT: dict[str, Any] = {name: {"Ref": parameter} for name, parameter in RESPONDER_PARAMETERS.items()}

# What each handler reads from its environment, and where the template takes it from.
ENVIRONMENT: dict[str, dict[str, Any]] = {
    "SynthesizeFunction": dict(SPEAK_ENVIRONMENT),
    "StartListeningFunction": {
        "INK_MODEL": {"Ref": "InkModel"},
        "INK_MODE": {"Ref": "InkMode"},
        "INK_LANGUAGE": {"Ref": "InkLanguage"},
        "TURN_TABLE": {"Ref": "TurnTable"},
        "TRANSCRIBE_FUNCTION_NAME": {"Ref": "TranscribeStreamFunction"},
        "LISTEN_TRACKS": {"Ref": "ListenTracks"},
    },
    "TranscribeStreamFunction": {
        "TURN_TABLE": {"Ref": "TurnTable"},
        "CARTESIA_API_KEY_SECRET_ARN": None,
        "CARTESIA_BASE_URL": {"Ref": "CartesiaBaseUrl"},
        "INK_MODEL": {"Ref": "InkModel"},
        "INK_MODE": {"Ref": "InkMode"},
        "INK_LANGUAGE": {"Ref": "InkLanguage"},
        "INK_KEYTERMS": {"Ref": "InkKeyterms"},
        "INK_EAGER_END_THRESHOLD": {"Ref": "InkEagerEndThreshold"},
        "VOICE_DETECTOR": {"Ref": "VoiceDetector"},
        "TURN_END_POLICY": {"Ref": "TurnEndPolicy"},
        "TURN_TTL_DAYS": {"Ref": "TurnRetentionDays"},
        # It writes the call record when listening ends...
        **{"RECORD_BUCKET": {"Ref": "CallRecordBucket"}, "RECORD_KMS_KEY_ID": {"Ref": "DataKmsKeyArn"}},
        # ...speaks the replies as SynthesizeFunction speaks prompts...
        **SPEAK_ENVIRONMENT,
        # ...and asks the responder for them.
        **RESPONDER_ENVIRONMENT,
    },
    "AwaitTurnFunction": {
        "TURN_TABLE": {"Ref": "TurnTable"},
        "AWAIT_MAX_WAIT_MS": "7000",
        "AWAIT_POLL_INTERVAL_MS": "40",
        "PROMPT_BUCKET": {"Ref": "PromptBucket"},
    },
    "ConverseFunction": {
        "TURN_TABLE": {"Ref": "TurnTable"},
        "CONVERSE_MAX_WAIT_MS": "7000",
        "CONVERSE_FAST_POLL_MS": "10",
        "CONVERSE_SLOW_POLL_MS": "250",
        "CONVERSE_MAKING_POLL_MS": "40",
        "CONVERSE_HOLD_AFTER_MS": "4000",
        "PROMPT_BUCKET": {"Ref": "PromptBucket"},
    },
    "CallRecordFunction": {
        "TURN_TABLE": {"Ref": "TurnTable"},
        "RECORD_BUCKET": {"Ref": "CallRecordBucket"},
        "RECORD_KMS_KEY_ID": {"Ref": "DataKmsKeyArn"},
    },
}

# The only actions each function is granted whatever the parameters, and on what.
SPEAK_GRANTS = {
    "sonic": {"sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"},
    "prompts": {"s3:GetObject", "s3:PutObject"},
    # A HeadObject on a prompt not yet made answers 404, not 403, only to a caller that may list the bucket.
    "bucket": {"s3:ListBucket"},
    "secret": {"secretsmanager:GetSecretValue"},
}
GRANTS: dict[str, dict[str, set[str]]] = {
    "SynthesizeFunction": SPEAK_GRANTS,
    "StartListeningFunction": {
        "transcribe": {"lambda:InvokeFunction"},
        "table": {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"},
    },
    "TranscribeStreamFunction": {
        "kvs": {"kinesisvideo:GetDataEndpoint", "kinesisvideo:GetMedia"},
        "table": {
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:BatchWriteItem",
        },
        "itself": {"lambda:InvokeFunction"},
        "records": {"s3:PutObject"},
        "bus": {"events:PutEvents"},
        **SPEAK_GRANTS,
    },
    # UpdateItem redacts the turn the flow has read, while the poll waits.
    "AwaitTurnFunction": {"table": {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}},
    # The reply status, its segments and the checkpoint are read by key; Query and UpdateItem redact a read turn.
    "ConverseFunction": {"table": {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}},
    "CallRecordFunction": {
        "table": {
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:BatchWriteItem",
        },
        "records": {"s3:PutObject"},
        "bus": {"events:PutEvents"},
    },
}
# What a function may also do for what is kept of a call, by condition: Sid -> (condition, actions, resource).
DATA_KEY = {"Ref": "DataKmsKeyArn"}
KEPT_GRANTS: dict[str, dict[str, tuple[str, set[str], Any]]] = {
    "SynthesizeFunction": {"UsePromptKey": ("KeyForPrompts", {"kms:GenerateDataKey", "kms:Decrypt"}, DATA_KEY)},
    "TranscribeStreamFunction": {
        "FindPii": ("UseComprehend", {"comprehend:DetectPiiEntities"}, "*"),
        "UseDataKey": ("HasDataKey", {"kms:GenerateDataKey", "kms:Decrypt", "kms:DescribeKey"}, DATA_KEY),
    },
    "AwaitTurnFunction": {
        "FindPii": ("UseComprehend", {"comprehend:DetectPiiEntities"}, "*"),
        "UseTableKey": ("KeyForTable", {"kms:Decrypt", "kms:DescribeKey"}, DATA_KEY),
    },
    "ConverseFunction": {
        "FindPii": ("UseComprehend", {"comprehend:DetectPiiEntities"}, "*"),
        "UseTableKey": ("KeyForTable", {"kms:Decrypt", "kms:DescribeKey"}, DATA_KEY),
    },
    "CallRecordFunction": {
        "FindPii": ("UseComprehend", {"comprehend:DetectPiiEntities"}, "*"),
        "UseDataKey": ("HasDataKey", {"kms:GenerateDataKey", "kms:Decrypt", "kms:DescribeKey"}, DATA_KEY),
    },
}
ANY_RESOURCE_ACTIONS = {"comprehend:DetectPiiEntities"}
"""Actions granted on "*": DetectPiiEntities has no resource type (Service Authorization Reference, Amazon
Comprehend's actions table)."""

FOUNDATION_MODEL = {"Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${BedrockModelId}"}
INFERENCE_PROFILE = {
    "Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${BedrockModelId}"
}
# What TranscribeStreamFunction may also do for the chosen responder: Sid -> (condition, action, resource).
RESPONDER_GRANTS: dict[str, tuple[str, str, Any]] = {
    "InvokeResponderModel": (
        "UseBedrockResponder",
        "bedrock:InvokeModelWithResponseStream",
        {"Fn::If": ["BedrockModelIsArn", {"Ref": "BedrockModelId"}, FOUNDATION_MODEL]},
    ),
    "InvokeResponderInferenceProfile": (
        "UseBedrockModelId",
        "bedrock:InvokeModelWithResponseStream",
        INFERENCE_PROFILE,
    ),
    "InvokeModelsThroughTheProfile": (
        "UseBedrockResponder",
        "bedrock:InvokeModelWithResponseStream",
        {"Fn::Sub": "arn:${AWS::Partition}:bedrock:*::foundation-model/*"},
    ),
    "ApplyResponderGuardrail": (
        "UseBedrockGuardrail",
        "bedrock:ApplyGuardrail",
        {
            "Fn::If": [
                "BedrockGuardrailIsArn",
                {"Ref": "BedrockGuardrailId"},
                {
                    "Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}"
                    ":guardrail/${BedrockGuardrailId}"
                },
            ]
        },
    ),
    "AskResponderBot": (
        "UseLexResponder",
        "lex:RecognizeText",
        {
            "Fn::Sub": "arn:${AWS::Partition}:lex:${AWS::Region}:${AWS::AccountId}"
            ":bot-alias/${LexBotId}/${LexBotAliasId}"
        },
    ),
    "InvokeResponderFunction": (
        "UseLambdaResponder",
        "lambda:InvokeFunction",
        {
            "Fn::If": [
                "ResponderFunctionIsArn",
                {"Ref": "ResponderFunctionArn"},
                {
                    "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
                    ":function:${ResponderFunctionArn}"
                },
            ]
        },
    ),
    "ReadResponderRules": ("RulesInS3", "s3:GetObject", None),
    "ReadResponderSystemPrompt": ("SystemPromptInS3", "s3:GetObject", None),
}

SECRET_ARN = {
    "Fn::If": [
        "CreateCartesiaApiKeySecret",
        {"Ref": "CartesiaApiKeySecret"},
        {"Ref": "ExistingCartesiaApiKeySecretArn"},
    ]
}
TRANSCRIBE_STREAM_NAME = "${AWS::StackName}-TranscribeStream"
RESOURCE_OF = {
    "sonic": {
        "Fn::Sub": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/${SonicEndpointName}"
    },
    "prompts": {"Fn::Sub": "${PromptBucket.Arn}/prompts/*"},
    "bucket": {"Fn::GetAtt": ["PromptBucket", "Arn"]},
    "secret": SECRET_ARN,
    "transcribe": {"Fn::GetAtt": ["TranscribeStreamFunction", "Arn"]},
    "table": {"Fn::GetAtt": ["TurnTable", "Arn"]},
    "kvs": {
        "Fn::Sub": "arn:${AWS::Partition}:kinesisvideo:${AWS::Region}:${AWS::AccountId}"
        ":stream/${KvsStreamNamePrefix}*/*"
    },
    "itself": {
        "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + TRANSCRIBE_STREAM_NAME
    },
    "records": {"Fn::Sub": "${CallRecordBucket.Arn}/records/*"},
    "bus": {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default"},
}

LATENCY_METRICS = [
    "SonicTimeToFirstByte",
    "SonicSynthesisTime",
    "InkTurnLatency",
    "KvsLag",
    "AwaitTurnWait",
    "ResponderFirstSentence",
    "ReplyFirstPromptReady",
    "ReplySegmentGap",
    "ConverseWait",
]
COUNT_METRICS = [
    "PromptCacheHit",
    "SynthesisErrors",
    "ListenErrors",
    "InkReconnects",
    "TurnsTranscribed",
    "AudioSecondsStreamed",
    "ActiveStreams",
    "ResponderErrors",
    "ResponderRetries",
    "TurnsLost",
    "SpeculativeStart",
    "SpeculativeHit",
    "SpeculativeMiss",
    "SpeculativeWasteTokens",
    "SpeculativeWasteSonicSeconds",
    "CallRecordErrors",
    "RedactionFallbacks",
]


def _props(logical_id: str) -> dict[str, Any]:
    properties: dict[str, Any] = RESOURCES[logical_id]["Properties"]
    return properties


def _of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {name: resource for name, resource in RESOURCES.items() if resource["Type"] == kind}


def _conditional_statements(function: str) -> list[tuple[str | None, dict[str, Any]]]:
    """Each policy statement with the condition it is granted under (None: always)."""
    found: list[tuple[str | None, dict[str, Any]]] = []
    for policy in _props(function)["Policies"]:
        for statement in policy["Statement"]:
            if "Fn::If" in statement:
                condition, granted, otherwise = statement["Fn::If"]
                assert otherwise == {"Ref": "AWS::NoValue"}, statement
                found.append((condition, granted))
            else:
                found.append((None, statement))
    return found


def _statements(function: str) -> list[dict[str, Any]]:
    """The statements granted whatever the parameters."""
    return [statement for condition, statement in _conditional_statements(function) if condition is None]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _flow_called_functions() -> set[str]:
    names: set[str] = set()
    for path in FLOW_FILES:
        names |= set(re.findall(r"\$\{([A-Za-z0-9]+)\.Arn\}", path.read_text(encoding="utf-8")))
    return names


def _flow_resources() -> dict[str, dict[str, Any]]:
    return _of_type("AWS::Connect::ContactFlow")


def _substituted(text: str) -> str:
    """An Fn::Sub body with each ``${X}`` filled, as CloudFormation would, with a dummy: the name ``X``."""
    return re.sub(r"\$\{([^}]+)\}", lambda match: match.group(1), text)


def _dashboard() -> dict[str, Any]:
    (dashboard,) = _of_type("AWS::CloudWatch::Dashboard").values()
    body: dict[str, Any] = json.loads(_substituted(dashboard["Properties"]["DashboardBody"]["Fn::Sub"]))
    return body


def _dashboard_metrics() -> Iterator[list[Any]]:
    for widget in _dashboard()["widgets"]:
        yield from widget.get("properties", {}).get("metrics", [])


@cache
def _load_flows_sync() -> ModuleType:
    """tools/flows_sync.py, which is a script rather than part of the package."""
    spec = importlib.util.spec_from_file_location("flows_sync", ROOT / "tools" / "flows_sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONFIGURATION_REFERENCE = ROOT / "docs" / "configuration.md"
"""The page listing every template parameter and every environment variable the functions read."""


def _configuration_reference() -> str:
    return CONFIGURATION_REFERENCE.read_text(encoding="utf-8")


# --- functions ---------------------------------------------------------------------------------------------


def test_the_five_functions_run_their_handlers_with_their_timeouts_and_memory() -> None:
    declared = {
        name: (_props(name)["Handler"], _props(name)["Timeout"], _props(name)["MemorySize"])
        for name in _of_type("AWS::Serverless::Function")
    }
    assert declared == FUNCTIONS


def test_every_function_runs_python313_on_arm64_with_tracing_from_the_runtime_folder() -> None:
    glob = TEMPLATE["Globals"]["Function"]
    assert (glob["Runtime"], glob["Architectures"], glob["Tracing"], glob["CodeUri"]) == (
        "python3.13",
        ["arm64"],
        "Active",
        "src/runtime/",
    )
    overridden = {"Runtime", "Architectures", "Tracing", "CodeUri"}
    assert all(not overridden & set(_props(name)) for name in FUNCTIONS)


def test_powertools_names_the_service_and_namespace_for_every_function() -> None:
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert {name: value for name, value in variables.items() if name.startswith("POWERTOOLS_")} == {
        "POWERTOOLS_SERVICE_NAME": "voicebridge",
        "POWERTOOLS_METRICS_NAMESPACE": "VoiceBridge",
        "POWERTOOLS_LOG_LEVEL": {"Ref": "LogLevel"},
    }


def test_endpoint_variables_are_declared_empty_so_sam_local_can_point_them_at_the_local_cloud() -> None:
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    endpoints = {name: value for name, value in variables.items() if name.startswith("AWS_ENDPOINT_URL_")}
    services = {
        "S3",
        "DYNAMODB",
        "SECRETS_MANAGER",
        "SAGEMAKER_RUNTIME",
        "KINESIS_VIDEO",
        "LAMBDA",
        "BEDROCK_RUNTIME",
        "LEX_RUNTIME_V2",
        "COMPREHEND",
        "EVENTBRIDGE",
    }
    assert endpoints == {f"AWS_ENDPOINT_URL_{service}": "" for service in services}


@pytest.mark.parametrize("function", sorted(ENVIRONMENT))
def test_each_function_sets_every_variable_its_handler_reads(function: str) -> None:
    variables = _props(function)["Environment"]["Variables"]
    assert set(variables) == set(ENVIRONMENT[function])
    for name, source in ENVIRONMENT[function].items():
        assert variables[name] == (SECRET_ARN if source is None else source), name


def test_every_variable_the_template_sets_is_a_setting_the_code_reads() -> None:
    settings = {setting.name.upper() for setting in dataclasses.fields(Settings)}
    for function in FUNCTIONS:
        assert set(_props(function)["Environment"]["Variables"]) <= settings, function


def test_transcribe_stream_is_named_so_its_policy_can_name_itself() -> None:
    assert _props("TranscribeStreamFunction")["FunctionName"] == {"Fn::Sub": TRANSCRIBE_STREAM_NAME}


def test_lambda_never_retries_a_transcribe_stream_event_and_hands_a_failed_one_to_the_call_recorder() -> None:
    assert _props("TranscribeStreamFunction")["EventInvokeConfig"] == {
        "MaximumRetryAttempts": 0,
        "MaximumEventAgeInSeconds": 60,
        "DestinationConfig": {
            "OnFailure": {"Type": "Lambda", "Destination": {"Fn::GetAtt": ["CallRecordFunction", "Arn"]}}
        },
    }
    assert function_spec(TEMPLATE, "TranscribeStreamFunction").on_failure == "CallRecordFunction"


def test_transcribe_stream_has_no_concurrency_limit_since_each_live_call_runs_one() -> None:
    assert "ReservedConcurrentExecutions" not in _props("TranscribeStreamFunction")


def test_a_failed_transcribe_stream_event_is_kept_in_a_dead_letter_queue() -> None:
    queue = _props("TranscribeStreamFunction")["DeadLetterQueue"]
    assert queue == {"Type": "SQS", "TargetArn": {"Fn::GetAtt": ["TranscribeStreamDeadLetterQueue", "Arn"]}}


# --- the responder's parameters ----------------------------------------------------------------------------


def test_a_responder_parameter_left_at_its_default_means_what_the_code_would_do() -> None:
    code = Settings()
    for variable, parameter in RESPONDER_PARAMETERS.items():
        default = str(PARAMETERS[parameter].get("Default", ""))
        # Empty is unset (the code's default); the rules file has no default in the code.
        if default and variable != "RESPONDER_RULES":
            assert default == str(getattr(code, variable.lower())), parameter


LAMBDA_ENVIRONMENT_LIMIT = 4096
"""Lambda's limit on a function's environment variables, names and values together, in bytes."""


def test_the_consumers_environment_leaves_room_under_lambdas_limit_with_the_default_rules() -> None:
    def size(value: Any) -> int:
        if isinstance(value, dict) and set(value) == {"Fn::If"}:
            # Whichever branch the condition takes.
            return max(size(value["Fn::If"][1]), size(value["Fn::If"][2]))
        if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in PARAMETERS:
            return len(str(PARAMETERS[value["Ref"]].get("Default", "")).encode())
        if isinstance(value, dict) and RESOURCES.get(value.get("Ref", ""), {}).get("Type") == "AWS::S3::Bucket":
            return 63  # a bucket's name is at most 63 characters
        # A resource's name or ARN, as long as AWS makes them.
        return len(value.encode()) if isinstance(value, str) else 160

    variables = {
        **TEMPLATE["Globals"]["Function"]["Environment"]["Variables"],
        **_props("TranscribeStreamFunction")["Environment"]["Variables"],
    }
    used = sum(len(name) + size(value) for name, value in variables.items())
    # What is left is for a longer inline rules file or system prompt; docs/configuration.md says to use S3 beyond.
    assert LAMBDA_ENVIRONMENT_LIMIT - used >= 1024, used


def test_the_default_rules_file_answers_out_of_the_box_and_can_transfer_and_hang_up() -> None:
    responder = ScriptedResponder.from_json(PARAMETERS["ResponderRules"]["Default"])
    actions = {rule.action for rule in responder.rules}
    assert {Action.TRANSFER, Action.HANGUP} <= actions
    assert responder.fallback.reply
    assert re.fullmatch(PARAMETERS["ResponderRules"]["AllowedPattern"], PARAMETERS["ResponderRules"]["Default"])


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("BedrockGuardrailId", "gr0abc123xyz"),
        ("BedrockGuardrailId", "arn:aws:bedrock:us-east-1:111111111111:guardrail/gr0abc123xyz"),
        ("BedrockGuardrailId", "Not-A-Guardrail"),
        ("BedrockGuardrailVersion", "3"),
        ("BedrockGuardrailVersion", "DRAFT"),
        ("BedrockGuardrailVersion", "draft"),
        ("BedrockGuardrailVersion", "0"),
        ("LexBotId", "LOCALBANK1"),
        ("LexBotId", "LOCALBANK"),
        ("LexIntentActions", "TransferToAgent=Transfer,Goodbye=hangup"),
        ("LexIntentActions", "Goodbye"),
        ("LexIntentActions", "Goodbye=Later"),
        ("Responder", "bedrock"),
        ("Responder", "openai"),
    ],
)
def test_a_parameter_takes_a_value_exactly_when_the_settings_check_does(parameter: str, value: str) -> None:
    declared = PARAMETERS[parameter]
    if "AllowedValues" in declared:
        allowed = value in declared["AllowedValues"]
    else:
        allowed = re.fullmatch(declared["AllowedPattern"], value) is not None
    variable = next(name for name, p in RESPONDER_PARAMETERS.items() if p == parameter)
    # What the settings check asks for besides: a guardrail's id and version go together; bedrock needs a model.
    companions = {
        "BEDROCK_GUARDRAIL_ID": {"BEDROCK_GUARDRAIL_VERSION": "1"},
        "BEDROCK_GUARDRAIL_VERSION": {"BEDROCK_GUARDRAIL_ID": "gr0abc123xyz"},
        "RESPONDER": {"BEDROCK_MODEL_ID": "amazon.nova-lite-v1:0"},
    }.get(variable, {})
    try:
        Settings.from_env({**companions, variable: value})
    except ConfigurationError:
        accepted = False
    else:
        accepted = True
    assert allowed == accepted


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("BedrockModelId", "amazon.nova-lite-v1:0"),
        ("BedrockModelId", "us.anthropic.claude-3-5-haiku-20241022-v1:0"),
        ("BedrockModelId", "arn:aws:bedrock:us-east-1:111111111111:inference-profile/us.amazon.nova-lite-v1:0"),
        ("BedrockModelId", "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0"),
        ("ResponderFunctionArn", "my-responder"),
        ("ResponderFunctionArn", "my-responder:live"),
        ("ResponderFunctionArn", "arn:aws:lambda:us-east-1:111111111111:function:my-responder:3"),
        ("ResponderRules", "s3://config-bucket/voice/rules.json"),
        ("ResponderRules", '{"rules": []}'),
        ("LexLocaleId", "es_419"),
    ],
)
def test_a_parameter_accepts_each_documented_form(parameter: str, value: str) -> None:
    assert re.fullmatch(PARAMETERS[parameter]["AllowedPattern"], value)


@pytest.mark.parametrize(
    ("responder", "needs"),
    [
        ("bedrock", {"BedrockModelId"}),
        ("lex", {"LexBotId", "LexBotAliasId"}),
        ("lambda", {"ResponderFunctionArn"}),
        ("scripted", {"ResponderRules"}),
    ],
)
def test_the_template_refuses_a_responder_without_what_it_needs(responder: str, needs: set[str]) -> None:
    (rule,) = [
        r
        for r in TEMPLATE["Rules"].values()
        if r.get("RuleCondition") == {"Fn::Equals": [{"Ref": "Responder"}, responder]}
    ]
    asserted = {a["Assert"]["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for a in rule["Assertions"]}
    assert asserted == needs


# --- least privilege ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("function", sorted(GRANTS))
def test_each_function_is_granted_exactly_the_actions_it_needs_on_its_own_resources(function: str) -> None:
    granted: dict[str, set[str]] = {}
    for statement in _statements(function):
        assert statement["Effect"] == "Allow"
        (resource,) = _as_list(statement["Resource"])
        key = next((k for k, v in RESOURCE_OF.items() if v == resource), repr(resource))
        granted.setdefault(key, set()).update(_as_list(statement["Action"]))
    assert granted == GRANTS[function]


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_a_function_that_may_stream_from_sonic_may_also_invoke_it_as_the_api_reference_requires(function: str) -> None:
    for statement in _statements(function):
        actions = set(_as_list(statement["Action"]))
        if "sagemaker:InvokeEndpointWithResponseStream" in actions:
            assert "sagemaker:InvokeEndpoint" in actions, statement["Sid"]


def test_no_function_policy_statement_allows_every_resource_but_for_an_action_that_names_none() -> None:
    for function in FUNCTIONS:
        for _, statement in _conditional_statements(function):
            for resource in _as_list(statement["Resource"]):
                if resource == "*":
                    assert set(_as_list(statement["Action"])) <= ANY_RESOURCE_ACTIONS, f"{function}: {statement['Sid']}"


@pytest.mark.parametrize("function", sorted(KEPT_GRANTS))
def test_what_is_kept_of_a_call_is_granted_only_under_its_own_condition(function: str) -> None:
    granted = {
        statement["Sid"]: (condition, set(_as_list(statement["Action"])), statement["Resource"])
        for condition, statement in _conditional_statements(function)
        if condition is not None and statement["Sid"] in KEPT_GRANTS[function]
    }
    assert granted == KEPT_GRANTS[function]


def test_only_the_consumer_has_statements_that_depend_on_the_responder() -> None:
    conditional = {
        f
        for f in FUNCTIONS
        for condition, statement in _conditional_statements(f)
        if condition is not None and statement["Sid"] not in KEPT_GRANTS.get(f, {})
    }
    assert conditional == {"TranscribeStreamFunction"}


def test_the_consumer_may_call_only_the_responder_that_is_chosen() -> None:
    granted = {
        statement["Sid"]: (condition, statement["Action"], statement["Resource"])
        for condition, statement in _conditional_statements("TranscribeStreamFunction")
        if condition is not None and statement["Sid"] not in KEPT_GRANTS["TranscribeStreamFunction"]
    }
    assert set(granted) == set(RESPONDER_GRANTS)
    for sid, (condition, action, resource) in RESPONDER_GRANTS.items():
        assert granted[sid][:2] == (condition, action), sid
        if resource is not None:
            assert granted[sid][2] == resource, sid
    conditions = TEMPLATE["Conditions"]
    for responder in ("Scripted", "Bedrock", "Lex", "Lambda"):
        assert conditions[f"Use{responder}Responder"] == {"Fn::Equals": [{"Ref": "Responder"}, responder.lower()]}


def test_the_models_an_inference_profile_routes_to_are_invoked_only_through_that_profile() -> None:
    (statement,) = [
        s for _, s in _conditional_statements("TranscribeStreamFunction") if s["Sid"] == "InvokeModelsThroughTheProfile"
    ]
    assert statement["Condition"] == {
        "StringEquals": {
            "bedrock:InferenceProfileArn": {
                "Fn::If": ["BedrockModelIsArn", {"Ref": "BedrockModelId"}, INFERENCE_PROFILE]
            }
        }
    }


@pytest.mark.parametrize(
    ("sid", "parameter"),
    [("ReadResponderRules", "ResponderRules"), ("ReadResponderSystemPrompt", "BedrockSystemPrompt")],
)
def test_a_responder_document_in_s3_may_be_read_as_exactly_that_object(sid: str, parameter: str) -> None:
    (statement,) = [s for _, s in _conditional_statements("TranscribeStreamFunction") if s["Sid"] == sid]
    template, variables = statement["Resource"]["Fn::Sub"]
    assert template == "arn:${AWS::Partition}:s3:::${Object}"
    # s3://bucket/key joined with a trailing s3:// and split on it: ["", "bucket/key", ""].
    select = variables["Object"]["Fn::Select"]
    assert select[0] == 1
    separator, joined = select[1]["Fn::Split"]
    assert (separator, joined) == ("s3://", {"Fn::Join": ["", [{"Ref": parameter}, "s3://"]]})
    uri = "s3://config-bucket/voice/rules.json"
    assert (uri + separator).split(separator)[1] == "config-bucket/voice/rules.json"


def test_no_function_gets_a_managed_or_template_policy() -> None:
    for function in FUNCTIONS:
        assert all(isinstance(policy, dict) and set(policy) == {"Statement"} for policy in _props(function)["Policies"])


# --- Amazon Connect ----------------------------------------------------------------------------------------


def test_the_flows_call_synthesize_start_listening_await_turn_and_converse() -> None:
    assert _flow_called_functions() == {
        "SynthesizeFunction",
        "StartListeningFunction",
        "AwaitTurnFunction",
        "ConverseFunction",
    }


@pytest.mark.parametrize("function", sorted(_flow_called_functions()))
def test_connect_may_invoke_each_function_a_flow_calls(function: str) -> None:
    permissions = [
        resource
        for resource in _of_type("AWS::Lambda::Permission").values()
        if resource["Properties"]["FunctionName"] == {"Fn::GetAtt": [function, "Arn"]}
    ]
    assert [p["Properties"] for p in permissions] == [
        {
            "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
            "Action": "lambda:InvokeFunction",
            "Principal": "connect.amazonaws.com",
            "SourceAccount": {"Ref": "AWS::AccountId"},
            "SourceArn": {"Ref": "ConnectInstanceArn"},
        }
    ]
    assert permissions[0]["Condition"] == "HasConnectInstance"


@pytest.mark.parametrize("function", sorted(_flow_called_functions()))
def test_each_function_a_flow_calls_is_associated_with_the_instance(function: str) -> None:
    associations = [
        resource
        for resource in _of_type("AWS::Connect::IntegrationAssociation").values()
        if resource["Properties"]["IntegrationArn"] == {"Fn::GetAtt": [function, "Arn"]}
    ]
    assert len(associations) == 1
    assert associations[0]["Condition"] == "HasConnectInstance"
    assert associations[0]["Properties"]["IntegrationType"] == "LAMBDA_FUNCTION"
    assert associations[0]["Properties"]["InstanceId"] == {"Ref": "ConnectInstanceArn"}


def test_connect_resources_are_created_only_with_an_instance_arn() -> None:
    conditions = TEMPLATE["Conditions"]
    assert conditions["HasConnectInstance"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "ConnectInstanceArn"}, ""]}]}
    connect_kinds = {
        "AWS::Lambda::Permission",
        "AWS::Connect::IntegrationAssociation",
        "AWS::Connect::ContactFlow",
    }
    # The listen-only and streaming flows' conditions hold HasConnectInstance within them.
    only_with_an_instance = ("HasConnectInstance", "CreateListenOnlyFlow", "CreateStreamingFlow")
    for name, resource in RESOURCES.items():
        if resource["Type"] in connect_kinds:
            assert resource.get("Condition") in only_with_an_instance, name


def test_the_listen_only_flow_is_created_only_with_an_agent_queue() -> None:
    assert TEMPLATE["Conditions"]["CreateListenOnlyFlow"] == {
        "Fn::And": [{"Condition": "HasConnectInstance"}, {"Condition": "HasAgentQueue"}]
    }
    conditions = {r["Metadata"]["FlowFile"]: r["Condition"] for r in _flow_resources().values()}
    assert conditions["contact_flows/listen-only.json"] == "CreateListenOnlyFlow"


def test_each_flow_is_created_only_after_the_functions_it_calls_are_associated() -> None:
    integration_of = {
        resource["Properties"]["IntegrationArn"]["Fn::GetAtt"][0]: name
        for name, resource in _of_type("AWS::Connect::IntegrationAssociation").items()
    }
    for name, resource in _flow_resources().items():
        called = set(re.findall(r"\$\{([A-Za-z0-9]+)\.Arn\}", resource["Properties"]["Content"]["Fn::Sub"]))
        assert set(resource.get("DependsOn", [])) == {integration_of[function] for function in called}, name


def test_the_flows_are_named_after_the_stack() -> None:
    names = {r["Metadata"]["FlowFile"]: r["Properties"]["Name"] for r in _flow_resources().values()}
    assert names == {
        "contact_flows/voice-agent.json": {"Fn::Sub": "${AWS::StackName} voice agent"},
        "contact_flows/echo.json": {"Fn::Sub": "${AWS::StackName} echo"},
        "contact_flows/listen-only.json": {"Fn::Sub": "${AWS::StackName} listen only"},
        "contact_flows/voice-agent-streaming.json": {"Fn::Sub": "${AWS::StackName} voice agent streaming"},
    }


def test_every_flow_file_is_embedded_by_exactly_one_contact_flow() -> None:
    embedded = sorted(resource["Metadata"]["FlowFile"] for resource in _flow_resources().values())
    assert embedded == sorted(str(path.relative_to(ROOT)) for path in FLOW_FILES)
    assert all(r["Properties"]["Type"] == "CONTACT_FLOW" for r in _flow_resources().values())


@pytest.mark.parametrize("logical_id", sorted(_flow_resources()))
def test_embedded_flow_content_is_the_flow_file(logical_id: str) -> None:
    resource = _flow_resources()[logical_id]
    embedded = resource["Properties"]["Content"]["Fn::Sub"]
    assert isinstance(embedded, str)
    source = (ROOT / resource["Metadata"]["FlowFile"]).read_text(encoding="utf-8")
    assert json.loads(embedded) == json.loads(source), "template.yaml drifted from the file: make flows-sync"


def test_flows_sync_rewrites_a_drifted_content_block_and_nothing_else(tmp_path: Path) -> None:
    flows_sync = _load_flows_sync()
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    flow = json.loads((ROOT / "contact_flows" / "listen-only.json").read_text(encoding="utf-8"))
    flow["Actions"][0]["Identifier"] = "Changed since"
    rewritten = tmp_path / "template.yaml"
    rewritten.write_text(flows_sync.sync(text, {"ListenOnlyFlow": json.dumps(flow, indent=2) + "\n"}))
    document = load_template(rewritten)
    assert json.loads(document["Resources"]["ListenOnlyFlow"]["Properties"]["Content"]["Fn::Sub"]) == flow
    document["Resources"]["ListenOnlyFlow"]["Properties"]["Content"] = _props("ListenOnlyFlow")["Content"]
    assert document == TEMPLATE


def test_flows_sync_leaves_a_synced_template_byte_for_byte() -> None:
    flows_sync = _load_flows_sync()
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    files = flows_sync.embedded_flow_files(ROOT / "template.yaml")
    assert flows_sync.sync(text, {name: path.read_text(encoding="utf-8") for name, path in files.items()}) == text


# --- storage and the secret --------------------------------------------------------------------------------


def test_turns_are_keyed_by_contact_and_turn_and_expire() -> None:
    props = _props("TurnTable")
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["KeySchema"] == [
        {"AttributeName": "ContactId", "KeyType": "HASH"},
        {"AttributeName": "TurnKey", "KeyType": "RANGE"},
    ]
    assert props["AttributeDefinitions"] == [
        {"AttributeName": "ContactId", "AttributeType": "S"},
        {"AttributeName": "TurnKey", "AttributeType": "S"},
    ]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ExpiresAt", "Enabled": True}


def test_the_turn_table_is_encrypted_with_the_aws_managed_key_or_the_customers_and_recoverable() -> None:
    props = _props("TurnTable")
    assert props["SSESpecification"] == {
        "Fn::If": [
            "KeyForTable",
            {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": {"Ref": "DataKmsKeyArn"}},
            {"SSEEnabled": True},
        ]
    }
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_the_prompt_bucket_is_private_encrypted_with_sse_s3_and_expires_prompts() -> None:
    props = _props("PromptBucket")
    assert set(props["PublicAccessBlockConfiguration"].values()) == {True}
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    condition, with_key, otherwise = rule["Fn::If"]
    assert condition == "KeyForPrompts" and otherwise["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    assert with_key["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Ref": "DataKmsKeyArn"},
    }
    (lifecycle,) = props["LifecycleConfiguration"]["Rules"]
    assert (lifecycle["Prefix"], lifecycle["ExpirationInDays"]) == (
        "prompts/",
        {"Ref": "PromptRetentionDays"},
    )


def test_call_records_are_private_encrypted_with_kms_versioned_and_expire() -> None:
    props = _props("CallRecordBucket")
    assert set(props["PublicAccessBlockConfiguration"].values()) == {True}
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::If": ["HasDataKey", {"Ref": "DataKmsKeyArn"}, {"Ref": "AWS::NoValue"}]},
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (lifecycle,) = props["LifecycleConfiguration"]["Rules"]
    assert (lifecycle["Prefix"], lifecycle["ExpirationInDays"]) == ("records/", {"Ref": "RecordRetentionDays"})
    deny_tls, deny_unencrypted = _props("CallRecordBucketPolicy")["PolicyDocument"]["Statement"]
    assert deny_tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny_unencrypted["Condition"] == {"StringNotEquals": {"s3:x-amz-server-side-encryption": "aws:kms"}}


def test_only_the_connect_instance_reads_prompts_only_under_the_prompt_prefix_and_only_over_tls() -> None:
    deny, reads, lists = _props("PromptBucketPolicy")["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    instance = {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnEquals": {"aws:SourceArn": {"Ref": "ConnectInstanceArn"}},
    }
    for grant in (reads, lists):
        condition, statement, otherwise = grant["Fn::If"]
        assert (condition, otherwise) == ("HasConnectInstance", {"Ref": "AWS::NoValue"})
        assert statement["Principal"] == {"Service": "connect.amazonaws.com"}
    read, listing = reads["Fn::If"][1], lists["Fn::If"][1]
    assert (read["Action"], read["Resource"]) == ("s3:GetObject", {"Fn::Sub": "${PromptBucket.Arn}/prompts/*"})
    assert read["Condition"] == instance
    assert listing["Action"] == "s3:ListBucket"
    assert listing["Condition"] == {**instance, "StringLike": {"s3:prefix": "prompts/*"}}


def test_every_function_logs_to_a_log_group_of_the_stacks_with_its_retention() -> None:
    for function in FUNCTIONS:
        group = _props(function)["LoggingConfig"]["LogGroup"]["Ref"]
        assert RESOURCES[group]["Type"] == "AWS::Logs::LogGroup"
        assert _props(group)["RetentionInDays"] == {"Ref": "LogRetentionDays"}
        assert _props(group)["KmsKeyId"] == {
            "Fn::If": ["HasLogKmsKey", {"Ref": "LogKmsKeyArn"}, {"Ref": "AWS::NoValue"}]
        }


def test_the_cartesia_api_url_the_key_travels_to_must_be_https() -> None:
    pattern = re.compile(TEMPLATE["Parameters"]["CartesiaBaseUrl"]["AllowedPattern"])
    assert pattern.fullmatch("https://api.cartesia.ai") and pattern.fullmatch("")
    assert not pattern.fullmatch("http://api.cartesia.ai")


def test_the_stack_creates_the_api_key_secret_only_when_no_existing_one_is_given() -> None:
    assert TEMPLATE["Conditions"]["CreateCartesiaApiKeySecret"] == {
        "Fn::Equals": [{"Ref": "ExistingCartesiaApiKeySecretArn"}, ""]
    }
    assert RESOURCES["CartesiaApiKeySecret"]["Condition"] == "CreateCartesiaApiKeySecret"
    assert TEMPLATE["Outputs"]["CartesiaApiKeySecretArn"]["Value"] == SECRET_ARN


# --- the optional Sonic endpoint ---------------------------------------------------------------------------

SONIC_ENDPOINT_RESOURCES = {
    "SonicModelRole": "AWS::IAM::Role",
    "SonicModel": "AWS::SageMaker::Model",
    "SonicEndpointConfig": "AWS::SageMaker::EndpointConfig",
    "SonicEndpoint": "AWS::SageMaker::Endpoint",
    "SonicScalableTarget": "AWS::ApplicationAutoScaling::ScalableTarget",
    "SonicScalingPolicy": "AWS::ApplicationAutoScaling::ScalingPolicy",
}


def test_the_sonic_endpoint_is_created_only_from_a_model_package_arn() -> None:
    assert TEMPLATE["Conditions"]["CreateSonicEndpoint"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "SonicModelPackageArn"}, ""]}]
    }
    for name, kind in SONIC_ENDPOINT_RESOURCES.items():
        assert (RESOURCES[name]["Type"], RESOURCES[name]["Condition"]) == (kind, "CreateSonicEndpoint")
    model = _props("SonicModel")
    assert model["PrimaryContainer"] == {"ModelPackageName": {"Ref": "SonicModelPackageArn"}}
    assert model["EnableNetworkIsolation"] is True


def test_the_sonic_endpoint_routes_to_the_least_busy_instance() -> None:
    (variant,) = _props("SonicEndpointConfig")["ProductionVariants"]
    assert variant["InstanceType"] == {"Ref": "SonicInstanceType"}
    assert variant["InitialInstanceCount"] == {"Ref": "SonicInitialInstanceCount"}
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}


def test_the_sonic_endpoint_scales_on_concurrent_requests() -> None:
    target = _props("SonicScalableTarget")
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    assert (target["MinCapacity"], target["MaxCapacity"]) == (
        {"Ref": "SonicMinInstanceCount"},
        {"Ref": "SonicMaxInstanceCount"},
    )
    tracking = _props("SonicScalingPolicy")["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    }


def test_synthesize_calls_whichever_endpoint_is_in_use() -> None:
    assert _props("SonicEndpoint")["EndpointName"] == {"Ref": "SonicEndpointName"}
    assert _props("SynthesizeFunction")["Environment"]["Variables"]["SONIC_ENDPOINT_NAME"] == {
        "Ref": "SonicEndpointName"
    }
    assert re.fullmatch(PARAMETERS["SonicEndpointName"]["AllowedPattern"], "sonic-prod")
    assert not re.fullmatch(PARAMETERS["SonicEndpointName"]["AllowedPattern"], "Sonic-Prod")


# --- self-managed Sonic: the fleet nested from deploy/, the functions in its VPC ---------------------------

SONIC_CALLERS = ["SynthesizeFunction", "TranscribeStreamFunction"]


@pytest.mark.parametrize(
    ("hosting", "api", "backend"),
    [
        ("sagemaker", "container", "sagemaker"),
        ("self-managed", "container", "container"),
        ("self-managed", "cartesia-api", "cartesia-api"),
        ("cartesia-api", "container", "cartesia-api"),
    ],
)
def test_the_sonic_hosting_chooses_the_functions_backend(hosting: str, api: str, backend: str) -> None:
    from voicebridge_dev.template import Resolver

    resolver = Resolver(TEMPLATE, parameters={"SonicHosting": hosting, "SonicSelfManagedApi": api})

    assert PARAMETERS["SonicHosting"]["AllowedValues"] == ["sagemaker", "self-managed", "cartesia-api"]
    assert resolver.resolve(SONIC_BACKEND_OF_HOSTING) == backend
    assert set(get_args(SonicBackendName)) == {"sagemaker", "container", "cartesia-api"}


def test_the_fleet_is_the_nested_stack_of_deploy_given_an_image() -> None:
    fleet = RESOURCES["SonicFleet"]

    assert (fleet["Type"], fleet["Condition"]) == ("AWS::Serverless::Application", "CreateSonicFleet")
    assert fleet["Properties"]["Location"] == "deploy/sonic-self-managed.yaml"
    assert TEMPLATE["Conditions"]["CreateSonicFleet"] == {
        "Fn::And": [
            {"Condition": "SelfManagedSonic"},
            {"Fn::Not": [{"Fn::Equals": [{"Ref": "SonicImageRepositoryName"}, ""]}]},
        ]
    }


def test_every_parameter_the_fleet_is_given_is_one_it_declares() -> None:
    nested = load_template(ROOT / "deploy" / "sonic-self-managed.yaml")["Parameters"]
    given = RESOURCES["SonicFleet"]["Properties"]["Parameters"]

    assert set(given) <= set(nested)
    required = {name for name, spec in nested.items() if "Default" not in spec}
    assert required <= set(given)


@pytest.mark.parametrize("function", SONIC_CALLERS)
def test_the_functions_that_call_sonic_join_its_vpc_only_when_it_is_self_managed(function: str) -> None:
    vpc = _props(function)["VpcConfig"]
    condition, inside, outside = vpc["Fn::If"]

    assert (condition, outside) == ("SelfManagedSonic", {"Ref": "AWS::NoValue"})
    assert inside["SubnetIds"] == {"Fn::Split": [",", {"Fn::Join": [",", {"Ref": "SonicSubnetIds"}]}]}
    with_fleet, without_fleet = inside["SecurityGroupIds"]["Fn::If"][1:]
    client_group = {"Fn::GetAtt": ["SonicFleet", "Outputs.ClientSecurityGroupId"]}
    assert client_group in with_fleet["Fn::Split"][1]["Fn::Join"][1]
    assert without_fleet == {"Fn::Split": [",", {"Fn::Join": [",", {"Ref": "SonicFunctionSecurityGroupIds"}]}]}


def test_only_the_functions_that_call_sonic_may_join_a_vpc() -> None:
    assert [function for function in FUNCTIONS if "VpcConfig" in _props(function)] == SONIC_CALLERS


def test_self_managed_sonic_is_refused_without_its_network_or_a_fleet() -> None:
    rules = TEMPLATE["Rules"]

    assert rules["SelfManagedSonicNeedsANetwork"]["RuleCondition"] == {
        "Fn::Equals": [{"Ref": "SonicHosting"}, "self-managed"]
    }
    needs = [assertion["Assert"] for assertion in rules["SelfManagedSonicNeedsANetwork"]["Assertions"]]
    assert needs == [
        {"Fn::Not": [{"Fn::EachMemberEquals": [{"Ref": "SonicSubnetIds"}, ""]}]},
        {"Fn::Not": [{"Fn::EachMemberEquals": [{"Ref": "SonicFunctionSecurityGroupIds"}, ""]}]},
    ]
    assert {"SonicFleetNeedsAVpcAndATag", "SelfManagedSonicNeedsAFleet"} <= set(rules)


def test_the_fleet_takes_the_instance_types_the_stack_of_deploy_allows() -> None:
    nested = load_template(ROOT / "deploy" / "sonic-self-managed.yaml")["Parameters"]

    assert PARAMETERS["SonicGpuInstanceType"]["AllowedValues"] == nested["InstanceType"]["AllowedValues"]
    assert PARAMETERS["SonicGpuInstanceType"]["Default"] == nested["InstanceType"]["Default"]


# --- dashboard and alarms ----------------------------------------------------------------------------------


def test_the_dashboard_body_is_json_once_substituted() -> None:
    assert _dashboard()["widgets"]


def test_the_dashboard_shows_every_metric_of_the_service() -> None:
    shown = {m[1] for m in _dashboard_metrics() if m[0] == "VoiceBridge"}
    assert shown == set(LATENCY_METRICS) | set(COUNT_METRICS)
    assert all(m[2:4] == ["service", "voicebridge"] for m in _dashboard_metrics() if m[0] == "VoiceBridge")


@pytest.mark.parametrize("metric", LATENCY_METRICS)
def test_the_dashboard_shows_p50_p90_p99_of_each_latency(metric: str) -> None:
    stats = {m[-1]["stat"] for m in _dashboard_metrics() if m[:2] == ["VoiceBridge", metric]}
    assert stats == {"p50", "p90", "p99"}


def test_the_dashboard_shows_the_cache_hit_rate_as_an_average() -> None:
    stats = {m[-1]["stat"] for m in _dashboard_metrics() if m[:2] == ["VoiceBridge", "PromptCacheHit"]}
    assert stats == {"Average"}


@pytest.mark.parametrize("metric", ["Errors", "Throttles", "Duration"])
def test_the_dashboard_shows_lambda_health_of_every_function(metric: str) -> None:
    functions = {m[3] for m in _dashboard_metrics() if m[:3] == ["AWS/Lambda", metric, "FunctionName"]}
    assert functions == set(FUNCTIONS)


def _alarms() -> dict[str, dict[str, Any]]:
    return {name: resource["Properties"] for name, resource in _of_type("AWS::CloudWatch::Alarm").items()}


def test_alarms_watch_latency_errors_lag_and_throttling() -> None:
    watched = {
        (a["Namespace"], a["MetricName"], a.get("ExtendedStatistic", a.get("Statistic"))) for a in _alarms().values()
    }
    assert {
        ("VoiceBridge", "SonicTimeToFirstByte", "p90"),
        ("VoiceBridge", "InkTurnLatency", "p90"),
        ("VoiceBridge", "SynthesisErrors", "Sum"),
        ("VoiceBridge", "ListenErrors", "Sum"),
        ("VoiceBridge", "KvsLag", "Maximum"),
        ("VoiceBridge", "ReplyFirstPromptReady", "p90"),
        ("AWS/Lambda", "Throttles", "Sum"),
    } <= watched


def test_the_reply_latency_alarm_watches_caller_stop_to_first_prompt_against_its_parameter() -> None:
    (alarm,) = [a for a in _alarms().values() if a["MetricName"] == "ReplyFirstPromptReady"]
    assert alarm["Threshold"] == {"Ref": "AlarmReplyFirstPromptP90Ms"}
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (60, 5, 3)
    assert PARAMETERS["AlarmReplyFirstPromptP90Ms"]["Default"] == 1500


def test_alarms_notify_the_topic_only_when_one_is_given() -> None:
    notify = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    for name, alarm in _alarms().items():
        assert (alarm["AlarmActions"], alarm["OKActions"]) == (notify, notify), name


# --- outputs, documentation, packaging ---------------------------------------------------------------------


def test_outputs_name_each_function_arn_as_flows_render_reads_them() -> None:
    outputs = TEMPLATE["Outputs"]
    for function in FUNCTIONS:
        assert outputs[f"{function}Arn"]["Value"] == {"Fn::GetAtt": [function, "Arn"]}


def test_outputs_give_what_an_operator_needs_after_a_deploy() -> None:
    assert {
        "PromptBucketName",
        "TurnTableName",
        "CartesiaApiKeySecretArn",
        "DashboardUrl",
        "SonicEndpointName",
        "VoiceAgentContactFlowId",
        "EchoContactFlowId",
        "ListenOnlyContactFlowId",
    } <= set(TEMPLATE["Outputs"])


def test_every_parameter_is_documented_in_the_configuration_reference() -> None:
    rows = "\n".join(line for line in _configuration_reference().splitlines() if line.startswith("|"))
    documented = set(re.findall(r"`([A-Za-z0-9]+)`", rows))
    assert set(PARAMETERS) - documented == set()


def test_every_environment_variable_the_template_sets_is_documented_in_the_configuration_reference() -> None:
    reference = _configuration_reference()
    for function in FUNCTIONS:
        for name in _props(function)["Environment"]["Variables"]:
            assert f"| `{name}` |" in reference, name


# boto3 ships with the Lambda runtime; every other project dependency is something the runtime imports (PyYAML and
# pydantic, which only the developer side uses, are in the dev extra; the cartesia SDK brings its own pydantic).
LEFT_OUT_OF_THE_LAMBDA_PACKAGE = {"boto3", "botocore"}
REQUIREMENTS = ROOT / "src" / "runtime" / "requirements"
# What each function ships besides the runtime package: AwaitTurn, StartListening and Converse only log and count;
# TranscribeStream speaks the replies with what Synthesize ships.
SHIPPED_DISTRIBUTIONS = {
    "SynthesizeFunction": {"aws-lambda-powertools", "numpy", "soxr", "cartesia", "httpx"},
    "StartListeningFunction": {"aws-lambda-powertools"},
    "TranscribeStreamFunction": {
        "aws-lambda-powertools",
        "numpy",
        "soxr",
        "cartesia",
        "websockets",
        "httpx",
        "onnxruntime",
    },
    "AwaitTurnFunction": {"aws-lambda-powertools"},
    "ConverseFunction": {"aws-lambda-powertools"},
    "CallRecordFunction": {"aws-lambda-powertools"},
}


def _requirements(function: str) -> list[Requirement]:
    text = (REQUIREMENTS / f"{function}.txt").read_text(encoding="utf-8")
    return [
        Requirement(line.strip()) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def _project_dependencies() -> dict[str, Requirement]:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return {requirement.name.lower(): requirement for requirement in map(Requirement, dependencies)}


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_each_function_is_built_from_its_own_requirements(function: str) -> None:
    assert RESOURCES[function]["Metadata"]["BuildMethod"] == "makefile"
    assert {requirement.name.lower() for requirement in _requirements(function)} == SHIPPED_DISTRIBUTIONS[function]


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_every_function_requirement_is_a_project_dependency_with_the_same_range(function: str) -> None:
    dependencies = _project_dependencies()
    for requirement in _requirements(function):
        declared = dependencies[requirement.name.lower()]
        assert requirement.specifier == declared.specifier, requirement
        assert requirement.extras <= declared.extras, requirement
        assert requirement.marker is None and requirement.url is None, requirement


def test_the_lambda_package_leaves_out_what_the_runtime_has_or_only_tools_use() -> None:
    shipped = {requirement.name.lower() for function in FUNCTIONS for requirement in _requirements(function)}
    assert shipped.isdisjoint(LEFT_OUT_OF_THE_LAMBDA_PACKAGE)


def test_some_function_ships_every_other_project_dependency() -> None:
    shipped = {requirement.name.lower() for function in FUNCTIONS for requirement in _requirements(function)}
    assert set(_project_dependencies()) - LEFT_OUT_OF_THE_LAMBDA_PACKAGE == shipped


def test_samconfig_deploys_dev_by_default_and_confirms_prod_changes() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    dev, prod = config["default"], config["prod"]
    assert dev["global"]["parameters"]["stack_name"] != prod["global"]["parameters"]["stack_name"]
    assert prod["deploy"]["parameters"]["confirm_changeset"] is True
    for environment in (dev, prod):
        deploy = environment["deploy"]["parameters"]
        assert "CAPABILITY_IAM" in deploy["capabilities"].split()
        assert deploy["resolve_s3"] is True


@pytest.mark.parametrize("environment", ["default", "prod"])
def test_samconfig_overrides_only_parameters_the_template_declares(environment: str) -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    overrides = config[environment]["deploy"]["parameters"]["parameter_overrides"]
    for item in overrides:
        name, value = item.split("=", 1)
        assert name in PARAMETERS, name
        pattern = PARAMETERS[name].get("AllowedPattern")
        assert pattern is None or re.fullmatch(pattern, value), item


@pytest.mark.parametrize(("parameters", "reserved"), [({}, None), ({"LongPollReservedConcurrency": "1200"}, 1200)])
def test_only_the_long_polls_can_be_given_reserved_concurrency_and_only_when_asked(
    parameters: dict[str, str], reserved: int | None
) -> None:
    """The consumers hold concurrency for a whole call: a reservation keeps the flows' long polls answered."""
    from voicebridge_dev.template import function_spec

    given = {name: function_spec(TEMPLATE, name, parameters=parameters).reserved_concurrency for name in FUNCTIONS}
    assert given == {
        "SynthesizeFunction": None,
        "StartListeningFunction": None,
        "TranscribeStreamFunction": None,
        "AwaitTurnFunction": reserved,
        "ConverseFunction": reserved,
        "CallRecordFunction": None,
    }
    assert PARAMETERS["LongPollReservedConcurrency"]["Default"] == 0
