"""The LLM judge's rubric, prompt and reply: pure functions over text (no model call, no files).

A rubric scores correctness, procedure and conciseness 0-10 with weights summing to 1 (default 0.5 /
0.3 / 0.2), times a length factor. The judge sees the task, its expectation sentences, the outputs, the
agent's final answer and its tool-call outline: never the skill. `fake_reply` is the deterministic
stand-in used by dry runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

DIMENSIONS = ("correctness", "procedure", "conciseness")
DEFAULT_WEIGHTS = {"correctness": 0.5, "procedure": 0.3, "conciseness": 0.2}
OUTPUT_CLIP = 20_000
STEP_CLIP = 200
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_'-]*")
STOPWORDS = {"the", "and", "that", "with", "this", "from", "have", "into", "each", "when", "than", "then",
             "should", "must", "does", "output", "file", "answer", "response", "includes", "contains"}

SYSTEM = """You grade one attempt at a task. Score three dimensions from 0 to 10:
- correctness: does the output do what the task asks and meet every expectation listed?
- procedure: did the agent work sensibly (the right steps, no flailing, no needless detours)?
- conciseness: is the output as short as it can be while complete?
For each expectation, say whether it passed with a short piece of evidence. Then give feedback: one
to three sentences on what would most improve the next attempt.
Answer with ONE JSON object and nothing else:
{"correctness": n, "procedure": n, "conciseness": n,
 "expectations": [{"text": "...", "passed": true, "evidence": "..."}], "feedback": "..."}"""


class JudgeError(ValueError):
    """A judge reply or a rubric setting is unusable; the message says what was expected."""


@dataclass(frozen=True)
class Rubric:
    weights: tuple[tuple[str, float], ...] = tuple(DEFAULT_WEIGHTS.items())
    length_target: int = 0          # words; 0 = no length penalty
    length_tolerance: float = 0.25  # free overshoot, as a fraction of the target
    length_floor: float = 0.5       # the length factor never goes below this

    def length_factor(self, words: int) -> float:
        if self.length_target <= 0:
            return 1.0
        free = self.length_target * (1 + self.length_tolerance)
        if words <= free:
            return 1.0
        return max(self.length_floor, 1 - (words - free) / self.length_target)

    def to_json(self) -> dict:
        return {"weights": dict(self.weights), "length_target": self.length_target,
                "length_tolerance": self.length_tolerance, "length_floor": self.length_floor}


def rubric_from_options(options: Mapping[str, str]) -> Rubric:
    """suite.md keys: judge_weights ('correctness=0.5, procedure=0.3, conciseness=0.2'), judge_length_target,
    judge_length_tolerance, judge_length_floor."""
    weights = dict(DEFAULT_WEIGHTS)
    if options.get("judge_weights"):
        weights = {}
        for part in options["judge_weights"].split(","):
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep or key not in DIMENSIONS:
                raise JudgeError(f"judge_weights: expected 'name=weight' pairs over {', '.join(DIMENSIONS)}, "
                                 f"got {part.strip()!r}")
            try:
                weights[key] = float(value)
            except ValueError:
                raise JudgeError(f"judge_weights: {key} weight {value.strip()!r} is not a number") from None
        if any(w < 0 or not math.isfinite(w) for w in weights.values()):
            raise JudgeError("judge_weights: weights must be finite and non-negative")
        if not math.isclose(sum(weights.values()), 1.0, abs_tol=1e-6):
            raise JudgeError(f"judge_weights must sum to 1, got {sum(weights.values()):g}")
    try:
        rubric = Rubric(tuple(weights.items()), int(options.get("judge_length_target", 0)),
                        float(options.get("judge_length_tolerance", 0.25)),
                        float(options.get("judge_length_floor", 0.5)))
    except ValueError as err:
        raise JudgeError(f"judge length settings: {err}") from None
    if rubric.length_target < 0 or rubric.length_tolerance < 0 or not 0 <= rubric.length_floor <= 1:
        raise JudgeError("judge_length_target and judge_length_tolerance "
                         "must be >= 0, judge_length_floor in [0, 1]")
    return rubric


@dataclass(frozen=True)
class Attempt:
    """What the judge may see of one cell."""
    prompt: str
    expectations: tuple[str, ...]
    outputs: tuple[tuple[str, str], ...]     # (file name, text or "(missing)")
    final_answer: str
    steps: tuple[str, ...]                   # tool-call outline, skill reads left out

    def words(self) -> int:
        """Length of the deliverable: the output files, or the final answer when there are none."""
        written = [text for _, text in self.outputs if text != "(missing)"]
        return len(WORD_RE.findall(" ".join(written) if written else self.final_answer))


def user_message(attempt: Attempt) -> str:
    parts = ["## Task", attempt.prompt.strip(), "", "## Expectations"]
    parts += [f"- {e}" for e in attempt.expectations] or ["- (none listed: judge against the task itself)"]
    parts += ["", "## Outputs"]
    for name, text in attempt.outputs:
        clipped = (text if len(text) <= OUTPUT_CLIP
                   else text[:OUTPUT_CLIP] + f"\n… [{len(text) - OUTPUT_CLIP} more chars]")
        parts += [f"### {name}", "```", clipped, "```"]
    parts += ["", "## Final answer", attempt.final_answer.strip() or "(none)", "", "## Steps"]
    parts += [f"{i}. {s}" for i, s in enumerate(attempt.steps, 1)] or ["(no tool calls)"]
    return "\n".join(parts)


@dataclass(frozen=True)
class Verdict:
    scores: dict[str, float]                 # dimension -> 0..10
    expectations: tuple[dict, ...] = ()
    feedback: str = ""
    extra: dict = field(default_factory=dict)


def parse_reply(text: str) -> Verdict:
    """The judge's JSON object (the last {...} in the text, so a preamble is tolerated)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise JudgeError(f"judge reply holds no JSON object: {text[:200]!r}")
    try:
        obj = json.loads(text[start:end + 1])
    except json.JSONDecodeError as err:
        raise JudgeError(f"judge reply is not valid JSON ({err.msg}): {text[:200]!r}") from None
    scores = {}
    for name in DIMENSIONS:
        value = obj.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10:
            raise JudgeError(f"judge reply: {name} must be a number from 0 to 10, got {value!r}")
        scores[name] = float(value)
    expectations = obj.get("expectations") or []
    if not isinstance(expectations, list):
        raise JudgeError("judge reply: 'expectations' must be a list")
    return Verdict(scores, tuple(e for e in expectations if isinstance(e, dict)),
                   str(obj.get("feedback") or ""))


