"""The `anthropic` agent as one process: the tool-use loop (loop.py) with its own SDK client and its tools here.

Follows the agent process contract (cwd = working dir, SM_PROMPT_FILE, SM_STREAM, SM_SKILL_DIR, SM_MODEL,
SM_MAX_TURNS) and writes a Claude Code-shaped stream.jsonl ending in one `result` event; an API failure
that outlasts the retries ends as an `is_error` result and exit 1, never as a hang. The harness itself runs the
same loop with a warm client and only the tools in the sandbox (warm.py, toolserver.py); this script is that
agent for `--agent-cmd` and for any process that wants it whole.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import anthropic

if not __package__:  # run as a script: the project root, when this process can see it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

try:
    from eval.agents.hide import take_secrets, undumpable
    from eval.agents.loop import Options, converse, count_request, options_from_env
    from eval.agents.result_json import settle_mutator_result
    from eval.agents.stream import StreamWriter
    from eval.agents.tools import Toolbox
    from eval.agents.toolserver import hello, run_tool, skills_block, system_prompt, toolbox_for
except ImportError:  # run as a script, e.g. in a sandbox that shows only this folder: siblings are top-level
    from hide import take_secrets, undumpable  # type: ignore[no-redef]
    from loop import Options, converse, count_request, options_from_env  # type: ignore[no-redef]
    from result_json import settle_mutator_result  # type: ignore[no-redef]
    from stream import StreamWriter  # type: ignore[no-redef]
    from tools import Toolbox  # type: ignore[no-redef]
    from toolserver import hello, run_tool, skills_block, system_prompt, toolbox_for  # type: ignore[no-redef]

__all__ = ["Options", "main", "skills_block", "system_prompt"]


class LocalTools:
    """The tools run in this process (the loop's `Tools`)."""

    def __init__(self, toolbox: Toolbox) -> None:
        self.toolbox, self.names = toolbox, toolbox.names

    def schemas(self) -> list[dict]:
        return self.toolbox.schemas()

    async def run(self, name: str, args: object) -> tuple[str, bool]:
        return run_tool(self.toolbox, name, args)


def read_prompt() -> str:
    prompt_file = os.environ.get("SM_PROMPT_FILE")
    if prompt_file and Path(prompt_file).is_file():
        return Path(prompt_file).read_text(encoding="utf-8")
    return "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()


async def run(role: str, config: Path | None) -> int:
    options = options_from_env(role, os.environ)
    cwd = Path.cwd().resolve()
    stream_path = os.environ.get("SM_STREAM")
    stream = StreamWriter(Path(stream_path) if stream_path else None)
    toolbox = toolbox_for(role, cwd)
    seen = hello(role, cwd, toolbox)
    stream.init(model=options.model, cwd=seen["cwd"], tools=seen["tools"], skills=seen["skills"])
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    api_key = os.environ.get("ANTHROPIC_API_KEY") or ("local-server" if base_url else None)

    async def settle(text: str) -> None:
        settle_mutator_result(cwd, text)
    client = anthropic.AsyncAnthropic(api_key=api_key, timeout=options.timeout_s, http_client=
                                      anthropic.DefaultAsyncHttpxClient(event_hooks={"request": [count_request]}))
    async with client:
        return await converse(client, options, LocalTools(toolbox), stream, system=seen["system"],
                              prompt=read_prompt(), config=config, settle=settle if role == "mutator" else None)


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(prog="anthropic_agent")
    args.add_argument("--role", choices=("build", "mutator"), default="build")
    args.add_argument("--config", type=Path, help="config.json whose pricing gives the result's total_cost_usd")
    parsed = args.parse_args(argv)
    take_secrets()
    undumpable()   # this process holds the key: its tools may not read /proc/PID/environ
    return asyncio.run(run(parsed.role, parsed.config))


if __name__ == "__main__":
    sys.exit(main())
