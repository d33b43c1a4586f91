"""Read agent transcripts into exchanges: one user request, what the agent did, and how the user answered.

Two shapes: Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`, lines of type
user/assistant with `message.content` a string or blocks) and our plain trace JSONL (one
`{input, output, outcome, tool_calls, feedback}` per line). Pure reading: nothing is written, and a
session id leaves this module only hashed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from eval.skill_marks import SkillMarks
from eval.stream_metrics import decode_line

COMMAND = re.compile(r"<command-name>\s*/?([^<\s]+)\s*</command-name>")
COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
NOT_A_REQUEST = ("<local-command-stdout>", "<local-command-stderr>", "<command-message>", "Caveat:",
                 "[Request interrupted by user", "<system-reminder>")
CORRECTION = re.compile(
    r"^\s*(no\b|nope\b|wrong\b|incorrect\b|actually\b|that'?s (not|wrong|incorrect)|this is (not|wrong)|"
    r"not (what|quite|right)|you (forgot|missed|didn'?t|did not|should|need to)|it (should|doesn'?t|does not|"
    r"didn'?t)|please (fix|redo|correct)|try again|i (said|asked|meant|wanted)|instead\b|but\b)", re.I)
ACCEPTED = {"accepted", "success", "verified", "ok", "done"}


def session_hash(raw: str) -> str:
    """A session id as it may be stored: hashed, never raw."""
    return hashlib.sha256(f"skill-mutator-session:{raw}".encode()).hexdigest()[:16]


def is_correction(text: str) -> bool:
    return bool(CORRECTION.match(text))


@dataclass
class Exchange:
    """One user request and what followed it, up to the next user request."""
    session: str                    # hashed
    index: int
    prompt: str
    at: float                       # epoch seconds of the request
    source: str                     # "claude-code" | "plain"
    answer: str = ""                # the agent's last text reply
    correction: str = ""            # the next user message, when it corrects this answer
    outcome: str = ""               # plain traces: their own outcome word
    tool_calls: int = 0
    uses_skill: bool = False        # the skill was loaded or its folder touched in this exchange
    skill_used: bool = False        # ... in this exchange or an earlier one of the session
    interrupted: bool = False
    is_followup: bool = False       # a correction of the previous exchange: not a request of its own
    texts: list[str] = field(default_factory=list)   # everything said and passed in it, for the secret scan

    @property
    def result(self) -> str:
        """accepted | corrected | none."""
        if self.correction:
            return "corrected"
        if self.source == "plain":
            return "accepted" if self.outcome in ACCEPTED and self.answer else "none"
        return "accepted" if self.answer and not self.interrupted else "none"


@dataclass
class Reading:
    files: int = 0
    unreadable_lines: int = 0
    sessions: set[str] = field(default_factory=set)
    exchanges: list[Exchange] = field(default_factory=list)


def epoch(stamp: object, default: float) -> float:
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    if isinstance(stamp, str) and stamp:
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return default
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return default


def block_text(content: object) -> tuple[str, list[dict]]:
    """(the text of a message, its non-text blocks)."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return "", []
    texts, others = [], []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif isinstance(block, dict):
            others.append(block)
    return "\n".join(texts), others


def read_lines(path: Path, reading: Reading) -> list[dict]:
    events = []
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return events
    with handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                event = decode_line(line)
            except ValueError:
                reading.unreadable_lines += 1
                continue
            if isinstance(event, dict):
                events.append(event)
            else:
                reading.unreadable_lines += 1
    return events


def read_traces(root: Path, marks: SkillMarks) -> Reading:
    """Every *.jsonl under root (a file, a project folder, or ~/.claude/projects itself), oldest first."""
    reading = Reading()
    files = [root] if root.is_file() else sorted(root.rglob("*.jsonl"))
    for path in files:
        events = read_lines(path, reading)
        if not events:
            continue
        reading.files += 1
        mtime = path.stat().st_mtime
        if any("input" in e and "message" not in e for e in events[:5]):
            read_plain(path, events, marks, mtime, reading)
        else:
            read_claude(path, events, marks, mtime, reading)
    reading.exchanges.sort(key=lambda e: (e.at, e.session, e.index))
    return reading


