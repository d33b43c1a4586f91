"""Each expectation operator at its boundaries, on plain values (no files, no processes)."""

from __future__ import annotations

import pytest

from eval.graders.expectations import MISSING, ExpectError, check, grade, lookup, parse_expect, parse_spec


def passes(spec: object, value: object) -> bool:
    return check(parse_spec("f", spec), value)[0]


@pytest.mark.parametrize("spec, value, expected", [
    ("~gte:5", 5, True), ("~gte:5", 4.999, False), ("~gte:5", 6, True), ("~gte:5", "5", True),
    ("~gte:5", " 5.0 ", True), ("~gte:5", "4", False),
    ("~gt:5", 5, False), ("~gt:5", 5.001, True), ("~gt:5", "6", True),
    ("~lte:5", 5, True), ("~lte:5", 5.001, False), ("~lte:-1", -1, True), ("~lte:-1", 0, False),
    ("~lt:5", 5, False), ("~lt:5", 4.999, True), ("~lt:0.5", "0.49", True),
    ("~gte:1", True, False), ("~lt:1", False, False),           # booleans are not numbers
    ("~gte:0", "abc", False), ("~gte:0", None, False), ("~gte:0", [1], False), ("~gte:0", "nan", False),
    ("~gte:0", MISSING, False),
])
def test_numeric_boundaries(spec: str, value: object, expected: bool) -> None:
    assert passes(spec, value) is expected


def test_numeric_refuses_booleans_with_a_reason() -> None:
    ok, why = check(parse_spec("paid", "~gte:1"), True)
    assert not ok and "booleans are not numbers" in why


@pytest.mark.parametrize("spec, value, expected", [
    ("~contains:Oslo", "city of oslo", True), ("~contains:oslo", "OSLO", True), ("~contains:Oslo", "Osl", False),
    ("~contains:ß", "STRASSE", True), ("~contains:42", 1042, True), ("~contains:a", MISSING, False),
    ("~contains:b", ["a", "b"], True),
])
def test_contains_is_a_case_insensitive_substring(spec: str, value: object, expected: bool) -> None:
    assert passes(spec, value) is expected


@pytest.mark.parametrize("spec, value, expected", [
    (r"~regex:^\d{4}-\d{2}-\d{2}$", "2024-05-25", True), (r"~regex:^\d{4}-\d{2}-\d{2}$", "2024-5-25", False),
    (r"~regex:^\d{4}-\d{2}-\d{2}$", "2024-05-255", False), ("~regex:b", "abc", True),  # search, not fullmatch
    ("~regex:^b", "abc", False), ("~regex:^1", 12, True), ("~regex:x", MISSING, False),
])
def test_regex_searches(spec: str, value: object, expected: bool) -> None:
    assert passes(spec, value) is expected


@pytest.mark.parametrize("spec, value, expected", [
    ("~in:[yes,no]", "yes", True), ("~in:[yes,no]", "Yes", False), ("~in:[yes,no]", "maybe", False),
    ("~in:[ yes , no ]", "no", True), ("~in:[1,2,3]", 3, True), ("~in:[1,2,3]", "3", True), ("~in:[1,2,3]", 4, False),
    ('~in:["a,b","c"]', "a,b", True), ('~in:["a,b","c"]', "a", False), ("~in:[true,false]", False, True),
    ("~in:[true,false]", "false", True), ("~in:[1]", True, False), ("~in:[a]", MISSING, False),
])
def test_in_membership(spec: str, value: object, expected: bool) -> None:
    assert passes(spec, value) is expected


@pytest.mark.parametrize("value, truthy", [
    (True, True), (False, False), (1, True), (0, False), (0.0, False), (-1, True), ("x", True), ("", False),
    ("  ", False), ("false", False), ("FALSE", False), ("no", False), ("0", False), ("null", False),
    ("yes", True), ("true", True), ([], False), ([0], True), ({}, False), ({"a": 1}, True), (None, False),
    (MISSING, False),
])
def test_truthy_and_falsy_are_complements(value: object, truthy: bool) -> None:
    assert passes("~truthy", value) is truthy
    assert passes("~falsy", value) is (not truthy)


