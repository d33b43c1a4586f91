"""Zero-spend mutator: makes one scripted change to `skill/` per round and reports it in result.json.

Run as `python fakes/fake_mutator.py` with the workspace as cwd (skill/ + briefing.md). The script is keyed
by SM_ROUND so a demo run shows every verdict: improvements, a regression the gate must reject, a no-op
and a broken reference the critic must reject, and a cost cut. It only edits whatever skill/ it is given,
never assumes what an earlier round left there. Test hook: FAKE_MUTATOR_GARBAGE=1.

Beyond the round script, in this order: a briefing objective naming a rule (branching siblings) is
implemented; a reference genome under refs/<hash12>/ lends a rule the skill lacks (crossover); a
"Tasks to target" section picks the rule fixing those tasks' failing train tests (pareto).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

INPUT_TOKENS = 3000
OUTPUT_TOKENS = 400
IMPROVING = ("dates", "amounts", "dedupe", "booleans", "emails")
# Which rule repairs a failing grader test (the demo grader's test names).
TEST_RULES = {"dates": "dates", "amounts": "amounts", "flags": "booleans", "emails": "emails", "rows": "dedupe"}

# What each rule means, in the words a SKILL.md line would use; one wording per sibling.
RULE_LINES = {
    "dates": (
        "convert every date column (header containing `date`) to ISO `YYYY-MM-DD`; US dates are M/D/Y, "
        "dotted dates are D.M.Y, and month names are spelled out or abbreviated.",
        "rewrite dates such as `03/15/2024`, `15.03.2024`, `March 15, 2024` or `2024/03/15` as "
        "`2024-03-15` in columns whose header contains `date`.",
    ),
    "amounts": (
        "in amount, price, total and cost columns drop currency symbols, spaces and thousands "
        "separators and write two decimals (`$1,234.5` becomes `1234.50`).",
        "money columns (amount/price/total/cost) hold plain numbers with two decimals: "
        "`€ 12` becomes `12.00`.",
    ),
    "titlecase": (
        "write every text value in Title Case for a tidy look.",
        "capitalise each word of every non-numeric value.",
    ),
    "dedupe": (
        "after the other rules, drop blank rows and exact repeats of an earlier row (keep the first).",
        "remove empty rows, then rows identical to one already kept.",
    ),
    "booleans": (
        "in flag columns (`is_*`, `has_*`, `active`, `verified`, `paid`, `shipped`, ...) write "
        "yes/y/true/1 as `true` and no/n/false/0 as `false`.",
        "yes/no style flags become lowercase `true` / `false`.",
    ),
    "emails": ("lowercase every value in e-mail columns.", "e-mail addresses are written in lowercase."),
}


@dataclass(frozen=True)
class Change:
    summary: str
    reasoning: str


def load_rules(skill: Path) -> tuple[object, list[dict]]:
    """The parsed rules.json and its list of rules (it may be a list or {"rules": [...]})."""
    path = skill / "rules.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    except ValueError:  # a broken rules.json is replaced rather than crashing the round
        data = []
    rules = data.get("rules", []) if isinstance(data, dict) else data
    return data, [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def save_rules(skill: Path, data: object, rules: list[dict]) -> None:
    if isinstance(data, dict):
        data = {**data, "rules": rules}
    else:
        data = rules
    lines = ",\n".join("  " + json.dumps(rule) for rule in data) if isinstance(data, list) else None
    text = f"[\n{lines}\n]\n" if lines is not None else json.dumps(data, indent=2) + "\n"
    (skill / "rules.json").write_text(text, encoding="utf-8")


def present_ops(skill: Path) -> set[str]:
    _, rules = load_rules(skill)
    return {str(r.get("op")) for r in rules if isinstance(r, dict)}


def add_rule(skill: Path, op: str, sibling: int) -> Change:
    data, rules = load_rules(skill)
    rule_id = f"{op}-v{sibling + 1}" if sibling else op
    save_rules(skill, data, [*rules, {"id": rule_id, "op": op}])
    line = RULE_LINES[op][sibling % len(RULE_LINES[op])]
    insert_rule_line(skill, f"- `{op}`: {line}\n")
    reasoning = (
        "Names and labels come in mixed case; Title Case would make every text value look consistent."
        if op == "titlecase"
        else f"The worst tasks lose points on values the `{op}` rule would normalise."
    )
    return Change(
        summary=f"Add the `{op}` rule to rules.json and describe it in SKILL.md", reasoning=reasoning
    )


def insert_rule_line(skill: Path, addition: str) -> None:
    skill_md = skill / "SKILL.md"
    text = skill_md.read_text(encoding="utf-8")
    marker = "\nValues that a rule does not cover"
    if marker in text:  # keep the rule list together when the seed's layout is still there
        text = text.replace(marker, addition.rstrip("\n") + "\n" + marker, 1)
    else:
        text = text.rstrip("\n") + "\n\n" + addition
    skill_md.write_text(text, encoding="utf-8")


def no_op(why: str) -> Change:
    return Change(summary="No change", reasoning=why)


def add_missing_reference(skill: Path, sibling: int) -> Change:
    skill_md = skill / "SKILL.md"
    label = "date formats" if sibling == 0 else "the date format table"
    skill_md.write_text(
        skill_md.read_text(encoding="utf-8").rstrip("\n")
        + f"\n\nFor every date layout we have seen, read [{label}](references/date-formats.md).\n",
        encoding="utf-8",
    )
    return Change(
        summary="Point SKILL.md at a date-format reference",
        reasoning="Dates are the most varied values; a reference page would keep the rule short.",
    )


def shorten_examples(skill: Path) -> Change:
    path = skill / "examples.md"
    if not path.is_file():
        return no_op("There is no examples.md left to shorten.")
    text = path.read_text(encoding="utf-8")
    starts = [m.start() for m in re.finditer(r"^## ", text, re.MULTILINE)]
    if len(starts) < 2:
        return no_op("examples.md already holds a single example.")
    path.write_text(text[: starts[1]].rstrip("\n") + "\n", encoding="utf-8")
    return Change(
        summary="Keep only the first example in examples.md",
        reasoning="Every turn re-reads the skill; a shorter examples file cuts input tokens per step.",
    )


def scripted_change(skill: Path, round_number: int, sibling: int) -> Change:
    step = (round_number - 1) % 9
    present = present_ops(skill)

    def improve(op: str) -> Change:
        if op not in present:
            return add_rule(skill, op, sibling)
        if round_number > 9:  # past the first cycle: pick a rule still missing, if any
            for other in IMPROVING:
                if other not in present:
                    return add_rule(skill, other, sibling)
        return no_op(f"The `{op}` rule is already in rules.json.")

    if step == 0:
        return improve("dates")
    if step == 1:
        return improve("amounts")
    if step == 2:
        if "titlecase" in present:
            return no_op("The `titlecase` rule is already in rules.json.")
        return add_rule(skill, "titlecase", sibling)
    if step == 3:
        return no_op("The incumbent looks right; I could not find a change worth making.")
    if step == 4:
        return add_missing_reference(skill, sibling)
    if step == 5:
        return improve("dedupe")
    if step == 6:
        return improve("booleans")
    if step == 7:
        return improve("emails")
    return shorten_examples(skill)


def section(briefing: str, heading: str) -> str:
    """The body of the briefing's `## heading...` section ('' when absent)."""
    match = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", briefing, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def follow_objective(skill: Path, briefing: str, sibling: int) -> Change | None:
    """Branching: implement the rule the round's objective names, in this sibling's own wording."""
    body = section(briefing, "This round's objective").strip()
    match = re.search(r"`(\w+)`", body.splitlines()[0]) if body else None
    if not match or match.group(1) not in RULE_LINES or match.group(1) in present_ops(skill):
        return None
    return add_rule(skill, match.group(1), sibling)


