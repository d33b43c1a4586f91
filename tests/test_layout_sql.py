"""The house's shape, its store: every SQL statement, reads included and for every table, lives in
mutator/store/ (tests/test_layout.py holds the rest of the shape)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.test_layout import ROOT, literals, modules

SQL_TEXT = re.compile(r"\bselect\b[\s\S]*?\bfrom\s+[\w\"(]|\binsert\s+(?:or\s+\w+\s+)?into\b|"
                      r"\bupdate\s+\w+\s+set\b|\bdelete\s+from\b|"
                      r"\b(?:create|drop)\s+(?:unique\s+)?(?:table|index|view|trigger)\b|"
                      r"\balter\s+table\b|\bpragma\s+\w+|\bjson_extract\(|\bcoalesce\(|\bgroup\s+by\b|"
                      r"\border\s+by\b|\bwhere\s+\w+(?:\.\w+)?\s*(?:=|<|>|!=|is\b|in\b|like\b)", re.I)
# Calls on a database (a name ending in db, conn, cursor or database): the DB-API's and sqlite-utils'.
SQL_CALLS = {"execute", "executemany", "executescript", "query", "rows_where", "pks_and_rows_where",
             "count_where", "delete_where", "insert_all", "upsert_all", "create_table", "create_index",
             "create_view", "add_column", "add_foreign_key", "transform", "enable_wal", "table_names",
             "view_names"}
# A table's methods, on `db["runs"]` or `db.table("runs")` (dict.update and list.insert are not SQL).
TABLE_CALLS = {"insert", "upsert", "update", "delete", "get", "lookup", "create", "drop", "count"}
DB_NAMES = re.compile(r"(?:^|_)(?:db|conn|connection|cursor|database)$")


def is_db(node: ast.expr) -> bool:
    """`db`, `self.db`, `loop.db.conn`, `self.db()`: an expression whose last name is a database's."""
    while isinstance(node, ast.Call):
        node = node.func
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(DB_NAMES.search(name))


def is_table(node: ast.expr) -> bool:
    """`db["runs"]` or `db.table("runs")`."""
    if isinstance(node, ast.Subscript):
        named = isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
        return named and is_db(node.value)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "table"
            and is_db(node.func.value))


def sql_sites(path: Path) -> list[tuple[int, str]]:
    """(line, what) of each SQL text (in a string that is not a docstring) or database call in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {(node.lineno, f"SQL {node.value.strip()[:50]!r}") for node in literals(tree)
             if SQL_TEXT.search(node.value)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                (node.func.attr in SQL_CALLS and is_db(node.func.value))
                or (node.func.attr in TABLE_CALLS and is_table(node.func.value))):
            found.add((node.lineno, f".{node.func.attr}()"))
    return sorted(found)


def test_only_the_store_holds_sql():
    """Every statement, reads included and for every table, lives in mutator/store/ behind functions that
    return records; nothing else holds SQL text or calls execute/query or a sqlite-utils table method
    (bench/ builds synthetic stores of its own)."""
    outside = [p for p in modules().values() if not str(p.relative_to(ROOT)).startswith("mutator/store/")]
    found = [f"{path.relative_to(ROOT)}:{line} {what}"
             for path in sorted(outside) for line, what in sql_sites(path)]
    assert found == [], f"{len(found)} SQL sites in {len({site.split(':')[0] for site in found})} files"


def test_the_sql_finder_finds_text_and_calls(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Select a parent from the pool."""\nq = "select id from runs where id = ?"\n'
                      'db.conn.execute(q)\nself.db["cells"].insert({})\nd["k"].update(x)\nrun.execute()\n'
                      'f"UPDATE attempts SET {k} = ?"\ndb.table("notes").upsert({})\n'
                      'rows = list(db.query("pragma table_info(runs)"))\nrequest.query.get("skill")\n')
    assert [line for line, _ in sql_sites(sample)] == [2, 3, 4, 7, 8, 9, 9]
