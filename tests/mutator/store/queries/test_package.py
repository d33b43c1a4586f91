"""The package holds the dashboard's reads and imports nothing above the store."""

from __future__ import annotations

import ast
from pathlib import Path

import mutator.store.queries as package

HERE = Path(package.__file__).parent


def test_the_queries_import_only_the_store_and_eval() -> None:
    found = set()
    for path in HERE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    upper = sorted(m for m in found if m.startswith("mutator") and not m.startswith("mutator.store"))
    assert upper == []
    assert package.__doc__ and "dashboard" in package.__doc__
