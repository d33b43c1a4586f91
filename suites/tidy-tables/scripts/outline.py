"""Print a table file's header and row count. Usage: python outline.py FILE (stdlib only)."""

import csv
import sys
from pathlib import Path

path = Path(sys.argv[1]) if len(sys.argv) > 1 else None
if path is None or not path.is_file():
    print("no table file to outline")
    sys.exit(0)
with path.open(newline="", encoding="utf-8", errors="replace") as f:
    rows = list(csv.reader(f))
print(f"header: {', '.join(rows[0]) if rows else '(none)'}; {max(len(rows) - 1, 0)} rows")
