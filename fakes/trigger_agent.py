"""Zero-spend build agent that models triggering: it loads the skill only when the request shares a word stem with
the skill's `description` (or either has no word to judge by), so a description mutation can fix or break it.

Run like fakes/fake_agent.py (`--agent-cmd "python fakes/trigger_agent.py"`), whose work it does: bare when the
skill does not trigger; when it does, first the load as Claude Code streams it (a `Skill` call, then SKILL.md in a
meta message) and a real run of each `scripts/` file SKILL.md names (its exit code as Claude Code reports it),
then fake_agent's own turns, its result counting these turns too. A separate script because fake_agent.py's bytes
are its implementation id (in every evaluation key): changing it would change the demo's cell seeds and verdicts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

if not __package__:  # run as a script: make `fakes` importable without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes import fake_agent as base  # noqa: E402


def skill_text(skill_dir: Path) -> str:
    try:
        return (skill_dir / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        return ""


def description(skill_dir: Path) -> str:
    match = re.search(r"^description:[ \t]*(.*?)\s*$", skill_text(skill_dir), re.MULTILINE)
    return match.group(1).strip("'\"") if match else ""


def triggers(prompt: str, skill_dir: Path) -> bool:
    """The model's choice, made deterministic: the request and the description share a word stem."""
    asked, offered = base.stems(prompt), base.stems(description(skill_dir))
    return not asked or not offered or bool(asked & offered)


def named_scripts(skill_dir: Path) -> list[str]:
    """Files under scripts/ that SKILL.md names and that exist, in the order named."""
    found = dict.fromkeys(re.findall(r"\bscripts/[\w./-]*\w", skill_text(skill_dir)))
    return [rel for rel in found if (skill_dir / rel).is_file()]


def run_script(skill_dir: Path, rel: str, source: str) -> tuple[str, str]:
    """Run a script the skill names on the input, for real: (command, its result as Claude Code shows it)."""
    interpreter = "bash" if rel.endswith(".sh") else sys.executable
    try:
        done = subprocess.run([interpreter, str(skill_dir / rel), source], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        code, output = done.returncode, (done.stdout + done.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        code, output = 124, f"{type(err).__name__}: {err}"
    command = f"{'bash' if rel.endswith('.sh') else 'python3'} {skill_dir / rel} {source}"
    return command, f"Exit code {code}\n{output}" if code else output or "(no output)"


def load_events(skill_dir: Path, prompt: str) -> tuple[list[dict], int]:
    """The load and the scripts' runs as stream events, and how many turns they are."""
    name, per_turn = base.skill_name(skill_dir), base.BASE_INPUT_TOKENS + base.skill_bytes(skill_dir) // 4
    calls = [("Skill", {"skill": name}, f"Launching skill: {name}")]
    source = base.csv_files(prompt)[0]
    for rel in named_scripts(skill_dir):
        command, result = run_script(skill_dir, rel, source)
        calls.append(("Bash", {"command": command}, result))
    events: list[dict] = []
    for number, (tool, args, result) in enumerate(calls, 1):
        tool_id = f"toolu_load{number:02d}"
        events += [{"type": "assistant", "message": {"role": "assistant", "content": [
                        {"type": "tool_use", "id": tool_id, "name": tool, "input": args}],
                        "usage": {"input_tokens": per_turn, "output_tokens": base.OUTPUT_TOKENS}}},
                   {"type": "user", "message": {"role": "user", "content": [
                       {"type": "tool_result", "tool_use_id": tool_id, "content": result,
                        **({"is_error": True} if result.startswith("Exit code ") else {})}]}}]
        if tool == "Skill":
            events.append({"type": "user", "isMeta": True, "message": {"role": "user", "content": [
                {"type": "text", "text": f"Base directory for this skill: {skill_dir}\n\n{skill_text(skill_dir)}"}]}})
    return events, len(calls)


def splice(stream: Path, events: list[dict], turns: int) -> None:
    """Put the load after fake_agent's init event and count its turns and tokens in the result."""
    lines = stream.read_text(encoding="utf-8").splitlines()
    spent = sum(e["message"]["usage"]["input_tokens"] for e in events if e["type"] == "assistant")
    out = lines[:1] + [json.dumps(e) for e in events]
    for line in lines[1:]:
        event = json.loads(line)
        if event.get("type") == "result":
            event["num_turns"] += turns
            event["usage"]["input_tokens"] += spent
            event["usage"]["output_tokens"] += turns * base.OUTPUT_TOKENS
            line = json.dumps(event)
        out.append(line)
    stream.write_text("\n".join(out) + "\n", encoding="utf-8")


def main() -> int:
    prompt = base.read_prompt()
    base.read_prompt = lambda: prompt      # fake_agent reads it again; stdin is spent
    env_skill = os.environ.get("SM_SKILL_DIR")
    skill_dir = Path(env_skill) if env_skill and Path(env_skill).is_dir() else None
    if skill_dir is None or not triggers(prompt, skill_dir):
        os.environ.pop("SM_SKILL_DIR", None)     # not loaded: the agent works bare
        return base.main()
    events, turns = load_events(skill_dir, prompt)
    code = base.main()
    stream = os.environ.get("SM_STREAM")
    if stream and Path(stream).is_file():
        splice(Path(stream), events, turns)
    return code


if __name__ == "__main__":
    sys.exit(main())
