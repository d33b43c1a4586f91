"""Zero-spend build agent: applies the skill's rules.json to the task's CSV, like a real agent would.

Run as `python fakes/fake_agent.py` with the cell dir as cwd and the prompt on stdin (or SM_PROMPT_FILE).
Writes a Claude Code stream-json transcript to SM_STREAM. Never reads the suite's answers and never
touches anything outside its cwd and its stream. Test hooks: FAKE_AGENT_HANG=1, FAKE_AGENT_CRASH=1,
FAKE_AGENT_EXPERT=1 (solving bare, it applies every useful rule).

A task that names no CSV and stages none (a request mined from transcripts, a question) gets a text answer
instead: the skill's guidance items that share a word stem with the request, so what the skill says is
what the judge grades, deterministically.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from pathlib import Path

if not __package__:  # run as a script: make `fakes` importable without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes.csv_rules import CANONICAL_ORDER, apply_rules, load_rule_ops, read_csv, write_csv  # noqa: E402

SKIP_PROBABILITY = 0.08
BASE_INPUT_TOKENS = 600
OUTPUT_TOKENS = 80
TOOLS = ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill"]
CSV_NAME = re.compile(r"[\w./-]*\w\.csv\b")
ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(.*)$")
STEM_STOP = {"this", "that", "with", "what", "when", "your", "from", "into", "have", "should", "every", "each",
             "file", "task", "named", "write", "which", "would", "could", "about", "there", "them", "they"}
MAX_ITEMS = 8


class Stream:
    """Appends stream-json events to SM_STREAM, flushed per line so a watchdog sees progress."""

    def __init__(self, path: str | None) -> None:
        self._file = open(path, "a", encoding="utf-8") if path else None
        self.turns = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def emit(self, event: dict) -> None:
        if self._file:
            self._file.write(json.dumps(event) + "\n")
            self._file.flush()

    def step(self, command: str, result: str, input_tokens: int) -> None:
        self.turns += 1
        tool_id = f"toolu_{self.turns:04d}"
        self.input_tokens += input_tokens
        self.output_tokens += OUTPUT_TOKENS
        self.emit(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
                    ],
                    "usage": {"input_tokens": input_tokens, "output_tokens": OUTPUT_TOKENS},
                },
            }
        )
        self.emit(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": result}],
                },
            }
        )

    def finish(self, subtype: str, started: float) -> None:
        self.emit(
            {
                "type": "result",
                "subtype": subtype,
                "is_error": subtype != "success",
                "num_turns": self.turns,
                "duration_ms": int((time.monotonic() - started) * 1000),
                "total_cost_usd": 0,
                "usage": {
                    "input_tokens": self.input_tokens,
                    "output_tokens": self.output_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            }
        )


def read_prompt() -> str:
    prompt_file = os.environ.get("SM_PROMPT_FILE")
    if prompt_file and Path(prompt_file).is_file():
        return Path(prompt_file).read_text(encoding="utf-8")
    return "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()


def csv_files(prompt: str) -> tuple[str, str]:
    """The first .csv named in the prompt is the input, the last the output."""
    names = CSV_NAME.findall(prompt)
    source = names[0] if names else "input.csv"
    target = names[-1] if len(names) > 1 and names[-1] != source else "output.csv"
    return source, target


def skill_name(skill_dir: Path) -> str:
    try:
        text = (skill_dir / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        return skill_dir.name
    match = re.search(r"^name:\s*(\S+)\s*$", text, re.MULTILINE)
    return match.group(1) if match else skill_dir.name


def skill_bytes(skill_dir: Path) -> int:
    return sum(p.stat().st_size for p in skill_dir.rglob("*") if p.is_file())


def stems(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.casefold())
    return {w[:4] for w in words if len(w) > 3 and w not in STEM_STOP}


def guidance(skill_dir: Path | None) -> list[str]:
    """SKILL.md's list items (bullets and numbered steps), each with its indented continuation lines."""
    try:
        text = (skill_dir / "SKILL.md").read_text(encoding="utf-8") if skill_dir else ""
    except OSError:
        return []
    items: list[str] = []
    for line in text.splitlines():
        found = ITEM.match(line)
        if found:
            items.append(found.group(1).strip())
        elif items and line.startswith("  ") and line.strip():
            items[-1] += " " + line.strip()
        elif not line.strip() and items and not items[-1].endswith("\n"):
            items[-1] += "\n"
    return [item.strip() for item in items]


