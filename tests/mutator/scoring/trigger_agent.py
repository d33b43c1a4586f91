"""A scripted build agent (--agent-cmd) that models triggering: it loads the skill (a `Skill` tool call in its
stream) only when a word of 4+ letters of the prompt is in the skill's description, as Claude Code decides from the
description alone. Its one text event lists the skills installed in its cell and which of their files it could
write, so a test can see what a cell held. Stdlib only; spends nothing."""

import json
import os
import pathlib
import re

prompt = pathlib.Path(os.environ["SM_PROMPT_FILE"]).read_text(encoding="utf-8")
skill = pathlib.Path(os.environ.get("SM_SKILL_DIR", "/nonexistent"))
text = (skill / "SKILL.md").read_text(encoding="utf-8") if (skill / "SKILL.md").is_file() else ""
description = next((line.split(":", 1)[1] for line in text.splitlines() if line.startswith("description:")), "")
words = set(re.findall(r"[a-z]{4,}", description.lower()))
loaded = bool(words & set(re.findall(r"[a-z]{4,}", prompt.lower())))
installed = pathlib.Path(".claude/skills")
skills = sorted(p.name for p in installed.iterdir()) if installed.is_dir() else []
writable = sorted(str(f) for f in installed.rglob("*") if f.is_file() and os.stat(f).st_mode & 0o222)  # a write bit
usage = {"input_tokens": 100, "output_tokens": 10}
with open(os.environ["SM_STREAM"], "a", encoding="utf-8") as stream:
    if loaded:
        stream.write(json.dumps({"type": "assistant", "message": {"id": "m1", "usage": usage, "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Skill", "input": {"skill": skill.name}}]}}) + "\n")
    stream.write(json.dumps({"type": "assistant", "message": {"id": "m2", "usage": usage, "content": [
        {"type": "text", "text": json.dumps({"skills": skills, "writable": writable})}]}}) + "\n")
    stream.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                             "usage": usage, "total_cost_usd": 0.001}) + "\n")
