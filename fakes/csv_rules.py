"""The CSV normalisation operations the demo skill's rules.json names (stdlib only).

Used by the fake build agent and by suites/make_demo.py to build answer keys. Must stay cheap to import:
the fake agent is spawned hundreds of times per run. Never imported by a suite's grader.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

Rows = list[list[str]]

# Fixed order so results do not depend on the order rules are listed in rules.json.
CANONICAL_ORDER = ("trim", "headers", "dates", "amounts", "booleans", "emails", "titlecase", "dedupe")

DATE_FORMATS = (
    "%Y-%m-%d",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%b %d %Y",
    "%B %d %Y",
    "%Y/%m/%d",
)
AMOUNT_WORDS = ("amount", "price", "total", "cost")
FLAG_NAMES = {"active", "verified", "subscribed", "paid", "shipped", "enabled", "refunded", "archived"}
TRUE_WORDS = {"yes", "y", "true", "t", "1"}
FALSE_WORDS = {"no", "n", "false", "f", "0"}
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


def snake_case(name: str) -> str:
    """'Order Date ' -> 'order_date', 'E-mail' -> 'e_mail', 'isActive' -> 'is_active'."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def is_date_column(header: str) -> bool:
    return "date" in snake_case(header)


def is_amount_column(header: str) -> bool:
    h = snake_case(header)
    return any(word in h for word in AMOUNT_WORDS)


def is_flag_column(header: str) -> bool:
    h = snake_case(header)
    return h.startswith(("is_", "has_")) or h in FLAG_NAMES


def is_email_column(header: str) -> bool:
    return "email" in snake_case(header).replace("_", "")


def parse_date(value: str) -> str | None:
    text = " ".join(value.split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).strftime("%Y-%m-%d")
        except ValueError:
            continue
    return None


def parse_amount(value: str) -> str | None:
    text = value.strip()
    for junk in ("$", "€", "£", ",", " "):
        text = text.replace(junk, "")
    if not NUMBER.match(text):
        return None
    return f"{float(text):.2f}"


def parse_flag(value: str) -> str | None:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return "true"
    if word in FALSE_WORDS:
        return "false"
    return None


def _map_columns(rows: Rows, wanted: Callable[[str], bool], convert: Callable[[str], str | None]) -> Rows:
    if not rows:
        return rows
    columns = [i for i, header in enumerate(rows[0]) if wanted(header)]
    out = [list(rows[0])]
    for row in rows[1:]:
        new = list(row)
        for i in columns:
            if i < len(new):
                converted = convert(new[i])
                if converted is not None:
                    new[i] = converted
        out.append(new)
    return out


def op_trim(rows: Rows) -> Rows:
    return [[value.strip() for value in row] for row in rows]


def op_headers(rows: Rows) -> Rows:
    if not rows:
        return rows
    return [[snake_case(h) for h in rows[0]], *[list(r) for r in rows[1:]]]


def op_dates(rows: Rows) -> Rows:
    return _map_columns(rows, is_date_column, parse_date)


def op_amounts(rows: Rows) -> Rows:
    return _map_columns(rows, is_amount_column, parse_amount)


def op_booleans(rows: Rows) -> Rows:
    return _map_columns(rows, is_flag_column, parse_flag)


def op_emails(rows: Rows) -> Rows:
    return _map_columns(rows, is_email_column, lambda v: v.lower())


def op_titlecase(rows: Rows) -> Rows:
    def title(value: str) -> str | None:
        return None if NUMBER.match(value.strip()) else value.title()

    return _map_columns(rows, lambda _h: True, title)


def op_dedupe(rows: Rows) -> Rows:
    if not rows:
        return rows
    seen: set[tuple[str, ...]] = set()
    out = [list(rows[0])]
    for row in rows[1:]:
        key = tuple(row)
        if all(not value.strip() for value in row) or key in seen:
            continue
        seen.add(key)
        out.append(list(row))
    return out


OPS: dict[str, Callable[[Rows], Rows]] = {
    "trim": op_trim,
    "headers": op_headers,
    "dates": op_dates,
    "amounts": op_amounts,
    "booleans": op_booleans,
    "emails": op_emails,
    "titlecase": op_titlecase,
    "dedupe": op_dedupe,
}


def apply_rules(rows: Rows, ops: list[str]) -> Rows:
    """Apply the known ops among `ops` in CANONICAL_ORDER; unknown ops are ignored. Row 0 is the header."""
    wanted = set(ops)
    out = [list(row) for row in rows]
    for op in CANONICAL_ORDER:
        if op in wanted:
            out = OPS[op](out)
    return out


# How each build model reads a skill's rules, so two models give different (still seeded) cells. Any model
# not listed (the default claude-haiku-4-5 among them) reads each rule once, exactly as before; a thorough
# model reads each rule twice, so it rarely fumbles one (the agent's skip chance is squared) but spends a
# turn on every re-read (more steps, and more cost at its dearer price).
READS_PER_RULE = {"claude-sonnet-4-5": 2, "claude-opus-4-5": 2}


def load_rule_ops(rules_file: Path, model: str | None = None) -> list[str]:
    """The ops of a rules.json (a list of rules, or {"rules": [...]}) as `model` reads them (default: the
    agent contract's SM_MODEL; see READS_PER_RULE); [] when missing or malformed."""
    import json
    import os

    reads = READS_PER_RULE.get(os.environ.get("SM_MODEL", "") if model is None else model, 1)

    try:
        data = json.loads(rules_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    rules = data.get("rules", []) if isinstance(data, dict) else data
    if not isinstance(rules, list):
        return []
    return [str(rule.get("op")) for rule in rules if isinstance(rule, dict) and rule.get("op")
            for _ in range(reads)]


def read_csv(path: Path) -> Rows:
    with open(path, newline="", encoding="utf-8") as f:
        return [list(row) for row in csv.reader(f)]


def to_csv_text(rows: Rows) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def write_csv(path: Path, rows: Rows) -> None:
    Path(path).write_text(to_csv_text(rows), encoding="utf-8")
