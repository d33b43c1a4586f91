"""Read the output a task requires into a document the expectations can address.

JSON files load as they are; Markdown files give their front-matter fields (plus `body`); CSV files
give `columns`, `row_count` and `rows` (a list of column -> text) with the first data row's columns
also at the top level, for the one-record case. An absent or unreadable file is MISSING, with a reason.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from eval.graders.expectations import MISSING

MAX_BYTES = 5_000_000
SCALAR_INT = re.compile(r"^[+-]?\d+$")


def read_output(path: Path) -> tuple[object, str]:
    """(document or MISSING, why it is missing)."""
    if not path.is_file():
        return MISSING, f"{path.name} was not written"
    if path.stat().st_size > MAX_BYTES:
        return MISSING, f"{path.name} is larger than {MAX_BYTES} bytes"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        return MISSING, f"{path.name} is not UTF-8 text"
    suffix = path.suffix.lower()
    try:
        if suffix in (".md", ".markdown"):
            return front_matter(text), ""
        if suffix in (".csv", ".tsv"):
            return table(text, "\t" if suffix == ".tsv" else ","), ""
        return json.loads(text), ""
    except (ValueError, csv.Error) as err:
        return MISSING, f"{path.name} does not parse: {err}"


def scalar(text: str) -> object:
    """A front-matter value: true/false/null, integers and floats typed; quotes stripped; else text."""
    value = text.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~", ""):
        return None
    if SCALAR_INT.match(value):
        return int(value)
    try:
        return float(value)
    except ValueError:
        return value


def front_matter(text: str) -> dict:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("no '---' front-matter block at the top")
    fields: dict[str, object] = {}
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            fields["body"] = "\n".join(lines[index + 1:]).strip()
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"line {index + 1}: expected 'key: value'")
        fields[key.strip()] = scalar(value)
    raise ValueError("front matter is not closed with '---'")


def table(text: str, delimiter: str) -> dict:
    rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in row)]
    if not rows:
        raise ValueError("no header row")
    header = [h.strip() for h in rows[0]]
    records = [dict(zip(header, row)) for row in rows[1:]]
    first = records[0] if records else {}
    return {**first, "columns": header, "row_count": len(records), "rows": records}