def cross_over(skill: Path, refs: Path) -> Change | None:
    """Crossover: take the first rule a reference genome has and the skill lacks, with its SKILL.md line."""
    if not refs.is_dir():
        return None
    present = present_ops(skill)
    for ref in sorted(p for p in refs.iterdir() if p.is_dir()):
        _, ref_rules = load_rules(ref)
        for rule in ref_rules:
            op = str(rule.get("op"))
            if op in present or op not in RULE_LINES:
                continue
            data, rules = load_rules(skill)
            save_rules(skill, data, [*rules, dict(rule)])
            ref_md = (ref / "SKILL.md").read_text(encoding="utf-8") if (ref / "SKILL.md").is_file() else ""
            found = re.search(rf"^- `{op}`:.*$", ref_md, re.MULTILINE)
            insert_rule_line(skill, (found.group(0) if found else f"- `{op}`: {RULE_LINES[op][0]}") + "\n")
            return Change(summary=f"Cross over the `{op}` rule from reference {ref.name}",
                          reasoning=f"Reference {ref.name} handles `{op}` values that this skill leaves alone.")
    return None


def failing_tests(briefing: str) -> dict[str, list[str]]:
    """task -> failing tests, from the briefing's train table (last column)."""
    table: dict[str, list[str]] = {}
    for line in section(briefing, "Your parent on train tasks").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0] not in ("task", "---"):
            table[cells[0]] = [t.strip() for t in cells[-1].split(",") if t.strip() not in ("", "—")]
    return table


