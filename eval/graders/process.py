"""Run a grader-side helper process with a payload on stdin and a hard timeout; kill its group on expiry.

Returns its stdout text or an error string; logs stdout/stderr beside the cell like the script grader.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from eval.supervisor import kill_group


async def run_helper(argv: Sequence[str], *, payload: bytes, cwd: Path, env: dict[str, str], timeout_s: float,
                     log_dir: Path, what: str) -> tuple[str | None, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(payload), timeout=timeout_s)
    except TimeoutError:
        kill_group(proc.pid)
        await proc.wait()
        return None, f"{what} timed out after {timeout_s:g} s and was killed"
    except BaseException:
        kill_group(proc.pid)
        raise
    err_text = stderr.decode("utf-8", "replace")[-4000:]
    (log_dir / "grade.stderr").write_text(err_text, encoding="utf-8")
    (log_dir / "grade.stdout").write_bytes(stdout[-100_000:])
    if proc.returncode != 0:
        return None, f"{what} exited {proc.returncode}: {err_text.strip() or '(no stderr)'}"
    return stdout.decode("utf-8", "replace"), ""