def score(verdict: Verdict, rubric: Rubric, words: int) -> tuple[dict[str, float], dict]:
    """(tests, detail): one test 'rubric' = weighted dimensions / 10 x length
    factor; detail for the record."""
    weighted = sum(weight * verdict.scores.get(name, 0.0) / 10 for name, weight in rubric.weights)
    factor = rubric.length_factor(words)
    detail = {"dimensions": verdict.scores, "weighted": round(weighted, 4), "length_words": words,
              "length_factor": round(factor, 4), "expectations": list(verdict.expectations),
              "feedback": verdict.feedback, "rubric": rubric.to_json()}
    return {"rubric": round(weighted * factor, 4)}, detail


def fake_reply(attempt: Attempt) -> str:
    """A deterministic judge for dry runs: expectation words found in the outputs, missing files, steps."""
    haystack = (" ".join(text for _, text in attempt.outputs).casefold() + " "
                + attempt.final_answer.casefold())
    results = []
    for sentence in attempt.expectations:
        words = [w.casefold() for w in WORD_RE.findall(sentence)
                 if len(w) > 3 and w.casefold() not in STOPWORDS]
        hits = sum(1 for w in words if w in haystack)
        passed = not words or hits * 2 >= len(words)
        results.append({"text": sentence, "passed": passed,
                        "evidence": f"{hits}/{len(words)} key words found"})
    missing = sum(1 for _, text in attempt.outputs if text == "(missing)")
    share = (sum(r["passed"] for r in results) / len(results)) if results else 1.0
    correctness = 0.0 if attempt.outputs and missing == len(attempt.outputs) else round(10 * share, 1)
    procedure = max(0.0, 10.0 - max(0, len(attempt.steps) - 6))
    digest = int(hashlib.sha256(user_message(attempt).encode()).hexdigest()[:4], 16)
    conciseness = round(6 + 4 * (digest % 100) / 100, 1)   # stable per attempt, varies across attempts
    failed = [r["text"] for r in results if not r["passed"]]
    feedback = ("Missing: " + "; ".join(failed) if failed else "Every expectation is met.") + \
        (f" {missing} required output(s) were not written." if missing else "")
    return json.dumps({"correctness": correctness, "procedure": procedure, "conciseness": conciseness,
                       "expectations": results, "feedback": feedback})
