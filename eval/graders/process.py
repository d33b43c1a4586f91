"""Run a grader-side helper process with a payload on stdin and a hard timeout; kill its group on expiry.

Its stdout and stderr go to files beside the cell (grade.stdout, grade.stderr) rather than pipes, so a
grader that exits 0 with valid JSON is not failed because a child it left still holds a pipe: once it
exits, its group is killed and its output read, up to a cap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from eval import child_watch
from eval.supervisor import kill_and_reap

OUTPUT_CAP = 1 << 20      # bytes of a grader's stdout that are read; the rest is ignored
STDERR_KEEP = 4000


async def run_helper(argv: Sequence[str], *, payload: bytes, cwd: Path, env: dict[str, str], timeout_s: float,
                     log_dir: Path, what: str) -> tuple[str | None, str]:
    child_watch.install()
    out_path, err_path = log_dir / "grade.stdout", log_dir / "grade.stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=out, stderr=err,
            start_new_session=True)
    try:
        try:
            assert proc.stdin is not None
            proc.stdin.write(payload)
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass   # a grader that ignores stdin may exit before reading it
        try:
            await asyncio.wait_for(proc.wait(), timeout=timeout_s)
        except TimeoutError:
            await kill_and_reap(proc)
            return None, f"{what} timed out after {timeout_s:g} s and was killed"
    finally:
        await kill_and_reap(proc)   # anything the grader left running goes with it
    err_text = _read(err_path, 1 << 20)[-STDERR_KEEP:]
    err_path.write_text(err_text, encoding="utf-8")
    if proc.returncode != 0:
        return None, f"{what} exited {proc.returncode}: {err_text.strip() or '(no stderr)'}"
    text = _read(out_path, OUTPUT_CAP)
    if out_path.stat().st_size > OUTPUT_CAP:
        with open(out_path, "r+b") as f:
            f.truncate(OUTPUT_CAP)
    return text, ""


def _read(path: Path, cap: int) -> str:
    with open(path, "rb") as f:
        return f.read(cap).decode("utf-8", "replace")
