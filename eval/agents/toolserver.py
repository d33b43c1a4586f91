"""The SDK agent's sandboxed half: runs its tools in the cell and answers over JSON lines, holding no key.

The harness runs the tool-use loop with one warm SDK client per process (eval/agents/warm.py); the process it
spawns through sandbox/ is this script, stdlib only, so it starts in a few tens of ms where `import anthropic`
costs over a second. It first writes one `hello` line (its cwd, the system prompt, the skills offered, the tool
schemas, as seen inside the sandbox), then answers each `{"tool", "input"}` line with `{"text", "is_error"}`;
`{"settle": text}` writes a mutator's result.json from its last answer, and `{"exit": code}` ends it with that
code. It never reads the model API's variables: it is given none.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if not __package__:  # run as a script: the project root, when this process can see it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

try:
    from eval.agents.result_json import settle_mutator_result
    from eval.agents.tools import Toolbox, ToolError, build_toolbox, mutator_toolbox
except ImportError:  # run as a script in a sandbox that shows only this folder: siblings are top-level
    from result_json import settle_mutator_result  # type: ignore[no-redef]
    from tools import Toolbox, ToolError, build_toolbox, mutator_toolbox  # type: ignore[no-redef]

BUILD_SYSTEM = """You are an agent completing a task in your working directory {cwd}.
Use the tools to inspect and change files there; paths are relative to that directory. Work until the
task is done, then answer with a short summary and no tool call.
"""
SKILLS_SYSTEM = """
Skills give you instructions for particular kinds of task. When a task matches a skill's description,
read its SKILL.md first (with the read tool) and follow it; read the other files it points to as needed.
{skills}
"""
MUTATOR_SYSTEM = """You are improving an agent skill in your working directory {cwd}.
You may write only inside skill/ and the file result.json; everything else is read-only evidence.
Finish by writing result.json as the task asks (a JSON object), then answer without a tool call.
"""


def installed_skills(cwd: Path) -> list[Path]:
    """Every skill the cell offers, as Claude Code finds them: SM_SKILL_DIR's first (the evolved one), then each
    other folder with a SKILL.md under cwd/.claude/skills/ (--with-skills), by name."""
    found: list[Path] = []
    skill_env = os.environ.get("SM_SKILL_DIR")
    if skill_env and Path(skill_env, "SKILL.md").is_file():
        found.append(Path(skill_env).resolve())
    root = cwd / ".claude" / "skills"
    if root.is_dir():
        found += [p.resolve() for p in sorted(root.iterdir())
                  if (p / "SKILL.md").is_file() and p.resolve() not in found]
    return found


def skills_block(cwd: Path) -> tuple[str, list[str]]:
    """The Agent Skills way: only name + description up front, with the path to read SKILL.md from."""
    skills = installed_skills(cwd)
    if not skills:
        return "", []
    from skills_ref import read_properties, to_prompt  # only when a skill is offered (~40 ms of import)
    block = to_prompt(skills)
    for skill_dir in skills:
        try:
            block = block.replace(str(skill_dir / "SKILL.md"), (skill_dir / "SKILL.md").relative_to(cwd).as_posix())
        except ValueError:
            pass  # the skill lives outside cwd: the absolute path stays (the read tool will refuse it)
    return SKILLS_SYSTEM.format(skills=block), [read_properties(skill_dir).name for skill_dir in skills]


def system_prompt(role: str, cwd: Path) -> tuple[str, list[str]]:
    if role == "mutator":
        return MUTATOR_SYSTEM.format(cwd=cwd), []
    skills, names = skills_block(cwd)
    return BUILD_SYSTEM.format(cwd=cwd) + skills, names


def toolbox_for(role: str, cwd: Path) -> Toolbox:
    return mutator_toolbox(cwd) if role == "mutator" else build_toolbox(cwd)


def hello(role: str, cwd: Path, toolbox: Toolbox) -> dict:
    """What the loop needs to know of this side before its first request."""
    system, skills = system_prompt(role, cwd)
    return {"cwd": str(cwd), "system": system, "skills": skills, "tools": toolbox.names, "schemas": toolbox.schemas()}


def run_tool(toolbox: Toolbox, name: str, args: object) -> tuple[str, bool]:
    """(text, is_error) of one tool call: a bad call, or a tool's own bug, costs one turn, never the agent."""
    try:
        return toolbox.run(name, args), False
    except ToolError as err:
        return str(err), True
    except Exception as err:
        return f"{name} failed: {type(err).__name__}: {err}", True


def serve(role: str, cwd: Path, requests, answers) -> int:
    """Answer the loop's lines until it says exit (its code) or goes away (1)."""
    toolbox = toolbox_for(role, cwd)

    def answer(obj: dict) -> None:
        answers.write(json.dumps(obj) + "\n")
        answers.flush()
    answer({"hello": hello(role, cwd, toolbox)})
    for line in requests:
        asked = json.loads(line)
        if "exit" in asked:
            return int(asked["exit"])
        if "settle" in asked:
            settle_mutator_result(cwd, asked["settle"])
            answer({"settled": True})
            continue
        text, is_error = run_tool(toolbox, asked.get("tool", ""), asked.get("input"))
        answer({"text": text, "is_error": is_error})
    return 1


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(prog="toolserver")
    args.add_argument("--role", choices=("build", "mutator"), default="build")
    args.add_argument("--config", type=Path, help="read by the harness's loop (the result's total_cost_usd)")
    parsed = args.parse_args(argv)
    # The protocol keeps the real stdout; anything else printing to fd 1 lands in stderr, not in an answer.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return serve(parsed.role, Path.cwd().resolve(), sys.stdin, answers)


if __name__ == "__main__":
    sys.exit(main())
