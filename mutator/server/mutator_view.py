"""What the mutator saw for one attempt: its prompt and briefing, its transcript (each model turn's tool calls
and tokens), what it returned, read from the attempt's workspace (`<data_dir>/workspaces/<run>/round-R-S/`,
where mutator/round/loop.py stages it); and the read-only evidence staged beside its skill/, through the
store's own reader (mutator/store/evidence.py), which still finds what the evidence store keeps once the
workspace is gone. Never written.

Every path is resolved inside the store's data dir; texts are capped (mutator/server/files.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import sqlite_utils

from eval.stream_metrics import decode_line
from mutator.server.files import SEGMENT, read_capped
from mutator.server.stores import Store, inside
from mutator.store import evidence
from mutator.store.queries import attempts

TOP = ("prompt.md", "briefing.md", "result.json", "agent.stderr")
MAX_FILES = 500


def attempt_of(db: sqlite_utils.Database, attempt_id: int) -> dict | None:
    """The attempt's place and its mutator call's figures."""
    return attempts.mutator_call(db, attempt_id)


def workspace(store: Store, a: dict) -> Path | None:
    folder = evidence.workspace_dir(store.data_dir, a["run_id"], f"round-{a['round']}-{a['sibling']}")
    found = inside(store.data_dir, folder)
    return found if found is not None and found.is_dir() else None


def turns(stream_text: str) -> list[dict]:
    """The transcript as turns: each assistant message's text, tool calls and tokens; each tool result; the
    result."""
    out = []
    for line in stream_text.splitlines():
        try:
            ev = decode_line(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        kind = ev.get("type")
        content = (ev.get("message") or {}).get("content") or []
        if kind == "assistant":
            usage = (ev.get("message") or {}).get("usage") or {}
            text = "\n".join(c.get("text", "") for c in content if c.get("type") == "text")
            out.append({"kind": "assistant", "text": text,
                        "tools": [{"name": c.get("name"), "input": json.dumps(c.get("input"))[:400]}
                                  for c in content if c.get("type") == "tool_use"],
                        "input_tokens": usage.get("input_tokens"),
                        "output_tokens": usage.get("output_tokens")})
        elif kind == "user":
            results = [c for c in content if c.get("type") == "tool_result"]
            out += [{"kind": "tool_result", "text": str(c.get("content"))[:400]} for c in results]
        elif kind == "result":
            out.append({"kind": "result", "subtype": ev.get("subtype"), "num_turns": ev.get("num_turns"),
                        "cost_usd": ev.get("total_cost_usd"), "is_error": ev.get("is_error")})
    return out


def shown(store: Store, db: sqlite_utils.Database, a: dict) -> tuple[dict[str, Path], str]:
    """{relative path: file} of the evidence staged for the attempt, and where it was read: its workspace,
    else what the evidence store keeps of it."""
    name = f"round-{a['round']}-{a['sibling']}"
    files = evidence.staged(store.data_dir, a["run_id"], name)
    # its history was the run's shared one, bound in by the sandbox
    if files and "history/ledger.md" not in files:
        both = {**evidence.kept(db, store.data_dir, a), **files}
        return dict(sorted(both.items())), "workspace and evidence store"
    if files:
        return files, "workspace"
    return evidence.kept(db, store.data_dir, a), "evidence store"


def view(store: Store, db: sqlite_utils.Database, attempt_id: int, file: str | None = None) -> dict | None:
    """{attempt's call figures, found (its workspace), texts of TOP files, turns, staged files and their
    source} or, with `file`, that staged file."""
    a = attempt_of(db, attempt_id)
    if a is None:
        return None
    public = {k: v for k, v in a.items() if k != "parent_hash"}
    if not SEGMENT.match(a["run_id"] or ""):
        return {"attempt": public, "found": False, "texts": {}, "turns": [], "staged": [], "source": None}
    files, source = shown(store, db, a)
    if file is not None:
        path = inside(store.data_dir, files[file]) if file in files else None
        if path is None or not path.is_file():
            return {"attempt": public, "file": None}
        text, truncated = read_capped(path)
        return {"attempt": public, "file": {"path": file, "text": text, "truncated": truncated}}
    folder, texts, events = workspace(store, a), {}, []
    for name in TOP if folder is not None else ():
        path = inside(store.data_dir, folder / name)
        if path is not None and path.is_file():
            text, truncated = read_capped(path)
            texts[name] = {"text": text, "truncated": truncated}
    stream = inside(store.data_dir, folder / "stream.jsonl") if folder is not None else None
    if stream is not None and stream.is_file():
        events = turns(read_capped(stream)[0])
    listed = [{"path": rel, "bytes": path.stat().st_size} for rel, path in list(files.items())[:MAX_FILES]]
    return {"attempt": public, "found": folder is not None, "texts": texts, "turns": events, "staged": listed,
            "source": source if listed else None}
