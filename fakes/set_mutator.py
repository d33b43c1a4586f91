"""Zero-spend mutator for a skill set (a seed whose skill/ holds skills/<name>/...): the fake mutator's
scripted change, made to ONE skill of the set, by turns from round to round.

Run as `python fakes/set_mutator.py` with the workspace as cwd. It shows fake_mutator.py a view of the
workspace (in a temp dir) in which skill/ is that one skill (symlinks into the real workspace, so its edits
land in the set), runs it, and copies its result.json back. fake_mutator.py itself is untouched: its id
(a hash of the script) keys the dry runs of one-skill seeds, which keep theirs.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import fake_mutator


def member(workspace: Path) -> Path | None:
    """The skill of the set this round changes; None when skill/ is one skill."""
    skill = workspace / "skill"
    if (skill / "SKILL.md").is_file() or not (skill / "skills").is_dir():
        return None
    members = sorted(p for p in (skill / "skills").iterdir() if (p / "SKILL.md").is_file())
    round_number = max(1, int(os.environ.get("SM_ROUND") or 1))
    return members[(round_number - 1) % len(members)] if members else None


def main() -> int:
    workspace = Path.cwd()
    chosen = member(workspace)
    if chosen is None or os.environ.get("SM_TASK") == "meta":
        return fake_mutator.main()
    view = Path(tempfile.mkdtemp(prefix="set-view-"))   # the workspace itself is read-only but for skill/
    try:
        (view / "skill").symlink_to(chosen)
        for name in ("briefing.md", "refs", "history", "evidence", "tasks"):
            if (workspace / name).exists():
                (view / name).symlink_to(workspace / name)
        os.chdir(view)
        code = fake_mutator.main()
        os.chdir(workspace)
        if (view / "result.json").is_file():
            (workspace / "result.json").write_bytes((view / "result.json").read_bytes())
        return code
    finally:
        os.chdir(workspace)
        shutil.rmtree(view, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
