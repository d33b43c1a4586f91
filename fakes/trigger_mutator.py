"""Zero-spend mutator with a triggering move: when the briefing says the skill was NOT loaded on some train tasks,
it rewrites the skill's description with the words of those task statements (tasks/<id>.md) it lacks; otherwise
it is fakes/fake_mutator.py. Run like it (`--mutator-cmd "python fakes/trigger_mutator.py"`); a separate script
because fake_mutator.py's bytes are its implementation id (in the run id), which pins the demo's run.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

if not __package__:  # run as a script: make `fakes` importable without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes import fake_mutator as base  # noqa: E402
from fakes.fake_agent import STEM_STOP, stems  # noqa: E402

MAX_WORDS = 8


def not_loaded(briefing: str) -> list[str]:
    """Train tasks whose build agents never loaded the skill: the briefing table's skill-use column."""
    found = []
    for line in base.section(briefing, "Your parent on train tasks").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and cells[5].startswith("NOT loaded"):
            found.append(cells[0])
    return found


def rewrite_description(skill: Path, briefing: str, tasks: Path) -> base.Change | None:
    missed = not_loaded(briefing)
    md = skill / "SKILL.md"
    text = md.read_text(encoding="utf-8") if md.is_file() else ""
    found = re.search(r"^description:[ \t]*(.*)$", text, re.MULTILINE)
    if not missed or not found:
        return None
    have = stems(found.group(1))
    words: list[str] = []
    aimed: list[str] = []        # the tasks whose words made it into the first MAX_WORDS
    for task in missed:
        statement = tasks / f"{task}.md"
        body = statement.read_text(encoding="utf-8").split("\n## ")[0] if statement.is_file() else ""
        body = "\n".join(line for line in body.splitlines() if not line.startswith("#"))   # not its id heading
        for word in re.findall(r"[a-z][a-z0-9]+", body.casefold()):
            if len(words) < MAX_WORDS and len(word) > 3 and word not in STEM_STOP and word[:4] not in have \
                    and word not in words:
                words.append(word)
                aimed += [] if task in aimed else [task]
    if not words:
        return None
    new = (found.group(1).rstrip() + " Also use it for requests about " + ", ".join(words) + ".")[:1024]
    md.write_text(text[:found.start(1)] + new + text[found.end(1):], encoding="utf-8")
    return base.Change(summary=f"Rewrite the description so the skill triggers on {', '.join(aimed)}",
                       reasoning=f"The build agents did not load the skill on {', '.join(missed)}: its description "
                                 f"shares no word with those requests. Added: {', '.join(words)}.")


def main() -> int:
    started = time.monotonic()
    briefing = Path("briefing.md").read_text(encoding="utf-8") if Path("briefing.md").is_file() else ""
    change = None if os.environ.get("SM_TASK") == "meta" else \
        rewrite_description(Path("skill"), briefing, Path("tasks"))
    if change is None:
        return base.main()
    Path("result.json").write_text(json.dumps({"summary": change.summary, "reasoning": change.reasoning}, indent=2)
                                   + "\n", encoding="utf-8")
    base.write_stream(os.environ.get("SM_STREAM"), change, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