@pytest.mark.parametrize("spec, value, expected", [
    ("abc", "abc", True), ("abc", "ABC", False), ("abc", "abc ", False), (5, 5, True), (5, 5.0, True),
    (5, "5", False), (1, True, False), (True, 1, False), (True, True, True), (None, None, True),
    (None, MISSING, False), ([1, 2], [1, 2], True), ([1, 2], [2, 1], False), ([True], [1], False),
    ({"a": 1}, {"a": 1}, True), ({"a": 1}, {"a": 1, "b": 2}, False), ("~~tilde", "~tilde", True),
    ("~~tilde", "~~tilde", False),
])
def test_literal_is_exact_json_equality(spec: object, value: object, expected: bool) -> None:
    assert passes(spec, value) is expected


@pytest.mark.parametrize("block, message", [
    ({"a": "~startswith:x"}, "unknown operator '~startswith'"),
    ({"a": "~GTE:5"}, "unknown operator '~GTE'"),
    ({"a": "~gte:five"}, "needs a finite number"),
    ({"a": "~gte:inf"}, "needs a finite number"),
    ({"a": "~gte"}, "needs an argument"),
    ({"a": "~truthy:1"}, "takes no argument"),
    ({"a": "~in:a,b"}, "bracketed list"),
    ({"a": "~in:[]"}, "at least one choice"),
    ({"a": "~contains:"}, "non-empty substring"),
    ({"a": "~regex:("}, "RE2 cannot take it (missing"),
    ({"a": "~regex:(a)\\1"}, "RE2 cannot take it (invalid escape sequence"),
    ({"a": "~regex:(?=x)y"}, "RE2 cannot take it (invalid perl operator"),
    ({"_note": "only notes"}, "names no field"),
    (["a"], "must be a JSON object"),
])
def test_bad_blocks_are_refused(block: object, message: str) -> None:
    with pytest.raises(ExpectError, match=message.replace("(", r"\(").replace("+", r"\+").replace("$", r"\$")):
        parse_expect(block)


def test_underscore_fields_are_ignored_and_each_field_is_a_test() -> None:
    expect = parse_expect({"_comment": "why", "name": "Ada", "age": "~gte:18", "tags.0": "~in:[x,y]"})
    tests, notes = grade({"name": "Ada", "age": 17, "tags": ["y"]}, expect)
    assert tests == {"name": 1.0, "age": 0.0, "tags.0": 1.0}
    assert notes == {"age": "expected ~gte:18; got '17'"}


def test_schema_scores_the_share_of_typed_fields() -> None:
    from eval.graders.expectations import parse_schema
    schema = parse_schema({"name": "string", "age": "integer", "tags": "array", "ok": "boolean"})
    tests, notes = grade({"name": "Ada", "age": 17.5, "tags": [], "ok": 1}, parse_expect({"name": "Ada"}), schema)
    assert tests == {"name": 1.0, "(schema)": 0.5}
    assert "age (integer)" in notes["(schema)"] and "ok (boolean)" in notes["(schema)"]
    with pytest.raises(ExpectError, match="unknown type 'str'"):
        parse_schema({"name": "str"})


def test_missing_output_scores_every_test_zero() -> None:
    tests, notes = grade(MISSING, parse_expect({"a": "~falsy", "b": 1}))
    assert tests == {"a": 0.0, "b": 0.0} and notes["a"].endswith("no output")


def test_lookup_prefers_whole_keys_then_dotted_paths() -> None:
    doc = {"a.b": 1, "a": {"b": 2, "c": [10, {"d": 3}]}}
    assert lookup(doc, "a.b") == 1
    assert lookup(doc, "a.c.1.d") == 3
    assert lookup(doc, "a.c.5") is MISSING and lookup(doc, "a.x") is MISSING
