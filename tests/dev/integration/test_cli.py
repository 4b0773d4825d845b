"""The command line as a user runs it: `voicebridge local up` in one process, `voicebridge invoke` in another."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from urllib.parse import urlparse

from tests.fixtures.cloud import ROOT
from voicebridge_dev.local.cloud import LOCAL_ENDPOINT_NAME, local_cloud_process


def _port_free(url: str) -> bool:
    parsed = urlparse(url)
    with socket.socket() as probe:
        return probe.connect_ex((parsed.hostname or "127.0.0.1", parsed.port or 80)) != 0


def test_local_up_then_invoke_synthesizes_a_prompt_and_stops_cleanly() -> None:
    with local_cloud_process(template=ROOT / "template.yaml", options=["--engine", "standin"]) as exports:
        expected = {"S3", "DYNAMODB", "SECRETS_MANAGER", "SAGEMAKER_RUNTIME", "KINESIS_VIDEO", "LAMBDA"}
        assert {f"AWS_ENDPOINT_URL_{name}" for name in expected} <= set(exports)
        answer = subprocess.run(
            [
                sys.executable,
                "-m",
                "voicebridge_dev.cli",
                "invoke",
                "SynthesizeFunction",
                "--event",
                "events/synthesize.json",
                "--parameter-overrides",
                f"SonicEndpointName={LOCAL_ENDPOINT_NAME}",
            ],
            cwd=ROOT,
            env={**os.environ, **exports},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        result = json.loads(answer.stdout)
        assert result["Result"] == "OK" and result["PromptUri"].endswith(".wav")
        assert '"level"' in answer.stderr  # the handler's logs went to stderr, not into the result
    assert _port_free(exports["AWS_ENDPOINT_URL_S3"]) and _port_free(exports["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"])


def test_invoke_names_the_problem_with_an_unknown_function() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "voicebridge_dev.cli", "invoke", "NoSuchFunction", "--event", "events/synthesize.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.returncode == 2
    assert "NoSuchFunction is not a function in the template" in answer.stderr


def test_mkv_dump_exits_2_with_a_one_line_reason_on_malformed_input(tmp_path: object) -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "voicebridge_dev.cli", "mkv", "dump", "-", "--track", "AUDIO_FROM_CUSTOMER"],
        input=b"\x1aE\xdf\xa3\xff\xff\xff not matroska at all" * 10,
        capture_output=True,
        timeout=60,
    )
    assert answer.returncode == 2
    assert answer.stderr.decode().startswith("voicebridge mkv dump: ") and answer.stderr.count(b"\n") == 1


def test_flows_validate_accepts_the_shipped_flows() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "voicebridge_dev.cli", "flows", "validate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.returncode == 0, answer.stdout
