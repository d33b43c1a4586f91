"""The CSV rule ops: exact outputs on small tables, canonical order, rules.json loading."""

import json

import pytest

from fakes.csv_rules import apply_rules, load_rule_ops, read_csv, snake_case, write_csv

MESSY = [
    [" Order Date ", "E-mail", "Total", "isActive", "Customer"],
    ["03/15/2024", " Alice@Example.COM", "$1,234.5", "yes", " ana lópez "],
    ["15.03.2024", "bob@example.com", "£ 99", "N", "USB-C hub"],
    ["", "", "", "", ""],
    ["March 15, 2024", "bob@example.com", "€12.00", "TRUE", "Acme"],
    ["Mar 15 2024", "x@y.z", "7", "0", "plain"],
    ["2024/03/15", "x@y.z", "abc", "maybe", "not a date"],
    ["Mar 15 2024", "x@y.z", "7", "0", "plain"],
]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Order Date ", "order_date"),
        ("E-mail", "e_mail"),
        ("isActive", "is_active"),
        ("OrderID", "order_id"),
        ("ORDER-DATE", "order_date"),
        ("Qty (units)", "qty_units"),
        (" Amount ($) ", "amount"),
    ],
)
def test_snake_case(raw, expected):
    assert snake_case(raw) == expected


def test_trim_and_headers_only():
    out = apply_rules(MESSY, ["trim", "headers"])
    assert out[0] == ["order_date", "e_mail", "total", "is_active", "customer"]
    assert out[1] == ["03/15/2024", "Alice@Example.COM", "$1,234.5", "yes", "ana lópez"]
    assert len(out) == len(MESSY)


def test_all_rules_except_titlecase():
    out = apply_rules(MESSY, ["dedupe", "emails", "booleans", "amounts", "dates", "headers", "trim"])
    assert out == [
        ["order_date", "e_mail", "total", "is_active", "customer"],
        ["2024-03-15", "alice@example.com", "1234.50", "true", "ana lópez"],
        ["2024-03-15", "bob@example.com", "99.00", "false", "USB-C hub"],
        ["2024-03-15", "bob@example.com", "12.00", "true", "Acme"],
        ["2024-03-15", "x@y.z", "7.00", "false", "plain"],
        ["2024-03-15", "x@y.z", "abc", "maybe", "not a date"],
    ]


def test_titlecase_breaks_emails_flags_and_text_but_not_numbers():
    out = apply_rules(MESSY, ["trim", "headers", "dates", "amounts", "booleans", "emails", "titlecase"])
    assert out[1] == ["2024-03-15", "Alice@Example.Com", "1234.50", "True", "Ana López"]
    assert out[0] == ["order_date", "e_mail", "total", "is_active", "customer"]  # headers untouched


def test_order_in_rules_file_does_not_matter_and_unknown_ops_are_ignored():
    a = apply_rules(MESSY, ["trim", "headers", "dates", "dedupe"])
    b = apply_rules(MESSY, ["dedupe", "frobnicate", "dates", "headers", "trim"])
    assert a == b


def test_dedupe_drops_blank_and_repeated_rows_keeping_first():
    rows = [["a", "b"], ["1", "x"], [], ["", " "], ["1", "x"], ["2", "y"], ["1", "x"]]
    assert apply_rules(rows, ["dedupe"]) == [["a", "b"], ["1", "x"], ["2", "y"]]


def test_value_ops_leave_other_columns_alone():
    rows = [["name", "note"], ["03/15/2024", "yes"]]
    assert apply_rules(rows, ["dates", "booleans", "amounts"]) == rows


def test_input_rows_are_not_mutated():
    rows = [[" a "], [" 1 "]]
    apply_rules(rows, ["trim"])
    assert rows == [[" a "], [" 1 "]]


@pytest.mark.parametrize(
    "payload",
    [
        [{"id": "t", "op": "trim"}, {"id": "d", "op": "dates"}],
        {"rules": [{"id": "t", "op": "trim"}, {"id": "d", "op": "dates"}]},
    ],
)
def test_load_rule_ops_accepts_list_and_object(tmp_path, payload):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(payload))
    assert load_rule_ops(path) == ["trim", "dates"]


@pytest.mark.parametrize("text", ["not json", '"a string"', "{}"])
def test_load_rule_ops_tolerates_bad_files(tmp_path, text):
    path = tmp_path / "rules.json"
    path.write_text(text)
    assert load_rule_ops(path) == []
    assert load_rule_ops(tmp_path / "missing.json") == []


def test_csv_round_trip_with_quotes(tmp_path):
    rows = [["a", "b"], ["March 15, 2024", 'say "hi"'], []]
    write_csv(tmp_path / "x.csv", rows)
    assert read_csv(tmp_path / "x.csv") == rows
