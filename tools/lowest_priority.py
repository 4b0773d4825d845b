#!/usr/bin/env python3
"""Runs a command at the lowest CPU priority an unprivileged process can ask for, for as long as other work wants
the CPU: ``python3 tools/lowest_priority.py COMMAND [ARG...]``; its exit status is the command's.

``nice -n 19`` alone is not that on Linux with autogroups (``/proc/sys/kernel/sched_autogroup_enabled``, on by default
on most distributions). The scheduler shares the CPU between sessions first, each session an autogroup, and applies a
process's nice only among the processes of its own session. Two busy ``nice -n 19`` processes in one session, beside
two busy processes each in a session of its own (the local cloud's Lambda containers start each in one), took a third
of the two cores, as much as each of the others; in a session of their own whose autogroup is at nice 19 too, they
took none until the others had ended (four busy loops of 6 s on two cores). So the command runs in a new session, at
nice 19, with its autogroup set to nice 19 (``/proc/self/autogroup``; raising it needs no privilege). Where there are
no autogroups, nice alone applies, as it then does.

A session of its own has no terminal: Ctrl-C reaches this process, in the caller's process group, and not the
command, so this process passes SIGINT, SIGTERM and SIGHUP on to the command's process group. Killed outright (a CI
runner's SIGKILL to the caller's process group), it cannot: the command is then sent SIGTERM by the kernel
(``PR_SET_PDEATHSIG``), which make passes on to what it runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from types import FrameType

LOWEST = 19
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the calling process gets when its parent ends (Linux)."""


def lower_this_process() -> None:
    """In the command's process, once it has a session of its own: nice 19, its autogroup at nice 19, and SIGTERM
    when this tool ends."""
    os.nice(LOWEST - os.nice(0))
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    # No autogroups (disabled, or a kernel without them): nice alone applies to every process, which is enough.
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write(str(LOWEST))


def run(command: list[str]) -> int:
    """Runs ``command`` so, passing the signals on; its exit status (128 + the signal's number if a signal ended it)."""
    started: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []

    def forward(number: int, frame: FrameType | None) -> None:
        if not started:
            pending.append(number)  # came while the command was starting: passed on once it has
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started[0].pid, number)

    for kind in FORWARDED:
        signal.signal(kind, forward)
    # The command's handlers are the defaults again: exec resets a signal that is caught.
    started.append(subprocess.Popen(command, start_new_session=True, preexec_fn=lower_this_process))
    for waiting in pending:
        forward(waiting, None)
    status = started[0].wait()
    return 128 - status if status < 0 else status


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: lowest_priority.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    try:
        return run(argv)
    except FileNotFoundError as exc:
        print(f"lowest_priority.py: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
