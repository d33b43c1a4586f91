"""The `anthropic` agent: a tool-use loop on the Messages API, run as a child process per cell or mutation.

Follows the agent process contract (cwd = working dir, SM_PROMPT_FILE, SM_STREAM, SM_SKILL_DIR, SM_MODEL,
SM_MAX_TURNS) and writes a Claude Code-shaped stream.jsonl ending in one `result` event. An API failure
that outlasts the retries ends as an `is_error` result and exit 1, never as a hang.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anthropic  # noqa: E402

if not __package__:  # run as a script: the project root, when this process can see it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

try:
    from eval.agents.caching import cached_request
    from eval.agents.hide import take_secrets, undumpable
    from eval.agents.result_json import settle_mutator_result
    from eval.agents.stream import StreamWriter, usage_dict
    from eval.agents.tools import Toolbox, ToolError, build_toolbox, mutator_toolbox
except ImportError:  # run as a script, e.g. in a sandbox that shows only this folder: siblings are top-level
    from caching import cached_request  # type: ignore[no-redef]
    from hide import take_secrets, undumpable  # type: ignore[no-redef]
    from result_json import settle_mutator_result  # type: ignore[no-redef]
    from stream import StreamWriter, usage_dict  # type: ignore[no-redef]
    from tools import Toolbox, ToolError, build_toolbox, mutator_toolbox  # type: ignore[no-redef]

MAX_TOKENS = 8192
RETRYABLE = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError)

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


@dataclass(frozen=True)
class Options:
    role: str
    model: str
    max_turns: int
    stream_api: bool          # SSE streaming responses (the default) or plain JSON
    max_tokens: int
    retries: int              # our bounded retry rounds on top of the SDK's own retries
    backoff_s: float          # first wait of our backoff; doubles, capped at 60 s
    timeout_s: float
    cache: bool = True        # prompt-caching breakpoints (SM_ANTHROPIC_CACHE=0 turns them off, for comparison)


def options_from_env(role: str) -> Options:
    env = os.environ
    return Options(
        role=role, model=env.get("SM_MODEL") or "claude-haiku-4-5",
        max_turns=int(env.get("SM_MAX_TURNS") or 30), stream_api=env.get("SM_ANTHROPIC_STREAM", "1") != "0",
        max_tokens=int(env.get("SM_ANTHROPIC_MAX_TOKENS") or MAX_TOKENS),
        retries=int(env.get("SM_ANTHROPIC_RETRIES") or 3),
        backoff_s=float(env.get("SM_ANTHROPIC_BACKOFF_S") or 2.0),
        timeout_s=float(env.get("SM_ANTHROPIC_TIMEOUT_S") or 600),
        cache=env.get("SM_ANTHROPIC_CACHE", "1") != "0")


def read_prompt() -> str:
    prompt_file = os.environ.get("SM_PROMPT_FILE")
    if prompt_file and Path(prompt_file).is_file():
        return Path(prompt_file).read_text(encoding="utf-8")
    return "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()


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
    from skills_ref import read_properties, to_prompt
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


def retry_after(err: Exception) -> float | None:
    response = getattr(err, "response", None)
    if response is None:
        return None
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return float(response.headers.get(header)) / scale
        except (TypeError, ValueError):
            continue
    return None


class Agent:
    def __init__(self, options: Options, toolbox: Toolbox, stream: StreamWriter,
                 client: anthropic.Anthropic, system: str) -> None:
        self.options, self.toolbox, self.stream, self.client, self.system = options, toolbox, stream, client, system

    def call(self, messages: list[dict]):
        """One model turn, with the SDK's retries inside and our own bounded backoff around them."""
        tools = self.toolbox.schemas()
        kwargs = dict(model=self.options.model, max_tokens=self.options.max_tokens, system=self.system,
                      messages=messages, tools=tools)
        if self.options.cache:
            kwargs.update(cached_request(model=self.options.model, system=self.system, tools=tools,
                                         messages=messages))
        wait = self.options.backoff_s
        for attempt in range(self.options.retries + 1):
            try:
                if self.options.stream_api:
                    with self.client.messages.stream(**kwargs) as events:
                        return events.get_final_message()
                return self.client.messages.create(**kwargs)
            except RETRYABLE as err:
                if attempt == self.options.retries:
                    raise
                pause = retry_after(err)
                pause = min(60.0, pause if pause is not None else wait * (0.75 + 0.5 * random.random()))
                print(f"anthropic_agent: {type(err).__name__} ({err}); retry {attempt + 1} of "
                      f"{self.options.retries} in {pause:.2f} s", file=sys.stderr, flush=True)
                time.sleep(pause)
                wait = min(wait * 2, 60.0)
        raise AssertionError("unreachable")

    def run_tools(self, blocks: list[dict], *, truncated: bool) -> list[dict]:
        results = []
        for block in blocks:
            if truncated:  # its input may be cut short: do not act on it
                text, is_error = ("this call was cut off by the output token limit and was not run; "
                                  "make it again with smaller input"), True
            else:
                try:
                    text, is_error = self.toolbox.run(block["name"], block.get("input")), False
                except ToolError as err:
                    text, is_error = str(err), True
                except Exception as err:  # a tool bug must cost one turn, not the whole cell
                    text, is_error = f"{block['name']} failed: {type(err).__name__}: {err}", True
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text,
                            **({"is_error": True} if is_error else {})})
        return results

    def loop(self, prompt: str) -> tuple[str, bool, str]:
        """(subtype, is_error, final text) — how the conversation ended."""
        messages: list[dict] = [{"role": "user", "content": prompt}]
        final_text = ""
        while True:
            if self.stream.totals.turns >= self.options.max_turns:
                return "error_max_turns", True, f"stopped after {self.options.max_turns} turns (--max-turns)"
            message = self.call(messages)
            content = [plain_block(block) for block in message.content]
            self.stream.assistant({"id": message.id, "model": message.model, "content": content,
                                   "stop_reason": message.stop_reason}, usage_dict(message.usage))
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            final_text = "\n".join(t for t in texts if t) or final_text
            tool_calls = [b for b in content if b.get("type") == "tool_use"]
            reason = message.stop_reason
            messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "…"}]})
            if reason == "tool_use" or (tool_calls and reason != "max_tokens"):
                results = self.run_tools(tool_calls, truncated=False)
                self.stream.tool_results(results)
                messages.append({"role": "user", "content": results})
            elif reason == "max_tokens":
                results = self.run_tools(tool_calls, truncated=True)
                nudge = {"type": "text", "text": "Your reply was cut off at the output token limit. Continue "
                                                 "where you stopped, in smaller steps."}
                if results:
                    self.stream.tool_results(results)
                messages.append({"role": "user", "content": [*results, nudge]})
            elif reason == "pause_turn":
                continue  # a long server-side turn: send it back as is and the model resumes
            elif reason == "refusal":
                return "error_during_execution", True, "the model refused: " + (final_text or "(no text)")
            else:  # end_turn, stop_sequence, or a reason newer than this code: the model is done
                return "success", False, final_text


