"""Declarative expectations: a task's `expect` block (field -> literal or `~operator`) and `schema`.

`parse_expect` / `parse_schema` validate a block when the suite loads (unknown operators and refused
regexes raise `ExpectError`); `grade` scores one output document against them, one named test per
field. Pure functions over data: no files, no processes, never the skill.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from eval.graders.regex_guard import RegexRefused, compile_checked, search

OPERATORS = ("contains", "regex", "gte", "gt", "lte", "lt", "in", "truthy", "falsy")
NUMERIC = {"gte": lambda a, n: a >= n, "gt": lambda a, n: a > n, "lte": lambda a, n: a <= n,
           "lt": lambda a, n: a < n}
SCHEMA_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null", "any")
FALSY_TEXT = {"", "false", "0", "no", "n", "off", "null", "none"}
SCHEMA_TEST = "(schema)"
MISSING = object()


class ExpectError(ValueError):
    """An `expect` or `schema` block is malformed; the message names the field and the fix."""


@dataclass(frozen=True)
class Expectation:
    field: str
    op: str          # "literal" or one of OPERATORS
    arg: str         # the operator's argument as written ("" for truthy/falsy); a literal as canonical JSON
    spec: str        # the whole spec as canonical JSON, to hand the block to a grader process

    def describe(self) -> str:
        return f"= {self.arg}" if self.op == "literal" else f"~{self.op}{':' + self.arg if self.arg else ''}"


def parse_spec(field: str, value: object) -> Expectation:
    spec = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if not isinstance(value, str) or not value.startswith("~"):
        return Expectation(field, "literal", spec, spec)
    if value.startswith("~~"):      # an escaped literal that itself starts with '~'
        return Expectation(field, "literal", json.dumps(value[1:], ensure_ascii=False), spec)
    name, sep, arg = value[1:].partition(":")
    if name not in OPERATORS:
        raise ExpectError(f"field {field!r}: unknown operator '~{name}'; use one of "
                          f"{', '.join('~' + o for o in OPERATORS)} "
                          "(or '~~' for a literal starting with '~')")
    if name in ("truthy", "falsy"):
        if sep:
            raise ExpectError(f"field {field!r}: ~{name} takes no argument; write just '~{name}'")
    elif not sep:
        raise ExpectError(f"field {field!r}: ~{name} needs an argument, like '~{name}:...'")
    if name == "regex":
        try:
            compile_checked(arg)
        except RegexRefused as err:
            raise ExpectError(f"field {field!r}: {err}") from None
    elif name in NUMERIC:
        if number_of(arg) is None:
            raise ExpectError(f"field {field!r}: ~{name} needs a finite number, got {arg!r}")
    elif name == "in":
        try:
            choices = in_choices(arg)
        except ValueError as err:
            raise ExpectError(f"field {field!r}: {err}") from None
        if not choices:
            raise ExpectError(f"field {field!r}: ~in needs at least one choice, like '~in:[a,b]'")
    elif name == "contains" and not arg:
        raise ExpectError(f"field {field!r}: ~contains needs a non-empty substring")
    return Expectation(field, name, arg, spec)


def parse_expect(block: object) -> tuple[Expectation, ...]:
    """A task's `expect` object -> its expectations (fields starting with '_' are notes, not tests)."""
    if not isinstance(block, Mapping):
        raise ExpectError("'expect' must be a JSON object of output field -> expected value or '~operator'")
    fields = [(str(k), v) for k, v in block.items() if not str(k).startswith("_")]
    if not fields:
        raise ExpectError("'expect' names no field (keys starting with '_' are ignored)")
    return tuple(parse_spec(k, v) for k, v in fields)


def parse_schema(block: object) -> tuple[tuple[str, str], ...]:
    """A task's `schema`: {field: type} (or a list of fields that must be present, any type)."""
    if isinstance(block, list) and all(isinstance(k, str) for k in block):
        block = dict.fromkeys(block, "any")
    if not isinstance(block, Mapping) or not block:
        raise ExpectError(f"'schema' must be a non-empty object of field -> type ({', '.join(SCHEMA_TYPES)}) "
                          f"or a list of required fields")
    pairs = []
    for key, kind in block.items():
        if kind not in SCHEMA_TYPES:
            raise ExpectError(f"schema field {key!r}: unknown type {kind!r}; use one of "
                              f"{', '.join(SCHEMA_TYPES)}")
        pairs.append((str(key), str(kind)))
    return tuple(pairs)


