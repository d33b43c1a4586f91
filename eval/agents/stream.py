"""Write an agent's transcript as Claude Code stream-json events (system, assistant, user, result).

Every backend writes this one shape so `eval/stream_metrics.py` reads them all alike. Each line is
flushed as it is written: the watchdog measures progress by the file growing.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass
class Totals:
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    turns: int = 0

    def add(self, usage: dict[str, int]) -> None:
        for key in USAGE_KEYS:
            self.usage[key] += int(usage.get(key) or 0)


def usage_dict(usage: object) -> dict[str, int]:
    """The four billable counts of an SDK `Usage` (or a dict); absent counts are 0."""
    get = usage.get if isinstance(usage, dict) else (lambda key: getattr(usage, key, 0))
    return {key: int(get(key) or 0) for key in USAGE_KEYS}


class StreamWriter:
    def __init__(self, path: Path | None) -> None:
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (lives as long as the agent)
        self.session_id = str(uuid.uuid4())
        self.started = time.monotonic()
        self.totals = Totals()

    def emit(self, event: dict) -> None:
        if self._file:
            self._file.write(json.dumps({**event, "session_id": self.session_id}) + "\n")
            self._file.flush()

    def init(self, *, model: str, cwd: str, tools: list[str], skills: list[str]) -> None:
        self.emit({"type": "system", "subtype": "init", "model": model, "cwd": cwd, "tools": tools,
                   "skills": skills, "permissionMode": "default"})

    def assistant(self, message: dict, usage: dict[str, int]) -> None:
        self.totals.turns += 1
        self.totals.add(usage)
        self.emit({"type": "assistant", "message": {**message, "role": "assistant", "usage": usage}})

    def tool_results(self, content: list[dict]) -> None:
        self.emit({"type": "user", "message": {"role": "user", "content": content}})

    def result(self, *, subtype: str, is_error: bool, text: str, cost_usd: float = 0.0, retries: int = 0) -> None:
        self.emit({"type": "result", "subtype": subtype, "is_error": is_error,
                   "duration_ms": int((time.monotonic() - self.started) * 1000),
                   "num_turns": self.totals.turns, "result": text, "total_cost_usd": cost_usd,
                   "usage": dict(self.totals.usage), "retries": retries})

    def close(self) -> None:
        if self._file:
            self._file.close()
            self._file = None
