"""The watchdog's budgets when the agent is faster than the watch: a stream already written when supervision
begins counts as started, so the heartbeat budget applies, not the (long) silence budget."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from eval.supervisor import supervise


def test_a_stream_written_before_the_watch_began_gets_the_heartbeat_budget(tmp_path: Path) -> None:
    stream = tmp_path / "stream.jsonl"
    stream.write_text('{"type": "system"}\n')          # the agent's first event, already on disk

    async def watch():
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(30)",
                                                    start_new_session=True)
        return await supervise(proc, stream, silence_ms=20_000, heartbeat_ms=300)

    result = asyncio.run(watch())
    assert result.timed_out
    assert result.reason == "watchdog: no stream growth for 300 ms (heartbeat budget)"
