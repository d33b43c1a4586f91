"""Skill telemetry per cell (eval/skill_use.py): every backend's own stream parsed into the exact SkillUse —
the claude CLI's recorded transcript, our SDK agent run against the local Messages API, a command agent's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.skill_marks import SkillMarks
from eval.skill_use import NOT_USED, SkillUse, parse_skill_use, shell_paths
from tests.eval.agents.messages_server import message, text, tool_use
from tests.eval.agents.test_anthropic_agent import run_agent

AGENTS = Path(__file__).resolve().parent / "agents"
SKILL_MD = "---\nname: csv-clean\ndescription: Clean CSV files.\n---\n- trim every cell\n"
REFERENCE = "Dates are ISO 8601.\n"


def write_stream(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_the_claude_cli_transcript_loads_the_skill_by_its_skill_call():
    use = parse_skill_use(AGENTS / "claude_transcript.jsonl", "csv-clean")
    assert use == SkillUse(loaded=True, loaded_turn=1, files_read=("SKILL.md",), scripts_run=(),
                           read_tokens_est=len("Launching skill: csv-clean") // 4)
    assert parse_skill_use(AGENTS / "claude_transcript.jsonl", "other-skill") == NOT_USED


def test_the_sdk_agent_reading_and_running_the_skill_against_the_local_api(server, tmp_path):
    work = tmp_path / "work"
    skill = work / ".claude" / "skills" / "csv-clean"
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "references" / "dates.md").write_text(REFERENCE)
    (skill / "scripts" / "fix.py").write_text("import sys\nsys.exit(3)\n")
    (skill / "scripts" / "ok.sh").write_text("echo fine\n")
    server.script(
        message(text("Let me look."), stop="tool_use"),
        message(tool_use("read", {"path": ".claude/skills/csv-clean/SKILL.md"}), stop="tool_use"),
        message(tool_use("bash", {"command": "python3 .claude/skills/csv-clean/scripts/fix.py in.csv"}),
                stop="tool_use"),
        message(tool_use("bash", {"command": "cat .claude/skills/csv-clean/references/dates.md && "
                                             "bash .claude/skills/csv-clean/scripts/ok.sh"}), stop="tool_use"),
        message(text("Done.")))
    proc, _ = run_agent(server, work, extra_env={"SM_SKILL_DIR": str(skill)})
    assert proc.returncode == 0, proc.stderr
    use = parse_skill_use(tmp_path / "work.stream.jsonl", "csv-clean", skill)
    cat_result = f"exit code 0\nstdout:\n{REFERENCE}fine\n\n"
    assert use == SkillUse(loaded=True, loaded_turn=2, files_read=("SKILL.md", "references/dates.md"),
                           scripts_run=(("scripts/fix.py", 3), ("scripts/ok.sh", 0)),
                           read_tokens_est=len(SKILL_MD) // 4 + len(cat_result) // 4)


def claude_bash(tool_id: str, command: str, result: str, *, is_error: bool = False, msg: str = "") -> list[dict]:
    return [{"type": "assistant", "message": {"id": msg or f"msg_{tool_id}", "content": [
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}]}},
            {"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": result, "is_error": is_error}]}}]


def test_claude_code_shapes_a_failed_bash_a_meta_skill_message_and_a_killed_call(tmp_path):
    base = "/cells/t__r0/work/.claude/skills/csv-clean"
    meta = f"Base directory for this skill: {base}\n\n{SKILL_MD}"
    events = [{"type": "system", "subtype": "init"},
              {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Hi"}]}},
              {"type": "user", "message": {"content": [{"type": "text", "text": meta}]}, "isMeta": True},
              *claude_bash("t1", f"{base}/scripts/fix.py --check", "Exit code 2\nbad header", is_error=True),
              {"type": "assistant", "message": {"id": "m3", "content": [{"type": "tool_use", "id": "t2",
                                                 "name": "Read", "input": {"file_path": f"{base}/references/x.md"}}]}},
              {"type": "assistant", "message": {"id": "m3", "content": [{"type": "tool_use", "id": "t3",
                                                 "name": "Bash", "input": {"command": f"uv run {base}/scripts/b.py"}}]}}]
    use = parse_skill_use(write_stream(tmp_path / "s.jsonl", events), "csv-clean")
    # one message id over two events is one turn; the killed call's exit code is unknown
    assert use == SkillUse(loaded=True, loaded_turn=1, files_read=("SKILL.md", "references/x.md"),
                           scripts_run=(("scripts/fix.py", 2), ("scripts/b.py", None)),
                           read_tokens_est=len(meta) // 4)


@pytest.mark.parametrize("command, read, run", [
    ("cat .claude/skills/s/SKILL.md .claude/skills/s/rules.json", ["SKILL.md", "rules.json"], []),
    ("python3 -u .claude/skills/s/scripts/a.py x.csv | head -3", [], ["scripts/a.py"]),
    ("ls .claude/skills/s/ && .claude/skills/s/scripts/run.sh", [], ["scripts/run.sh"]),
    ("cp .claude/skills/s/assets/t.csv out.csv", [], []),
    ("python normalise.py --rule trim input.csv", [], []),
    ("cat .claude/skills/other/SKILL.md '.claude/skills/s/a b.md'", ["a b.md"], []),
])
def test_shell_commands_split_into_reads_and_runs(command, read, run):
    assert shell_paths(command, SkillMarks("s")) == (read, run)


def test_json_round_trip_and_an_absent_stream(tmp_path):
    use = SkillUse(True, 3, ("SKILL.md",), (("scripts/a.py", None), ("scripts/a.py", 1)), 12)
    assert SkillUse.from_json(use.to_json()) == use
    assert parse_skill_use(tmp_path / "missing.jsonl", "s") == NOT_USED


def test_a_command_without_quoting_splits_as_shlex_splits_it() -> None:
    """The fast path (no quote or backslash) gives shlex's words for every such command, comments, tabs, vertical
    tabs, non-breaking spaces and operators included."""
    import random
    import shlex

    from eval.skill_use import QUOTING, SHELL_SPACE
    draw = random.Random(7)
    alphabet = "ab/ .-\t\n\r|&;<>$()#*?~=\x0b\x0c\xa0é"
    checked = 0
    for _ in range(20_000):
        command = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 16)))
        if not QUOTING.search(command):
            assert [w for w in SHELL_SPACE.split(command) if w] == shlex.split(command, posix=True), repr(command)
            checked += 1
    assert checked > 10_000