BLOCK_FIELDS = {"text": ("type", "text"), "tool_use": ("type", "id", "name", "input"),
                "thinking": ("type", "thinking", "signature"), "redacted_thinking": ("type", "data")}


def plain_block(block) -> dict:
    """A response block as the JSON to send back next turn (SDK-only extras such as parsed_output dropped)."""
    raw = block.model_dump(exclude_none=True)
    fields = BLOCK_FIELDS.get(raw.get("type"))
    return {key: raw[key] for key in fields if key in raw} if fields else raw


def price_usd(config: Path | None, model: str, usage: dict[str, int]) -> float:
    """The USD figure shown in the result event; the harness computes its own from usage."""
    if config is None:
        return 0.0
    try:
        import json

        from eval.cost import Usage, parse_pricing, price_for, usd
        table = parse_pricing(json.loads(config.read_text(encoding="utf-8")).get("pricing", {}))
        return usd(price_for(table, model), Usage(**usage))
    except Exception:
        return 0.0


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(prog="anthropic_agent")
    args.add_argument("--role", choices=("build", "mutator"), default="build")
    args.add_argument("--config", type=Path, help="config.json whose pricing gives the result's total_cost_usd")
    parsed = args.parse_args(argv)
    take_secrets()
    undumpable()   # this process holds the key: its tools may not read /proc/PID/environ
    options = options_from_env(parsed.role)
    cwd = Path.cwd().resolve()
    stream_path = os.environ.get("SM_STREAM")
    stream = StreamWriter(Path(stream_path) if stream_path else None)
    toolbox = mutator_toolbox(cwd) if options.role == "mutator" else build_toolbox(cwd)
    system, skills = system_prompt(options.role, cwd)
    stream.init(model=options.model, cwd=str(cwd), tools=toolbox.names, skills=skills)
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    api_key = os.environ.get("ANTHROPIC_API_KEY") or ("local-server" if base_url else None)
    code = 0
    sent = [0]   # HTTP requests to the API, the SDK's own retries included

    def count(_request) -> None:
        sent[0] += 1
    try:
        client = anthropic.Anthropic(api_key=api_key, timeout=options.timeout_s,
                                     http_client=anthropic.DefaultHttpxClient(event_hooks={"request": [count]}))
        subtype, is_error, text = Agent(options, toolbox, stream, client, system).loop(read_prompt())
        if options.role == "mutator":
            settle_mutator_result(cwd, text)
    except anthropic.APIError as err:
        status = getattr(err, "status_code", None)
        subtype, is_error, text = "error_during_execution", True, \
            f"API error{f' {status}' if status else ''}: {type(err).__name__}: {err}"
        print(f"anthropic_agent: {text}", file=sys.stderr)
        code = 1
    except Exception as err:  # no API key, an unparseable response, a bug: still end with a result
        subtype, is_error, text = "error_during_execution", True, f"{type(err).__name__}: {err}"
        print(f"anthropic_agent: {text}", file=sys.stderr)
        code = 1
    calls = stream.totals.turns + (1 if code else 0)   # answered calls, plus the one that failed for good
    stream.result(subtype=subtype, is_error=is_error, text=text,
                  cost_usd=price_usd(parsed.config, options.model, stream.totals.usage),
                  retries=max(0, sent[0] - calls))
    stream.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