def aim_at_targets(skill: Path, briefing: str, sibling: int) -> Change | None:
    """Pareto: add the missing rule that repairs most failing tests of the target tasks."""
    targets = re.findall(r"`([^`]+)`", section(briefing, "Tasks to target"))
    if not targets:
        return None
    table, present = failing_tests(briefing), present_ops(skill)
    counts = Counter(TEST_RULES[t] for task in targets for t in table.get(task, []) if t in TEST_RULES)
    for op, _ in sorted(counts.items(), key=lambda kv: (-kv[1], IMPROVING.index(kv[0]))):
        if op not in present:
            change = add_rule(skill, op, sibling)
            return Change(summary=f"{change.summary}, aimed at {', '.join(targets)}", reasoning=change.reasoning)
    return None


def write_stream(path: str | None, change: Change, started: float) -> None:
    if not path:
        return
    events = [
        {
            "type": "system",
            "subtype": "init",
            "model": os.environ.get("SM_MODEL", "fake"),
            "cwd": os.getcwd(),
            "tools": ["Bash", "Read", "Write", "Edit"],
            "skills": [],
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": change.reasoning},
                    {
                        "type": "tool_use",
                        "id": "toolu_0001",
                        "name": "Edit",
                        "input": {"file_path": "skill/SKILL.md"},
                    },
                ],
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS},
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_0001", "content": change.summary}],
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "num_turns": 1,
            "duration_ms": int((time.monotonic() - started) * 1000),
            "total_cost_usd": 0,
            "usage": {
                "input_tokens": INPUT_TOKENS,
                "output_tokens": OUTPUT_TOKENS,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    ]
    with open(path, "a", encoding="utf-8") as f:
        for event in events:
            f.write(json.dumps(event) + "\n")
            f.flush()


def distil_lessons(ledger: Path) -> str:
    """Meta-skill mode (SM_TASK=meta): turn the ledger's verdicts into a few deterministic lessons."""
    text = ledger.read_text(encoding="utf-8") if ledger.is_file() else ""
    attempts = re.findall(r"^## Attempt (\S+) — (\w+)\n- summary: (.*)$", text, re.M)
    lessons = [f"- {len(attempts)} attempts so far: "
               + ", ".join(f"{v} {sum(1 for a in attempts if a[1] == v)}" for v in ("KEEP", "REJECT", "CRITIC"))]
    lessons += [f"- Helped (kept): {summary}" for _, verdict, summary in attempts if verdict == "KEEP"]
    lessons += [f"- Do not retry (rejected): {summary}" for _, verdict, summary in attempts if verdict == "REJECT"]
    lessons += [f"- Broke the critic: {summary}" for _, verdict, summary in attempts if verdict == "CRITIC"]
    return "\n".join(lessons)


def main() -> int:
    started = time.monotonic()
    if os.environ.get("SM_TASK") == "meta":
        lessons = distil_lessons(Path("history") / "ledger.md")
        Path("result.json").write_text(json.dumps({"lessons": lessons}) + "\n", encoding="utf-8")
        write_stream(os.environ.get("SM_STREAM"), Change("distilled lessons", lessons), started)
        return 0
    skill = Path("skill")
    if not skill.is_dir():
        print("fake_mutator: no skill/ folder in the workspace", file=sys.stderr)
        return 1
    round_number = max(1, int(os.environ.get("SM_ROUND") or 1))
    sibling = max(0, int(os.environ.get("SM_SIBLING") or 0))
    briefing_file = Path("briefing.md")
    briefing = briefing_file.read_text(encoding="utf-8") if briefing_file.is_file() else ""
    change = (follow_objective(skill, briefing, sibling) or cross_over(skill, Path("refs"))
              or aim_at_targets(skill, briefing, sibling) or scripted_change(skill, round_number, sibling))
    if os.environ.get("FAKE_MUTATOR_GARBAGE") == "1":
        Path("result.json").write_text("Sure! Here is what I changed: {summary: oops", encoding="utf-8")
    else:
        Path("result.json").write_text(
            json.dumps({"summary": change.summary, "reasoning": change.reasoning}, indent=2) + "\n",
            encoding="utf-8",
        )
    write_stream(os.environ.get("SM_STREAM"), change, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