def read_claude(path: Path, events: list[dict], marks: SkillMarks, mtime: float, reading: Reading) -> None:
    by_session: dict[str, list[dict]] = {}
    for event in events:
        if event.get("isSidechain") or event.get("type") not in ("user", "assistant"):
            continue   # a subagent's own conversation, summaries, snapshots: not the user's requests
        by_session.setdefault(str(event.get("sessionId") or path.stem), []).append(event)
    for raw_id, session_events in by_session.items():
        sid = session_hash(raw_id)
        reading.sessions.add(sid)
        exchanges: list[Exchange] = []
        current: Exchange | None = None
        for event in session_events:
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            text, blocks = block_text(message.get("content"))
            if event.get("type") == "assistant":
                if current is not None:
                    assistant_blocks(current, message.get("content"), marks)
                continue
            for block in blocks:     # tool results ride on user lines
                if current is not None and block.get("type") == "tool_result":
                    current.texts.append(json.dumps(block.get("content"), ensure_ascii=False))
            if event.get("isMeta") or event.get("isCompactSummary"):
                if current is not None and marks.loaded(text):
                    current.uses_skill = True
                continue
            command = COMMAND.search(text)
            if command:
                if command.group(1).split(":")[-1] != marks.name:
                    continue
                args = COMMAND_ARGS.search(text)
                text = args.group(1).strip() if args else ""
                uses = True
            else:
                uses = False
                if text.lstrip().startswith("[Request interrupted by user"):
                    if current is not None:
                        current.interrupted = True
                    continue
                if not text.strip() or text.lstrip().startswith(NOT_A_REQUEST):
                    continue
            followup = bool(current and current.answer and not current.is_followup and is_correction(text))
            if followup:
                current.correction = text.strip()
            current = Exchange(sid, len(exchanges), text.strip(), epoch(event.get("timestamp"), mtime),
                               "claude-code", uses_skill=uses, is_followup=followup, texts=[text])
            exchanges.append(current)
        loaded = False
        for exchange in exchanges:
            loaded |= exchange.uses_skill
            exchange.skill_used = loaded
        reading.exchanges.extend(exchanges)


def assistant_blocks(current: Exchange, content: object, marks: SkillMarks) -> None:
    """The answer is the text after the last tool call: text before one is narration ("Let me read it")."""
    for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text") or "").strip():
            current.answer = str(block["text"]).strip()
            current.texts.append(current.answer)
        elif block.get("type") == "tool_use":
            current.answer = ""
            current.tool_calls += 1
            current.uses_skill |= marks.in_tool(str(block.get("name")), block.get("input"))
            current.texts.append(json.dumps(block.get("input"), ensure_ascii=False))


def read_plain(path: Path, events: list[dict], marks: SkillMarks, mtime: float, reading: Reading) -> None:
    counters: dict[str, int] = {}
    for number, event in enumerate(events, start=1):
        raw_id = str(event.get("session") or f"{path}:{number}")
        sid = session_hash(raw_id)
        reading.sessions.add(sid)
        calls = event.get("tool_calls") if isinstance(event.get("tool_calls"), list) else []
        skills = event.get("skills", event.get("skill"))
        named = [skills] if isinstance(skills, str) else skills if isinstance(skills, list) else []
        uses = marks.name in [str(s) for s in named] or any(
            isinstance(c, dict) and marks.in_tool(str(c.get("name")), c.get("input")) for c in calls)
        outcome = str(event.get("outcome") or "").strip().lower()
        feedback = str(event.get("feedback") or "").strip()
        prompt, answer = str(event.get("input") or "").strip(), str(event.get("output") or "").strip()
        exchange = Exchange(sid, counters.get(sid, 0), prompt, epoch(event.get("timestamp"), mtime), "plain",
                            answer=answer, correction=feedback if outcome == "corrected" else "",
                            outcome=outcome, tool_calls=len(calls), uses_skill=uses, skill_used=uses,
                            texts=[prompt, answer, feedback, json.dumps(calls, ensure_ascii=False)])
        counters[sid] = exchange.index + 1
        reading.exchanges.append(exchange)
