"""Compact a finished cell into trajectory.md: the evidence kept after its working dir is pruned.

The trajectory holds the task prompt, each tool call and a clipped result, the agent's outcome, the
grader's per-test scores and the required outputs (clipped) — enough for a mutator to see what went
wrong, in a bounded size, whatever the agent's stream size.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from eval.stream_metrics import decode_line

CLIP = 600
OUTPUT_CLIP = 3000


def _clip(text: str, limit: int = CLIP) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_content_text(c.get("text") or c.get("content") or "")
                         if isinstance(c, dict) else str(c) for c in content)
    return str(content)


def stream_events(stream: Path) -> list[dict]:
    """The stream's events; a half-written line (a killed agent) is skipped, the rest still count."""
    events = []
    if stream.is_file():
        for line in stream.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = decode_line(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


def render(cell_root: Path, *, task_id: str, replicate: int, prompt: str, status: str, score: float,
           tests: dict[str, float], error: str, required: list[str], skill_use: str | None = None,
           events: list[dict] | None = None) -> str:
    lines = [f"# {task_id} · replicate {replicate} · {status} · score {score:.3f}", "", "## Prompt",
             prompt.strip(), "", "## Trajectory"]
    step = 0
    for event in stream_events(cell_root / "stream.jsonl") if events is None else events:
        kind = event.get("type")
        message = event.get("message")
        content = (message.get("content") if isinstance(message, dict) else None) or []
        if kind == "assistant":
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    step += 1
                    lines.append(f"{step}. **{block.get('name')}** "
                                 f"`{_clip(json.dumps(block.get('input')), 300)}`")
                elif (block.get("type") == "text" and isinstance(block.get("text"), str)
                      and block["text"].strip()):
                    lines.append(f"   > {_clip(block['text'], 300)}")
        elif kind == "user":
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    lines.append(f"   → {_clip(_content_text(block.get('content')), 300)}")
        elif kind == "result":
            lines.append(f"Result: {event.get('subtype')} after {event.get('num_turns')} turns"
                         + (" (error)" if event.get("is_error") else ""))
    if skill_use:   # eval/skill_use.py's record, said in words (a bare cell has none)
        use = json.loads(skill_use)
        ran = ", ".join(f"{p} (exit {'?' if c is None else c})" for p, c in use["scripts_run"]) or "none"
        lines += ["", "## Skill use",
                  f"- loaded: {'yes, turn ' + str(use['loaded_turn']) if use['loaded'] else 'NO'}",
                  f"- files read: {', '.join(use['files_read']) or 'none'}", f"- scripts run: {ran}",
                  f"- tokens reading the skill: ~{use['read_tokens_est']} (an estimate)"]
    lines += ["", "## Grader"]
    lines += [f"- {name}: {value:.3f}" for name, value in sorted(tests.items())] or ["- (not graded)"]
    judge = cell_root / "judge.md"
    if judge.is_file():  # an LLM judge's feedback is evidence for the mutator (train cells only reach it)
        lines += ["", "## Grader feedback", _clip(judge.read_text(encoding="utf-8", errors="replace"), 2000)]
    if error:
        lines += ["", "## Error", _clip(error, 2000)]
    for rel in required:
        path = cell_root / "work" / rel
        lines += ["", f"## Output {rel}"]
        lines.append("```\n" + _clip(path.read_text(encoding="utf-8", errors="replace"),
                                     OUTPUT_CLIP) + "\n```"
                     if path.is_file() else "(missing)")
    return "\n".join(lines) + "\n"


def capture_and_prune(cell_root: Path, *, prune: bool = True, **fields) -> None:
    """Write trajectory.md, then (when pruning) drop the cell's working dir: inputs, skill copy, outputs."""
    (cell_root / "trajectory.md").write_text(render(cell_root, **fields), encoding="utf-8")
    if prune:
        shutil.rmtree(cell_root / "work", ignore_errors=True)
