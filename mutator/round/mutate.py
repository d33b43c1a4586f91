"""One mutator call: stage a workspace, run the mutator agent, collect {summary, reasoning}.

The workspace holds `skill/` (the only thing the mutator should edit), `briefing.md` and read-only
references; the mutator never sees the database, val task details or the test suite.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.agents.meter import read_meter
from eval.cost import Price, Usage, charged, usd
from eval.environment import allowed_env
from eval.process import run_agent_process
from eval.redact import redact, redact_tree
from eval.snapshot import copy_tree
from eval.stream_metrics import read_stream
from mutator.round import tamper
from sandbox import Launcher

PROMPT = """You are improving an agent skill. Read briefing.md in your working directory: it gives the
objective, how candidates are scored and gated, and the recent attempts. Make ONE focused change to
the skill in ./skill/ (edit only files under ./skill/). When done, write ./result.json as
{"summary": "<one line: what you changed>", "reasoning": "<why it should raise the composite score>"}.
"""


@dataclass(frozen=True)
class Mutation:
    ok: bool
    summary: str
    reasoning: str
    error: str
    cost_usd: float                 # what the call is charged (eval.cost.charged)
    skill_dir: Path
    usage: Usage = Usage()
    retries: int = 0
    priced_usd: float = 0.0         # from config.json pricing
    reported_usd: float = 0.0       # the mutator's own total_cost_usd, when its stream gave one

    def columns(self) -> dict:
        """The attempt columns that record what this call used."""
        return {"mutator_cost_usd": self.cost_usd, "mutator_input_tokens": self.usage.input_tokens,
                "mutator_output_tokens": self.usage.output_tokens,
                "mutator_cache_write_tokens": self.usage.cache_creation_input_tokens,
                "mutator_cache_read_tokens": self.usage.cache_read_input_tokens, "mutator_retries": self.retries,
                "mutator_priced_cost_usd": self.priced_usd, "mutator_reported_cost_usd": self.reported_usd}


def stage_workspace(workspace: Path, parent_dir: Path, briefing: str, refs: Mapping[str, Path]) -> Path:
    if workspace.exists():
        shutil.rmtree(workspace)  # a crashed attempt's workspace is redone from scratch
    workspace.mkdir(parents=True)
    copy_tree(parent_dir, workspace / "skill")
    for name, ref_dir in refs.items():
        copy_tree(ref_dir, workspace / "refs" / name)
    (workspace / "briefing.md").write_text(briefing, encoding="utf-8")
    (workspace / "prompt.md").write_text(PROMPT, encoding="utf-8")
    return workspace / "skill"


def read_result(path: Path) -> tuple[str, str]:
    """(summary, reasoning) from result.json, or ValueError saying what is wrong with it."""
    if not path.is_file() or path.stat().st_size == 0:  # staged empty so a sandbox can bind it writable
        raise ValueError("the mutator wrote no result.json")
    raw = path.read_text(encoding="utf-8", errors="replace")
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"result.json is not JSON ({err}); it reads: {raw[:500]!r}") from None
    if not isinstance(obj, dict):
        raise ValueError("result.json must be an object with 'summary' and 'reasoning'")
    summary, reasoning = obj.get("summary"), obj.get("reasoning")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("result.json needs a non-empty string 'summary'")
    if not isinstance(reasoning, str):
        raise ValueError("result.json needs a string 'reasoning'")
    return summary.strip()[:2000], reasoning.strip()[:20000]


def mutate(*, workspace: Path, parent_dir: Path, briefing: str, refs: Mapping[str, Path], argv: Sequence[str],
           launcher: Launcher, model: str, max_turns: int, price: Price, silence_ms: int, heartbeat_ms: int,
           extra_env: Mapping[str, str], stage: Callable[[Path], None] | None = None,
           network: bool = False, watch: Mapping[str, Path] | None = None, agent: str = "",
           meter: Path | None = None) -> Mutation:
    skill_dir = stage_workspace(workspace, parent_dir, briefing, refs)
    if stage is not None:
        stage(workspace)  # read-only evidence, history, tasks beside skill/
    stream, result_path = workspace / "stream.jsonl", workspace / "result.json"
    for path in (stream, result_path):  # the only files outside skill/ it may write: bound writable by bwrap
        path.touch()
    before = tamper.snapshot(workspace, parent_dir, watch)  # what it must leave as it was (mutator/round/tamper.py)
    env = allowed_env(home=workspace, argv=argv, extra={
        **extra_env, "SM_PROMPT_FILE": str(workspace / "prompt.md"), "SM_STREAM": str(stream),
        "SM_SKILL_DIR": str(skill_dir), "SM_MODEL": model, "SM_MAX_TURNS": str(max_turns)})
    run = asyncio.run(run_agent_process(
        argv, cwd=workspace, env=env, prompt=PROMPT, stream=stream, log_dir=workspace, launcher=launcher,
        writable=[skill_dir, result_path, stream], readable=[workspace], silence_ms=silence_ms, heartbeat_ms=heartbeat_ms,
        network=network, meter=meter))
    outside = tamper.changed(before, tamper.snapshot(workspace, parent_dir, watch))
    redact_tree(workspace)  # secrets never stored nor staged: its stream, stderr, result.json and skill/
    metrics = read_stream(stream)
    served = read_meter(meter) if meter is not None else None   # the metering proxy's figures, when it ran
    usage = Usage(**served.total()) if served is not None else metrics.usage
    priced = usd(price, usage)
    reported = metrics.reported_cost_usd if not metrics.invalid else 0.0
    cost = priced if served is not None else charged(priced, reported, agent=agent)
    used = {"usage": usage, "retries": metrics.retries, "priced_usd": priced, "reported_usd": reported}
    if outside:
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        return Mutation(False, "", "", f"mutator wrote outside its skill: {shown}", cost, skill_dir, **used)
    # The mutator's contract is the workspace and result.json: a stream (and its result event) is optional,
    # so only a timeout or a non-zero exit fails it here; read_result judges what it wrote.
    failure = redact(run.failure(has_result=True))
    if failure:
        return Mutation(False, "", "", f"mutator {failure}", cost, skill_dir, **used)
    try:
        summary, reasoning = read_result(result_path)
    except ValueError as err:
        return Mutation(False, "", "", f"mutator returned garbage: {err}", cost, skill_dir, **used)
    return Mutation(True, summary, reasoning, "", cost, skill_dir, **used)
