"""The command line as a user runs it: `voicebridge local up` in one process, `voicebridge local call` and
`voicebridge invoke` in others, each bounded in time, over loopback only."""

from __future__ import annotations

import base64
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

import numpy as np
import pytest

from tests.fixtures.cloud import ROOT
from voicebridge.audio.wav import pcm16_wav_bytes
from voicebridge_dev.local.cloud import ChildLines, local_cloud_process
from voicebridge_dev.local.speech_engine import StandInSpeechEngine

CLI = [sys.executable, "-m", "voicebridge_dev.cli"]
SAID = "I would like to pay my bill"
# One turn: a moment of silence, the words, then silence long enough for the turn to end.
LEADING_SILENCE_S, TRAILING_SILENCE_S = 0.5, 4.0


def _port_free(url: str) -> bool:
    parsed = urlparse(url)
    with socket.socket() as probe:
        return probe.connect_ex((parsed.hostname or "127.0.0.1", parsed.port or 80)) != 0


def _tail(log: IO[bytes], lines: int = 40) -> str:
    """The end of local up's log, for a failure's message."""
    log.flush()
    return "\n".join(Path(log.name).read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def local_up_log() -> Iterator[IO[bytes]]:
    with tempfile.NamedTemporaryFile(prefix="local-up-", suffix=".log") as log:
        yield log


@pytest.fixture(scope="module")
def exports(local_up_log: IO[bytes]) -> Iterator[dict[str, str]]:
    """A `voicebridge local up` of the test's own, its exports; stopped when the module's tests are done."""
    with local_cloud_process(
        template=ROOT / "template.yaml", options=["--engine", "standin"], stderr=local_up_log
    ) as variables:
        yield variables


def _run(args: list[str], env: dict[str, str], timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def _utterance() -> np.ndarray:
    return StandInSpeechEngine().synthesize(SAID, 8000, 1.0)


def _caller_wav(folder: Path, speech: np.ndarray) -> Path:
    silence = [np.zeros(round(8000 * seconds), dtype=np.int16) for seconds in (LEADING_SILENCE_S, TRAILING_SILENCE_S)]
    path = folder / "caller.wav"
    path.write_bytes(pcm16_wav_bytes(np.concatenate([silence[0], speech, silence[1]]), 8000))
    return path


def _register_transcript(ink_url: str, speech: np.ndarray, transcript: str) -> None:
    """Tell the Ink emulator what the clip says, over its control plane, as another process does."""
    body = json.dumps({"pcm_base64": base64.b64encode(speech.tobytes()).decode(), "transcript": transcript})
    request = urllib.request.Request(
        f"{ink_url}/_emulator/transcripts",
        data=body.encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 201


def _await_event(contact_id: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROOT / "events" / "await-turn.json").read_text())
    event["Details"]["ContactData"]["ContactId"] = event["Details"]["ContactData"]["InitialContactId"] = contact_id
    return event


def _call(env: dict[str, str], wav: Path, *options: str) -> subprocess.Popen[bytes]:
    command = [*CLI, "local", "call", "--caller", str(wav), *options]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _stop(*children: subprocess.Popen[Any]) -> None:
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def test_local_up_prints_every_export_a_client_needs(exports: dict[str, str]) -> None:
    services = {"S3", "DYNAMODB", "SECRETS_MANAGER", "SAGEMAKER_RUNTIME", "KINESIS_VIDEO", "LAMBDA"}
    assert {f"AWS_ENDPOINT_URL_{name}" for name in services} <= set(exports)
    assert {"CARTESIA_BASE_URL", "CARTESIA_API_KEY", "SONIC_BASE_URL", "AWS_DEFAULT_REGION"} <= set(exports)
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(exports)
    assert all(urlparse(v).hostname == "127.0.0.1" for k, v in exports.items() if k.startswith("AWS_ENDPOINT_URL_"))


def test_invoke_synthesizes_a_prompt_with_no_parameter_overrides(
    exports: dict[str, str], local_up_log: IO[bytes]
) -> None:
    answer = _run(["invoke", "SynthesizeFunction", "--event", "events/synthesize.json"], {**os.environ, **exports})
    assert answer.returncode == 0, answer.stderr[-2000:]
    result = json.loads(answer.stdout)
    assert result["Result"] == "OK" and result["PromptUri"].endswith(".wav"), (result, _tail(local_up_log))
    assert '"level"' in answer.stderr  # the handler's logs went to stderr, not into the result


def test_local_call_prints_the_start_listening_event_once_streaming_has_started(
    exports: dict[str, str], tmp_path: Path
) -> None:
    contact_id = str(uuid.uuid4())
    call = _call({**os.environ, **exports}, _caller_wav(tmp_path, _utterance()), "--contact-id", contact_id)
    try:
        assert call.stdout is not None and call.stderr is not None
        event = json.loads(_first_json_text(call.stdout, timeout_s=30))
        assert call.poll() is None, "the event comes while the call goes on"
        contact = event["Details"]["ContactData"]
        audio = contact["MediaStreams"]["Customer"]["Audio"]
        assert event["Name"] == "ContactFlowEvent" and contact["ContactId"] == contact_id
        assert f":stream/connect-local-contact-{contact_id}/" in audio["StreamARN"]
        assert audio["StartFragmentNumber"].isdigit()
        assert abs(int(audio["StartTimestamp"]) - time.time() * 1000) < 30_000
        assert call.wait(timeout=60) == 0, call.stderr.read().decode()
        assert f"contact {contact_id} ended" in call.stderr.read().decode()
    finally:
        _stop(call)


def test_a_local_call_piped_into_start_listening_gives_await_turn_the_callers_turn(
    exports: dict[str, str], local_up_log: IO[bytes], tmp_path: Path
) -> None:
    env = {**os.environ, **exports}
    speech = _utterance()
    _register_transcript(exports["CARTESIA_BASE_URL"], speech, SAID)
    contact_id = str(uuid.uuid4())
    call = _call(env, _caller_wav(tmp_path, speech), "--contact-id", contact_id)
    # `voicebridge local call … | voicebridge invoke StartListeningFunction --event -`
    start = subprocess.Popen(
        [*CLI, "invoke", "StartListeningFunction", "--event", "-"],
        cwd=ROOT,
        env=env,
        stdin=call.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert call.stdout is not None
    call.stdout.close()
    try:
        started, logs = start.communicate(timeout=60)
        assert start.returncode == 0, logs[-2000:]
        assert json.loads(started)["Result"] == "OK", (started, _tail(local_up_log))
        assert call.poll() is None, "StartListening ran while the call went on"

        (tmp_path / "await.json").write_text(json.dumps(_await_event(contact_id)))
        turn = _await_turn(env, tmp_path / "await.json", deadline_s=60)
        assert turn == {"Result": "Turn", "Transcript": SAID, "TurnIndex": "0"}, _tail(local_up_log)
        _, progress = call.communicate(timeout=60)
        assert call.returncode == 0, progress.decode()
    finally:
        _stop(call, start)


def _first_json_text(stream: IO[bytes], timeout_s: float) -> str:
    """The first JSON document a child prints, within ``timeout_s``."""
    deadline, text = time.monotonic() + timeout_s, ""
    os.set_blocking(stream.fileno(), False)
    while time.monotonic() < deadline:
        chunk = stream.read()
        if chunk:
            text += chunk.decode()
            try:
                json.loads(text)
            except ValueError:
                continue
            return text
        time.sleep(0.02)
    raise AssertionError(f"no event on local call's stdout within {timeout_s} s: {text!r}")


def _await_turn(env: dict[str, str], event: Path, deadline_s: float) -> dict[str, str]:
    """AwaitTurnFunction's answer, awaiting again after each timeout as a flow does."""
    deadline = time.monotonic() + deadline_s
    while True:
        answer = _run(["invoke", "AwaitTurnFunction", "--event", str(event)], env, timeout=60)
        assert answer.returncode == 0, answer.stderr[-2000:]
        result: dict[str, str] = json.loads(answer.stdout)
        if result["Result"] != "Timeout" or time.monotonic() > deadline:
            return result


def test_local_call_without_local_up_exits_2_with_a_one_line_reason(tmp_path: Path) -> None:
    wav = _caller_wav(tmp_path, _utterance())
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_ENDPOINT_URL")}
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}"
    for variables in (env, {**env, "AWS_ENDPOINT_URL_KINESIS_VIDEO": closed}):
        answer = _run(["local", "call", "--caller", str(wav)], variables, timeout=60)
        assert answer.returncode == 2 and answer.stdout == ""
        assert answer.stderr.startswith("voicebridge local call: ") and answer.stderr.count("\n") == 1
        assert "voicebridge local up" in answer.stderr


def test_local_call_refuses_a_wav_it_cannot_play_with_a_one_line_reason(tmp_path: Path) -> None:
    eight_bit = tmp_path / "eight-bit.wav"
    with wave.open(str(eight_bit), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(8000)
        wav.writeframes(bytes(range(256)) * 32)
    answer = _run(["local", "call", "--caller", str(eight_bit)], dict(os.environ), timeout=60)
    assert answer.returncode == 2 and answer.stdout == ""
    assert answer.stderr.startswith(f"voicebridge local call: {eight_bit}: ") and answer.stderr.count("\n") == 1


def test_local_up_stops_cleanly_and_frees_its_ports() -> None:
    with local_cloud_process(template=ROOT / "template.yaml", options=["--engine", "standin"]) as variables:
        assert not _port_free(variables["AWS_ENDPOINT_URL_S3"])
    assert _port_free(variables["AWS_ENDPOINT_URL_S3"]) and _port_free(variables["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a signal is aimed at one thread with Linux's tgkill")
def test_local_up_stops_by_itself_when_sigterm_lands_on_one_of_its_threads() -> None:
    # The kernel may hand a process's SIGTERM to any of its threads; Python runs the handler on the main thread only.
    command = [*CLI, "local", "up", "--port-base", "0", "--engine", "standin"]
    child = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
    )
    try:
        assert child.stdout is not None
        lines = ChildLines(child.stdout, "local-up")
        line = lines.next(timeout_s=60)
        while line is not None and not line.startswith("# Ctrl-C"):
            line = lines.next(timeout_s=60)
        assert line is not None, "local up exited before it was ready"
        other_thread = max(int(task) for task in os.listdir(f"/proc/{child.pid}/task") if int(task) != child.pid)
        assert ctypes.CDLL(None, use_errno=True).tgkill(child.pid, other_thread, signal.SIGTERM) == 0
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            # Its whole process group, so the agent server it started goes too.
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)


def test_invoke_names_the_problem_with_an_unknown_function() -> None:
    answer = _run(["invoke", "NoSuchFunction", "--event", "events/synthesize.json"], dict(os.environ), timeout=60)
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
    answer = _run(["flows", "validate"], dict(os.environ), timeout=60)
    assert answer.returncode == 0, answer.stdout


def test_flows_validate_accepts_a_folder_of_flows() -> None:
    answer = _run(["flows", "validate", "contact_flows"], dict(os.environ), timeout=60)
    assert answer.returncode == 0, answer.stdout + answer.stderr


def test_local_up_serves_the_streaming_agent_to_connects_a2a_client(exports: dict[str, str]) -> None:
    import asyncio

    from voicebridge_dev.local.a2a import ConnectSettings, HangUp, run_session

    settings = ConnectSettings(api_key=exports["VOICEBRIDGE_A2A_API_KEY"], max_duration_s=30)
    result = asyncio.run(
        run_session(exports["VOICEBRIDGE_A2A_URL"], settings, caller_audio=b"", script=[HangUp(at_s=5.0)])
    )

    # The greeting, spoken after READY, with its trace and its terminal status: the contract kept.
    assert result.errors == [] and [turn.state for turn in result.turns] == ["TASK_STATE_COMPLETED"]
    with pytest.raises(Exception, match="401"):
        asyncio.run(run_session(exports["VOICEBRIDGE_A2A_URL"], ConnectSettings(api_key="wrong")))
