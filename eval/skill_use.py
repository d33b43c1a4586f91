"""What a cell's agent did with the skill, read from its own stream: loaded or not (and at which turn), the
skill's files it read, the skill's scripts it ran (with exit codes), and an estimate
of the tokens those reads cost.

Every backend writes Claude Code's stream-json shape (eval/stream_metrics.py), so this is the one reader; the
skill is recognised as mining recognises it (eval/skill_marks.py). Pure: reads one stream file, never the
skill.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from eval.skill_marks import SkillMarks, strings
from eval.trajectory import stream_events

CHARS_PER_TOKEN = 4      # the estimate: the API reports usage per turn, never per tool result
READ_TOOLS = {"Read", "read", "view", "NotebookRead"}
READERS = {"cat", "head", "tail", "less", "more", "sed", "awk", "grep", "rg", "wc", "nl", "bat", "jq"}
INTERPRETERS = {"python", "python3", "bash", "sh", "zsh", "node", "deno", "bun", "ruby", "perl", "php",
                "Rscript", "source", ".", "uv", "pipx", "npx", "tsx", "ts-node"}
SEPARATORS = {"&&", "||", ";", "|", "&"}
EXIT_CODE = re.compile(r"^\s*(?:Error:\s*)?exit code:?\s*(-?\d+)", re.I)
QUOTING = re.compile(r"['\"\\]")       # what makes shlex's words differ from a split on its whitespace
SHELL_SPACE = re.compile(r"[ \t\r\n]+")    # shlex's whitespace


@dataclass(frozen=True)
class SkillUse:
    loaded: bool
    loaded_turn: int | None                          # 1-based assistant turn of the first load; None if never
    files_read: tuple[str, ...]                      # paths relative to the skill folder, sorted, once each
    scripts_run: tuple[tuple[str, int | None], ...]  # (path, exit code or None when unknown), in run order
    read_tokens_est: int                             # an estimate: characters of the reads' tool results / 4

    def to_json(self) -> str:
        return json.dumps({"loaded": self.loaded, "loaded_turn": self.loaded_turn,
                           "files_read": list(self.files_read),
                           "scripts_run": [list(run) for run in self.scripts_run],
                           "read_tokens_est": self.read_tokens_est}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | dict) -> SkillUse:
        raw = json.loads(text) if isinstance(text, str) else text
        return cls(loaded=bool(raw["loaded"]), loaded_turn=raw.get("loaded_turn"),
                   files_read=tuple(raw.get("files_read") or ()),
                   scripts_run=tuple((str(p), c) for p, c in raw.get("scripts_run") or ()),
                   read_tokens_est=int(raw.get("read_tokens_est") or 0))


NOT_USED = SkillUse(False, None, (), (), 0)


def result_text(content: object) -> str:
    """A tool result's text: a string, or text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def exit_code(text: str, is_error: bool) -> int | None:
    """A shell result's exit code: our SDK agent says "exit code N", Claude Code "Exit code N" on a failure
    and nothing on success."""
    found = EXIT_CODE.match(text)
    if found:
        return int(found.group(1))
    return None if is_error else 0


def shell_paths(command: str, marks: SkillMarks) -> tuple[list[str], list[str]]:
    """(skill files read, skill scripts run) by one shell command: a skill path in command position, or after
    an interpreter and its flags (`python3 -u`, `uv run`), is run; one given to a reader (cat, head, sed...)
    is read; any other mention (ls, cd, cp) is neither."""
    if QUOTING.search(command):
        try:
            words = shlex.split(command, posix=True)
        except ValueError:
            words = command.split()
    else:   # shlex's own words, without its per-character Python loop (most of reading a cell's skill use)
        words = [word for word in SHELL_SPACE.split(command) if word]
    read: list[str] = []
    run: list[str] = []
    start = 0       # where the current simple command starts
    for index, word in enumerate(words):
        if word in SEPARATORS:
            start = index + 1
            continue
        relative = marks.relative(word)
        if not relative:
            continue
        head = words[start].rsplit("/", 1)[-1]
        between = words[start + 1:index]
        if index == start or (head in INTERPRETERS and all(w.startswith("-") or w == "run" for w in between)):
            run.append(relative)
        elif head in READERS:
            read.append(relative)
    return read, run


@dataclass
class _Call:
    read: list[str]
    slots: list[int]    # its scripts' places in the runs list, whose exit codes its result fills in


def parse_skill_use(stream_path: Path, skill_name: str, *skill_dirs: Path | str,
                    events: list[dict] | None = None) -> SkillUse:
    """The cell's SkillUse from its stream.jsonl (or its `events`, when the caller has read them already).
    `skill_dirs` are the skill folder's spellings the agent may have used (the cell's own path); any
    `.../skills/<skill_name>/...` path is recognised without them. Loaded means a `Skill` call naming it, its
    SKILL.md in the conversation, or any tool touching its folder."""
    marks = SkillMarks(skill_name, *skill_dirs)
    turn, loaded_turn = 0, None
    messages: set[str] = set()
    calls: dict[str, _Call] = {}
    read: set[str] = set()
    runs: list[tuple[str, int | None]] = []
    tokens = 0
    for event in stream_events(stream_path) if events is None else events:
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        content = message.get("content")
        if event.get("type") == "assistant":
            message_id = str(message.get("id") or "")
            if not message_id or message_id not in messages:
                # Claude Code repeats a message per content block
                turn += 1
                messages.add(message_id)
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name, args = str(block.get("name")), block.get("input")
                if not marks.in_tool(name, args):
                    continue
                loaded_turn = loaded_turn or turn
                call, ran = _Call([], []), []
                if marks.named(name, args):
                    call.read.append("SKILL.md")
                elif name in READ_TOOLS:
                    call.read += [r for r in map(marks.relative, strings(args)) if r]
                elif isinstance(args, dict) and isinstance(args.get("command"), str):
                    call.read, ran = shell_paths(args["command"], marks)
                read.update(call.read)
                call.slots = list(range(len(runs), len(runs) + len(ran)))
                runs += [(script, None) for script in ran]     # None until its result says the exit code
                calls[str(block.get("id"))] = call
        elif event.get("type") == "user":
            text = result_text(content)
            if marks.loaded(text):          # Claude Code's meta message carrying SKILL.md
                loaded_turn = loaded_turn or max(turn, 1)
                read.add("SKILL.md")
                tokens += len(text) // CHARS_PER_TOKEN
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                call = calls.pop(str(block.get("tool_use_id")), None)
                if call is None:
                    continue
                output = result_text(block.get("content"))
                if call.read:
                    tokens += len(output) // CHARS_PER_TOKEN
                code = exit_code(output, bool(block.get("is_error")))
                for slot in call.slots:
                    runs[slot] = (runs[slot][0], code)
    return SkillUse(loaded=loaded_turn is not None, loaded_turn=loaded_turn, files_read=tuple(sorted(read)),
                    scripts_run=tuple(runs), read_tokens_est=tokens)
