"""Keep the API key from a backend's tools: it arrives through a pipe, and the process is not dumpable.

The harness hands our backends their credentials through a pipe (SM_SECRETS_FD, eval/process.py), never in
their environment: an environment is printed by `env` and readable in /proc/PID/environ by every process of
the sandbox. Set with os.environ here, the values live only in this process's memory. The tools it runs are its
children, under the same user: marked not dumpable (prctl PR_SET_DUMPABLE 0), its memory (/proc/PID/mem,
/maps) can no longer be read, nor the process traced, by a process without CAP_SYS_PTRACE, which a tool in the
bwrap sandbox (--cap-drop ALL) never has. (Outside a sandbox, a tool running as root still can: that is
`--sandbox none`.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import sys

PR_SET_DUMPABLE = 4


def undumpable() -> bool:
    """Mark this process not dumpable; False where that is not possible (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def take_secrets() -> None:
    """Read the credentials from SM_SECRETS_FD into this process's os.environ (not /proc/PID/environ)."""
    fd = os.environ.pop("SM_SECRETS_FD", "")
    if not fd.isdigit():
        return
    try:
        with os.fdopen(int(fd), "r", encoding="utf-8") as pipe:
            held = json.loads(pipe.read() or "{}")
    except (OSError, ValueError):
        return
    os.environ.update({k: v for k, v in held.items() if isinstance(k, str) and isinstance(v, str)})
