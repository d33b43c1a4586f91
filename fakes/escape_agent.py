"""Adversarial build agent for the sandbox proof: tries each escape and reports what succeeded.

Run like the fake agent (`python escape_agent.py`, cwd = its cell's work dir). ESCAPE_PLAN is a JSON
object naming the targets (answer_key, test_suite, sibling_cell: files to read; write_outside: a file
to create; readonly_dir: a read-only dir to remount writable and write into; port: a TCP port on
127.0.0.1; harness_pid: a pid to send SIGUSR1). It writes {attempt: {"ok": bool, "detail": str}} to
ESCAPE_REPORT (default: escape-report.json beside SM_STREAM, i.e. in its cell) and a success result
event to SM_STREAM. Stdlib only, so
a test can copy it anywhere; it never cleans up after itself — the test checks the host side.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

MS_REMOUNT = 32
MS_BIND = 4096
MARK = "escaped\n"


def read_file(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f"read {len(f.read())} chars"


def write_file(path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(MARK)
    return f"wrote {path}"


def remount_writable(path: str) -> str:
    """mount(2) MS_REMOUNT|MS_BIND without MS_RDONLY: turns a read-only bind writable, given CAP_SYS_ADMIN."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND, None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return f"remounted {path} read-write"


def connect(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as conn:
        conn.sendall(MARK.encode())
    return f"connected to 127.0.0.1:{port}"


def send_signal(pid: int) -> str:
    os.kill(pid, signal.SIGUSR1)
    return f"sent SIGUSR1 to {pid}"


def attempts(plan: dict) -> dict[str, Callable[[], str]]:
    """The escapes this plan names, in order: remount before the write into the same read-only dir."""
    steps: dict[str, Callable[[], str]] = {}
    for name in ("answer_key", "test_suite", "sibling_cell", "home"):
        if plan.get(name):
            steps[f"read_{name}"] = lambda path=plan[name]: read_file(path)
    if plan.get("write_outside"):
        steps["write_outside"] = lambda: write_file(plan["write_outside"])
    if plan.get("readonly_dir"):
        steps["remount_readonly"] = lambda: remount_writable(plan["readonly_dir"])
        steps["write_readonly"] = lambda: write_file(os.path.join(plan["readonly_dir"], "escaped.txt"))
    if plan.get("port"):
        steps["connect_localhost"] = lambda: connect(int(plan["port"]))
    if plan.get("harness_pid"):
        steps["signal_harness"] = lambda: send_signal(int(plan["harness_pid"]))
    return steps


def emit_result(stream: str | None, turns: int) -> None:
    if not stream:
        return
    with open(stream, "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": "system", "subtype": "init", "model": "escape", "cwd": os.getcwd()}) + "\n")
        f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": turns,
                            "usage": {"input_tokens": 0, "output_tokens": 0}}) + "\n")


def main() -> int:
    plan = json.loads(os.environ.get("ESCAPE_PLAN") or "{}")
    report: dict[str, dict] = {}
    for name, attempt in attempts(plan).items():
        try:
            report[name] = {"ok": True, "detail": attempt()}
        except Exception as err:  # every failure is the point: record it and try the next escape
            report[name] = {"ok": False, "detail": f"{type(err).__name__}: {err}"}
    stream = os.environ.get("SM_STREAM")
    default = Path(stream).parent / "escape-report.json" if stream else Path("escape-report.json")
    Path(os.environ.get("ESCAPE_REPORT") or default).write_text(
        json.dumps(report, indent=1), encoding="utf-8")
    emit_result(stream, len(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
