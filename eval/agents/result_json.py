"""The mutator's closing JSON: take {summary, reasoning} from its last answer when it wrote no result.json.

Shared by every mutator backend. It never edits a result.json the mutator wrote itself.
"""

from __future__ import annotations

import json
from pathlib import Path


def settle_mutator_result(cwd: Path, final_text: str) -> None:
    """The mutator ends with a JSON object ({summary, reasoning}; {lessons} for the meta call): taken from its
    last answer when it wrote no result.json.

    Text that holds no JSON object is written as it is, so the attempt fails as garbage with the raw text kept.
    """
    target = cwd / "result.json"
    if target.exists() and target.read_text(encoding="utf-8", errors="replace").strip():
        return  # the harness may pre-create it empty (a sandbox binds that one file writable)
    start, end = final_text.find("{"), final_text.rfind("}")
    if start != -1 and end > start:
        try:
            obj = json.loads(final_text[start:end + 1])
            if isinstance(obj, dict):
                target.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
                return
        except json.JSONDecodeError:
            pass
    target.write_text(final_text, encoding="utf-8")