def text_answer(prompt: str, skill_dir: Path | None, stream: Stream, per_turn: int, started: float) -> int:
    """A request with no CSV to clean: answer from the skill's items that share a stem with the request."""
    if skill_dir is not None:
        stream.step(f"cat {skill_dir}/SKILL.md", "read the skill", per_turn)
    asked = stems(prompt)
    chosen = [item for item in guidance(skill_dir) if stems(item) & asked][:MAX_ITEMS]
    answer = "\n".join(f"- {item}" for item in chosen) if chosen else \
        "I have no guidance for this request; I would ask what result you expect."
    stream.turns += 1
    stream.input_tokens += per_turn
    stream.output_tokens += OUTPUT_TOKENS
    stream.emit({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}],
                                                  "usage": {"input_tokens": per_turn, "output_tokens": OUTPUT_TOKENS}}})
    stream.finish("success", started)
    return 0


def main() -> int:
    started = time.monotonic()
    prompt = read_prompt()
    env_skill = os.environ.get("SM_SKILL_DIR")
    skill_dir = Path(env_skill) if env_skill else None
    if skill_dir is not None and not skill_dir.is_dir():
        skill_dir = None
    stream = Stream(os.environ.get("SM_STREAM"))
    stream.emit(
        {
            "type": "system",
            "subtype": "init",
            "model": os.environ.get("SM_MODEL", "fake"),
            "cwd": os.getcwd(),
            "tools": TOOLS,
            "skills": [skill_name(skill_dir)] if skill_dir else [],
        }
    )

    if os.environ.get("FAKE_AGENT_HANG") == "1":
        while True:
            time.sleep(3600)
    if os.environ.get("FAKE_AGENT_CRASH") == "1":
        print("fake_agent: crashing on purpose (FAKE_AGENT_CRASH=1)", file=sys.stderr)
        return 3

    ops = load_rule_ops(skill_dir / "rules.json") if skill_dir else []
    if skill_dir is None and os.environ.get("FAKE_AGENT_EXPERT") == "1":
        # test hook: a strong model solving bare (the solve phase) knows every useful rule itself
        ops = [op for op in CANONICAL_ORDER if op != "titlecase"]
    per_turn = BASE_INPUT_TOKENS + (skill_bytes(skill_dir) // 4 if skill_dir else 0)
    max_turns = int(os.environ.get("SM_MAX_TURNS") or 0) or None
    rng = random.Random(int(os.environ.get("SM_CELL_SEED") or 0))
    source, target = csv_files(prompt)
    if not CSV_NAME.search(prompt) and not Path(source).is_file():
        return text_answer(prompt, skill_dir, stream, per_turn, started)

    def out_of_turns() -> bool:
        return max_turns is not None and stream.turns >= max_turns

    reading = f"cat {source}" + (f" {skill_dir}/SKILL.md {skill_dir}/rules.json" if skill_dir else "")
    try:
        rows = read_csv(Path(source))
    except (OSError, UnicodeDecodeError) as exc:
        stream.step(reading, f"error: {exc}", per_turn)
        stream.finish("error_during_execution", started)
        return 0
    stream.step(reading, f"{len(rows)} rows; rules: {', '.join(ops) or 'none'}", per_turn)

    applied: list[str] = []
    for op in ops:  # one turn per listed rule; a skipped rule is the agent fumbling it
        if out_of_turns():
            stream.finish("error_max_turns", started)
            return 0
        skipped = rng.random() < SKIP_PROBABILITY
        if not skipped and op in CANONICAL_ORDER:
            applied.append(op)
        note = "skipped" if skipped else ("applied" if op in CANONICAL_ORDER else "unknown rule, ignored")
        stream.step(f"python normalise.py --rule {op} {source}", f"{op}: {note}", per_turn)

    if out_of_turns():
        stream.finish("error_max_turns", started)
        return 0
    result = apply_rules(rows, applied)
    write_csv(Path(target), result)
    stream.step(f"python normalise.py --write {target}", f"wrote {len(result)} rows to {target}", per_turn)
    stream.finish("success", started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
