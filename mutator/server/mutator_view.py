"""What the mutator saw for one attempt: its prompt and briefing, its transcript (each model turn's tool calls and
tokens), what it returned, and the read-only evidence staged beside its skill/ — read from the attempt's workspace
(`<data_dir>/workspaces/<run>/round-R-S/`, where mutator/round/loop.py stages it), never written.

Every path is resolved inside the store's data dir; texts are capped (mutator/server/files.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import sqlite_utils

from mutator.server.files import SEGMENT, read_capped
from mutator.server.sql import one
from mutator.server.stores import Store, inside

STAGED = ("evidence", "history", "tasks", "solve", "refs")   # the read-only folders beside skill/
TOP = ("prompt.md", "briefing.md", "result.json", "agent.stderr")
MAX_FILES = 500


def workspace(store: Store, db: sqlite_utils.Database, attempt_id: int) -> tuple[dict | None, Path | None]:
    a = one(db, "select id, run_id, round, sibling, mutator_cost_usd, mutator_input_tokens, mutator_output_tokens, "
                "mutator_cache_write_tokens, mutator_cache_read_tokens, mutator_retries from attempts where id = ?",
            [attempt_id])
    if a is None or not SEGMENT.match(a["run_id"] or ""):
        return a, None
    found = inside(store.data_dir, store.data_dir / "workspaces" / a["run_id"] / f"round-{a['round']}-{a['sibling']}")
    return a, found if found is not None and found.is_dir() else None


def turns(stream_text: str) -> list[dict]:
    """The transcript as turns: each assistant message's text, tool calls and tokens; each tool result; the result."""
    out = []
    for line in stream_text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        kind = ev.get("type")
        content = (ev.get("message") or {}).get("content") or []
        if kind == "assistant":
            usage = (ev.get("message") or {}).get("usage") or {}
            out.append({"kind": "assistant", "text": "\n".join(c.get("text", "") for c in content if c.get("type") == "text"),
                        "tools": [{"name": c.get("name"), "input": json.dumps(c.get("input"))[:400]}
                                  for c in content if c.get("type") == "tool_use"],
                        "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens")})
        elif kind == "user":
            results = [c for c in content if c.get("type") == "tool_result"]
            out += [{"kind": "tool_result", "text": str(c.get("content"))[:400]} for c in results]
        elif kind == "result":
            out.append({"kind": "result", "subtype": ev.get("subtype"), "num_turns": ev.get("num_turns"),
                        "cost_usd": ev.get("total_cost_usd"), "is_error": ev.get("is_error")})
    return out


def staged(folder: Path) -> list[dict]:
    """The staged read-only files (relative path, bytes), at most MAX_FILES, in path order."""
    files = []
    for name in STAGED:
        root = folder / name
        if root.is_dir():
            files += [p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()]
    return [{"path": p.relative_to(folder).as_posix(), "bytes": p.stat().st_size} for p in files[:MAX_FILES]]


def view(store: Store, db: sqlite_utils.Database, attempt_id: int, file: str | None = None) -> dict | None:
    """{attempt's call figures, found, texts of TOP files, turns, staged files} or, with `file`, that staged file."""
    a, folder = workspace(store, db, attempt_id)
    if a is None:
        return None
    if folder is None:
        return {"attempt": a, "found": False}
    if file is not None:
        parts = file.split("/")
        path = inside(store.data_dir, folder.joinpath(*parts)) if parts[0] in STAGED and all(
            SEGMENT.match(p) for p in parts) else None
        if path is None or not path.is_file():
            return {"attempt": a, "found": True, "file": None}
        text, truncated = read_capped(path)
        return {"attempt": a, "found": True, "file": {"path": file, "text": text, "truncated": truncated}}
    texts = {}
    for name in TOP:
        path = inside(store.data_dir, folder / name)
        if path is not None and path.is_file():
            text, truncated = read_capped(path)
            texts[name] = {"text": text, "truncated": truncated}
    stream = inside(store.data_dir, folder / "stream.jsonl")
    events = turns(read_capped(stream)[0]) if stream is not None and stream.is_file() else []
    return {"attempt": a, "found": True, "texts": texts, "turns": events, "staged": staged(folder)}
