"""From one exchange to one judge-graded task: the low-signal filter, the expectations, the dedup key.

An accepted request's expectations are the key sentences of the answer the user accepted; a corrected
one's expectation is the user's correction. Pure functions over text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from mutator.mining.traces import Exchange

MIN_PROMPT_WORDS, MIN_PROMPT_CHARS = 4, 20
MIN_ANSWER_WORDS = 5
MAX_EXPECTATIONS = 3
SENTENCE_CLIP, CORRECTION_CLIP, PROMPT_CLIP = 300, 600, 4000
WORD = re.compile(r"\w+")
CORRECTION_LEAD = re.compile(r"^\s*(no|nope|wrong|incorrect|actually|but)\b[\s,.:;!-]*", re.I)


@dataclass(frozen=True)
class MinedTask:
    id: str
    session: str            # hashed session id
    input_hash: str         # the dedup key: the normalised prompt's hash
    prompt: str
    expectations: tuple[str, ...]
    result: str             # accepted | corrected
    at: float
    answer: str             # the answer the user saw (the judge pass grades it); never written

    def to_task(self) -> dict:
        return {"id": self.id, "prompt": self.prompt, "inputs": [], "required": [],
                "expectations": list(self.expectations)}


def input_hash(prompt: str) -> str:
    normal = " ".join(WORD.findall(prompt.casefold()))
    return hashlib.sha256(normal.encode()).hexdigest()


def low_signal(exchange: Exchange) -> str | None:
    """Why an exchange cannot become a task ('too-short', 'no-outcome', 'tool-noise'), or None."""
    words = WORD.findall(exchange.prompt)
    if len(words) < MIN_PROMPT_WORDS or len(exchange.prompt) < MIN_PROMPT_CHARS:
        return "too-short"
    if exchange.result == "none":
        return "tool-noise" if exchange.tool_calls and not exchange.answer else "no-outcome"
    if exchange.result == "accepted" and len(WORD.findall(exchange.answer)) < MIN_ANSWER_WORDS:
        return "too-short"
    if exchange.result == "corrected" and len(WORD.findall(exchange.correction)) < 2:
        return "too-short"
    return None


def key_sentences(answer: str) -> list[str]:
    """The accepted answer's first few substantial sentences, code blocks and markup left out."""
    prose = re.sub(r"```.*?(```|$)", " ", answer, flags=re.S)
    found = []
    for line in prose.splitlines():
        line = re.sub(r"^\s*(#+|[-*+]|\d+[.)])\s+", "", line).replace("**", "").strip()
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            sentence = sentence.strip()
            if 4 <= len(WORD.findall(sentence)) <= 60 and sentence not in found:
                found.append(sentence[:SENTENCE_CLIP])
    if not found and answer.strip():
        found = [" ".join(answer.split())[:SENTENCE_CLIP]]
    return found[:MAX_EXPECTATIONS]


def expectations(exchange: Exchange) -> tuple[str, ...]:
    if exchange.result == "corrected":
        said = CORRECTION_LEAD.sub("", " ".join(exchange.correction.split()))[:CORRECTION_CLIP]
        return (f"Correction from the user: {said}",)
    return tuple(key_sentences(exchange.answer))


def to_mined(exchange: Exchange) -> MinedTask:
    digest = input_hash(exchange.prompt)
    return MinedTask(f"req-{digest[:12]}", exchange.session, digest, exchange.prompt[:PROMPT_CLIP],
                     expectations(exchange), exchange.result, exchange.at, exchange.answer)
