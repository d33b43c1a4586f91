"""Deterministic grader for the demo CSV-cleaning suites (template; copied to each suite as run-eval.py).

Usage: python run-eval.py <cell_dir> <task_id>   (cwd = the suite dir)
Prints one JSON object {test name: score in [0, 1]} to stdout and exits 0, even when the agent wrote
nothing. Exits 2 only for a grader-side problem (unknown task id, missing answer key). Stdlib only:
it must never import the project's code, and never copies the answer key anywhere.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
TASK_ID = re.compile(r"^[A-Za-z0-9._-]+$")
AMOUNT_WORDS = ("amount", "price", "total", "cost")
FLAG_NAMES = {"active", "verified", "subscribed", "paid", "shipped", "enabled", "refunded", "archived"}


def column_kind(header: str) -> str:
    """Which test grades a column, from the answer key's (already normalised) header."""
    if "date" in header:
        return "dates"
    if any(word in header for word in AMOUNT_WORDS):
        return "amounts"
    if header.startswith(("is_", "has_")) or header in FLAG_NAMES:
        return "flags"
    if "email" in header.replace("_", ""):
        return "emails"
    return "text"


def read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return [list(row) for row in csv.reader(f)]


def task_output_name(task_id: str) -> str:
    """The task's first required file (output.csv when tasks.jsonl does not say)."""
    for line in (SUITE_DIR / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            task = json.loads(line)
            if task.get("id") == task_id and task.get("required"):
                return str(task["required"][0])
    return "output.csv"


def align(rows: list[list[str]]) -> list[list[str]]:
    """Drop blank rows and repeats so one stray row does not shift every later comparison.

    The `rows` test is what charges for the extra rows.
    """
    seen: set[tuple[str, ...]] = set()
    kept = []
    for row in rows:
        key = tuple(value.strip().casefold() for value in row)
        if not any(key) or key in seen:
            continue
        seen.add(key)
        kept.append(row)
    return kept


def grade(answer: list[list[str]], output: list[list[str]] | None) -> dict[str, float]:
    header, body = answer[0], answer[1:]
    kinds = [column_kind(h) for h in header]
    tests = ["parses", "headers", "rows", *sorted(set(kinds) - {"text"}), "text"]
    if not output:
        return {name: 0.0 for name in tests}

    out_header, out_body = output[0], output[1:]
    scores: dict[str, float] = {"parses": 1.0}
    scores["headers"] = sum(
        1 for i, h in enumerate(header) if i < len(out_header) and out_header[i] == h
    ) / len(header)
    # Blank and repeated rows count as extra rows here; align() keeps them from skewing the other tests.
    extra = abs(len(out_body) - len(body))
    scores["rows"] = max(0.0, 1.0 - extra / max(1, len(body)))

    aligned = align(out_body)
    for kind in sorted(set(kinds)):
        columns = [i for i, k in enumerate(kinds) if k == kind]
        total = len(columns) * len(body)
        hits = 0
        for r, row in enumerate(body):
            got = aligned[r] if r < len(aligned) else []
            hits += sum(1 for i in columns if i < len(got) and got[i] == row[i])
        scores[kind] = hits / total if total else 1.0
    return {name: round(scores[name], 4) for name in tests}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: run-eval.py <cell_dir> <task_id>", file=sys.stderr)
        return 2
    cell_dir, task_id = Path(argv[1]), argv[2]
    answer_file = SUITE_DIR / "answers" / f"{task_id}.csv"
    if not TASK_ID.match(task_id) or not answer_file.is_file():
        print(f"run-eval.py: unknown task id {task_id!r} (no {answer_file})", file=sys.stderr)
        return 2
    answer = read_rows(answer_file)
    output_file = cell_dir / task_output_name(task_id)
    try:
        output = read_rows(output_file) if output_file.is_file() else None
    except (UnicodeDecodeError, csv.Error):
        output = None
    print(json.dumps(grade(answer, output)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
