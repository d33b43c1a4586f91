"""How a transcript shows a skill in use: its name in a `Skill` call or a slash command, its folder in any
tool input, or its SKILL.md loaded into the conversation. Shared by the cells' telemetry (eval/skill_use.py)
and the mining room (mutator/mining/traces.py); pure string matching, it never opens a file.
"""

from __future__ import annotations

import re
from pathlib import Path

BASE_DIR = re.compile(r"Base directory for this skill:\s*(\S+)")


class SkillMarks:
    """The skill's name and the spellings of its folder: any `.../skills/<name>/` path, and each folder given
    (resolved) — a cell's own path, or the path the agent saw inside its sandbox."""

    def __init__(self, name: str, *folders: Path | str | None) -> None:
        self.name = name
        self.paths = [f"/skills/{name}/", f"skills/{name}/SKILL.md"]
        self.folders = [str(Path(f).resolve()) for f in folders if f is not None and str(f)]
        self.paths += [f + "/" for f in self.folders]
        self.folder = self.folders[0] if self.folders else ""

    def in_text(self, text: str) -> bool:
        return any(p in text for p in self.paths) or any(text.rstrip("/").endswith(f) for f in self.folders)

    def named(self, name: str, args: object) -> bool:
        """A `Skill` tool call naming this skill (`csv-clean`, `/csv-clean`, `plugin:csv-clean`)."""
        if name == "Skill" and isinstance(args, dict):
            named = str(args.get("skill") or args.get("command") or "").lstrip("/")
            return named.split(":")[-1] == self.name
        return False

    def in_tool(self, name: str, args: object) -> bool:
        return self.named(name, args) or any(self.in_text(s) for s in strings(args))

    def loaded(self, text: str) -> bool:
        """Claude Code puts a loaded skill's SKILL.md in a meta user message starting with its base dir."""
        found = BASE_DIR.search(text)
        return bool(found and found.group(1).rstrip("/").split("/")[-1] == self.name)

    def relative(self, text: str) -> str | None:
        """The path inside the skill folder that `text` (one path) names: "scripts/fix.py", "" for the folder
        itself, None when it is not in the skill folder."""
        text = text.strip().strip("'\"")
        for folder in self.folders:
            if text.rstrip("/") == folder:
                return ""
            if text.startswith(folder + "/"):
                return text[len(folder) + 1:].rstrip("/")
        marker = f"skills/{self.name}"
        at = text.find(marker)
        while at >= 0:
            rest = text[at + len(marker):]
            if (at == 0 or text[at - 1] in "/.") and (not rest or rest.startswith("/")):
                return rest.strip("/")
            at = text.find(marker, at + 1)
        return None


def strings(value: object) -> list[str]:
    """Every string inside a JSON value (a tool call's input)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []
