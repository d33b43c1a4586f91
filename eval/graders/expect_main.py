"""The expectations grader process: reads {output, expect, schema} on stdin, prints
{"tests": {...}, "notes": {...}}. Its own process, killed like any grader past graderTimeoutMs; it reads
only the one output file it is given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if not __package__:  # run as a script: make the project importable without installing it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.graders.expectations import grade, parse_expect, parse_schema  # noqa: E402
from eval.graders.outputs import read_output  # noqa: E402


def main() -> int:
    payload = json.loads(sys.stdin.read())
    expect = parse_expect(payload["expect"]) if payload.get("expect") else ()
    schema = parse_schema(payload["schema"]) if payload.get("schema") else ()
    doc, why = read_output(Path(payload["output"]))
    tests, notes = grade(doc, expect, schema)
    if why:
        notes = {"(output)": why, **notes}
    print(json.dumps({"tests": tests, "notes": notes}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
