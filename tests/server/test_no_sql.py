"""The dashboard's server holds no SQL: every statement it runs is a function of mutator/store/queries/, so a
schema change touches the store alone. No string in mutator/server reads like a statement, and no call runs
one or asks sqlite-utils about tables."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[2] / "mutator" / "server"
STATEMENT = re.compile(r"\b(select\b.*\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|pragma\s+\w+|"
                       r"create\s+(table|index)|json_each)\b", re.IGNORECASE | re.DOTALL)
RUNS_SQL = {"execute", "executemany", "executescript", "query", "rows_where", "table_names", "table",
            "read_sql", "read_sql_query"}   # called; `request.query` (aiohttp) is an attribute, never a call


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@pytest.mark.parametrize("path", sorted(SERVER.glob("*.py")), ids=lambda p: p.name)
def test_the_server_module_holds_no_sql(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in docs]
    texts += ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values)
              for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]   # f"select {cols} from ..."
    assert [t for t in texts if STATEMENT.search(t)] == []
    calls = sorted({n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and n.func.attr in RUNS_SQL})
    calls += sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                     and n.attr == "columns_dict"})
    assert calls == [], f"{path.name} runs SQL itself; add a function to mutator/store/queries/"
