"""tools/lowest_priority.py, which runs make test's other checks beside the integration tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.fixtures.cloud import ROOT

TOOL = str(ROOT / "tools" / "lowest_priority.py")

REPORT = """
import json, os
try:
    autogroup = open("/proc/self/autogroup").read().strip()
except OSError:
    autogroup = None
print(json.dumps({"session": os.getsid(0), "nice": os.nice(0), "autogroup": autogroup}))
"""


def test_the_command_runs_in_a_session_of_its_own_at_nice_19_with_its_autogroup_at_nice_19() -> None:
    out = subprocess.run([sys.executable, TOOL, sys.executable, "-c", REPORT], capture_output=True, timeout=30)

    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["session"] != os.getsid(0)
    assert seen["nice"] == 19
    if seen["autogroup"] is not None:
        # "/autogroup-<id> nice <n>": the command's session, not this one, at the lowest priority.
        assert seen["autogroup"].endswith(" nice 19"), seen["autogroup"]
        assert seen["autogroup"] != Path("/proc/self/autogroup").read_text().strip()


def test_the_exit_status_is_the_commands() -> None:
    assert (
        subprocess.run([sys.executable, TOOL, sys.executable, "-c", "raise SystemExit(3)"], timeout=30).returncode == 3
    )
    missing = subprocess.run([sys.executable, TOOL, "no-such-command-anywhere"], capture_output=True, timeout=30)
    assert missing.returncode == 127 and b"no-such-command-anywhere" in missing.stderr
    assert subprocess.run([sys.executable, TOOL], capture_output=True, timeout=30).returncode == 2


@contextlib.contextmanager
def _sleeping() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The tool running a command that names its process, then sleeps; the tool and that process's id."""
    sleeper = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    tool = subprocess.Popen([sys.executable, TOOL, sys.executable, "-c", sleeper], stdout=subprocess.PIPE)
    try:
        assert tool.stdout is not None
        yield tool, int(tool.stdout.readline())
    finally:
        tool.kill()
        tool.wait(timeout=20)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody has reaped yet has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_a_signal_to_it_reaches_the_command_in_its_own_session() -> None:
    # A Ctrl-C or a kill reaches this tool only: the command is in a session of its own.
    with _sleeping() as (tool, command):
        tool.send_signal(signal.SIGTERM)
        assert tool.wait(timeout=20) == 128 + signal.SIGTERM
    # The tool waited for the command: it has ended and been reaped.
    assert not _running(command)


def test_the_command_ends_when_the_tool_is_killed_outright() -> None:
    with _sleeping() as (tool, command):
        tool.kill()
        tool.wait(timeout=20)
        deadline = time.monotonic() + 20
        while _running(command) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(command), f"the command {command} outlived the tool"
