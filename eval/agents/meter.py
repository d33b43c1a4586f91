"""The meter: usage of every Messages-API response, appended to a file as the loopback proxy serves it.

`Tap` reads one response's bytes as they pass (SSE or JSON) and appends a line whenever its usage is known
or grows: at `message_start` (the input side and the first output token) and at every `message_delta`
(output so far). A stream cut mid-response keeps what was served until the cut. Each line holds the
response's cumulative usage, so `read_meter` takes the last line of each response: lines are never
summed twice. Lines are flushed as written; a killed process leaves every line it wrote.
Never prices anything and never reads the store: the harness prices what `read_meter` returns.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def agent_meter(cell_root: Path) -> Path:
    """An agent call's meter: beside its folder, never inside it (the agent may write its folder)."""
    return cell_root.with_name(f"{cell_root.name}.meter.jsonl")


def judge_meter(cell_root: Path) -> Path:
    """The LLM judge's meter for one cell, beside the cell's folder."""
    return cell_root.with_name(f"{cell_root.name}.judge.meter.jsonl")


def _counts(raw: object) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for key in USAGE_KEYS:
        value = raw.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            out[key] = int(value)
    return out


class Tap:
    """One response's bytes in, meter lines out (appended to `path`)."""

    def __init__(self, path: Path, *, streaming: bool, request_id: str) -> None:
        self.path, self.streaming, self.request_id = path, streaming, request_id
        self.buffer = b""
        self.id, self.model = request_id, ""
        self.usage: dict[str, int] = {}

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        if not self.streaming:
            return
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            self._event(event.replace(b"\r\n", b"\n"))

    def close(self) -> None:
        """End of the body (or a cut): a JSON reply is read whole; a stream's last partial event is dropped."""
        if self.streaming or not self.buffer:
            return
        try:
            body = json.loads(self.buffer)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return
        if isinstance(body, dict) and isinstance(body.get("usage"), dict):
            self.id = str(body.get("id") or self.id)
            self.model = str(body.get("model") or "")
            self.usage = _counts(body["usage"])
            self._write(final=True)

    def _event(self, raw: bytes) -> None:
        data = b"".join(line[5:].strip() for line in raw.split(b"\n") if line.startswith(b"data:"))
        try:
            event = json.loads(data) if data else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return
        if not isinstance(event, dict):
            return
        if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
            message = event["message"]
            self.id = str(message.get("id") or self.id)
            self.model = str(message.get("model") or "")
            self.usage = _counts(message.get("usage"))
            self._write(final=False)
        elif event.get("type") == "message_delta":
            self.usage.update(_counts(event.get("usage")))   # cumulative counts, as the API sends them
            self._write(final=False)
        elif event.get("type") == "message_stop" and self.usage:
            self._write(final=True)

    def _write(self, *, final: bool) -> None:
        line = json.dumps({"id": self.id, "model": self.model, "usage": {k: self.usage.get(k, 0) for k in USAGE_KEYS},
                           "final": final, "at": time.time()})
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (line + "\n").encode())   # one write of one line: whole, or (killed before it) absent
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Metered:
    """What a meter file says was served: usage per model, and how many responses."""
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    responses: int = 0

    def total(self) -> dict[str, int]:
        return {key: sum(u.get(key, 0) for u in self.by_model.values()) for key in USAGE_KEYS}


def read_meter(path: Path) -> Metered | None:
    """The served usage in `path` (the last line of each response); None when there is no meter file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    last: dict[str, dict] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue   # a line cut by a crash mid-write: the one before it stands for that response
        if isinstance(record, dict) and isinstance(record.get("usage"), dict):
            last[str(record.get("id"))] = record
    by_model: dict[str, dict[str, int]] = {}
    for record in last.values():
        into = by_model.setdefault(str(record.get("model") or ""), dict.fromkeys(USAGE_KEYS, 0))
        for key, value in _counts(record["usage"]).items():
            into[key] += value
    return Metered(by_model, len(last))