# ---- values -------------------------------------------------------------------------------------
def number_of(value: object) -> float | None:
    """A finite number from a number or a numeric string; booleans are refused (None)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def in_choices(arg: str) -> list[object]:
    """`[a,b,c]` (bare words) or a JSON array; a value matches a choice when equal or written the same."""
    text = arg.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError(f"~in needs a bracketed list like '~in:[a,b,c]', got {arg!r}")
    try:
        return list(json.loads(text))
    except json.JSONDecodeError:
        return [word.strip() for word in text[1:-1].split(",") if word.strip()]


def falsy(value: object) -> bool:
    if value is MISSING or value is None or value is False:
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == 0
    if isinstance(value, str):
        return value.strip().casefold() in FALSY_TEXT
    if isinstance(value, (list, dict)):
        return not value
    return False


def same(expected: object, actual: object) -> bool:
    """JSON equality where true != 1 (Python's bool is an int)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(expected[k], actual[k]) for k in expected)
    return expected == actual


def lookup(doc: object, path: str) -> object:
    """`path` in `doc`: the whole key first, then dotted segments (digits index lists); MISSING if absent."""
    if isinstance(doc, Mapping) and path in doc:
        return doc[path]
    current = doc
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


# ---- grading ------------------------------------------------------------------------------------
def check(exp: Expectation, actual: object) -> tuple[bool, str]:
    """(passed, why) for one expectation against the field's value (MISSING when absent)."""
    shown = "missing" if actual is MISSING else f"got {as_text(actual)[:120]!r}"
    if exp.op == "truthy":
        return not falsy(actual), shown
    if exp.op == "falsy":
        return falsy(actual), shown
    if actual is MISSING:
        return False, "field missing"
    if exp.op == "literal":
        return same(json.loads(exp.arg), actual), shown
    if exp.op == "contains":
        return exp.arg.casefold() in as_text(actual).casefold(), shown
    if exp.op == "regex":
        return search(exp.arg, as_text(actual)), shown   # RE2: linear time, no cap needed
    if exp.op in NUMERIC:
        if isinstance(actual, bool):
            return False, f"{shown}: booleans are not numbers"
        number = number_of(actual)
        if number is None:
            return False, f"{shown}: not a number"
        return NUMERIC[exp.op](number, float(exp.arg)), shown
    if exp.op == "in":
        hit = any(same(choice, actual) or as_text(choice) == as_text(actual)
                  for choice in in_choices(exp.arg))
        return hit, shown
    raise AssertionError(f"operator {exp.op!r} was not validated at load")


def type_ok(kind: str, value: object) -> bool:
    if value is MISSING:
        return False
    return {"string": lambda v: isinstance(v, str),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool), "array": lambda v: isinstance(v, list),
            "object": lambda v: isinstance(v, dict), "null": lambda v: v is None,
            "any": lambda v: True}[kind](value)


def grade(doc: object, expect: tuple[Expectation, ...],
          schema: tuple[tuple[str, str], ...] = ()) -> tuple[dict[str, float], dict[str, str]]:
    """(test name -> 0/1 per field [+ '(schema)' as the share of schema fields present and typed], notes).

    `doc` is MISSING when the output is absent or unreadable: every test then scores 0.
    """
    tests: dict[str, float] = {}
    notes: dict[str, str] = {}
    for exp in expect:
        passed, why = (False, "no output") if doc is MISSING else check(exp, lookup(doc, exp.field))
        tests[exp.field] = 1.0 if passed else 0.0
        if not passed:
            notes[exp.field] = f"expected {exp.describe()}; {why}"
    if schema:
        bad = [f"{key} ({kind})" for key, kind in schema
               if doc is MISSING or not type_ok(kind, lookup(doc, key))]
        tests[SCHEMA_TEST] = round(1 - len(bad) / len(schema), 4)
        if bad:
            notes[SCHEMA_TEST] = "missing or mistyped: " + ", ".join(bad)
    return tests, notes
