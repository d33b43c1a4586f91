"""The meta skill: every N rounds, one mutator-model call distils the whole attempt log into
cross-round lessons, stored on the run and shown in later briefings.

The call sees what a mutation sees (ledger, diffs, train evidence) and edits nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from eval.agents.meter import read_meter
from eval.cost import Price, Usage, usd
from eval.environment import allowed_env
from eval.process import run_agent_process
from eval.redact import redact, redact_tree
from eval.stream_metrics import read_stream
from mutator.round.mutate import stage_workspace
from sandbox import Launcher

PROMPT = """Read history/ledger.md and history/*.diff: every attempt this run has made on the skill, with its
verdict and how the score moved, and the train rollouts under evidence/. Do not edit anything. Distil
cross-round lessons for the next mutations: what kinds of change helped, what hurt, what must not be
re-tried, what is still failing. Write ./result.json as {"lessons": "<a short markdown bullet list>"}.
"""


@dataclass(frozen=True)
class Lessons:
    ok: bool
    text: str
    cost_usd: float
    error: str
    usage: dict = field(default_factory=dict)   # tokens (input, output, cache write, cache read) and retries


def distil(*, workspace: Path, skill_dir: Path, stage: Callable[[Path], None], argv: Sequence[str],
           launcher: Launcher, model: str, max_turns: int, price: Price, silence_ms: int, heartbeat_ms: int,
           extra_env: Mapping[str, str], network: bool = False, meter: Path | None = None) -> Lessons:
    stage_workspace(workspace, skill_dir, "# Meta skill\n\n" + PROMPT, {})
    (workspace / "prompt.md").write_text(PROMPT, encoding="utf-8")
    stage(workspace)
    stream, result = workspace / "stream.jsonl", workspace / "result.json"
    for path in (stream, result):
        path.touch()
    env = allowed_env(home=workspace, argv=argv, extra={
        **extra_env, "SM_TASK": "meta", "SM_PROMPT_FILE": str(workspace / "prompt.md"), "SM_STREAM": str(stream),
        "SM_SKILL_DIR": str(workspace / "skill"), "SM_MODEL": model, "SM_MAX_TURNS": str(max_turns)})
    run = asyncio.run(run_agent_process(
        argv, cwd=workspace, env=env, prompt=PROMPT, stream=stream, log_dir=workspace, launcher=launcher,
        writable=[result, stream], readable=[workspace], silence_ms=silence_ms, heartbeat_ms=heartbeat_ms,
        network=network, meter=meter))
    redact_tree(workspace)  # secrets never stored: its stream, stderr and result.json
    metrics = read_stream(stream)
    served = read_meter(meter) if meter is not None else None   # what the metering proxy saw served, when the call used the API
    usage = Usage(**served.total()) if served is not None else metrics.usage
    cost = usd(price, usage)
    used = {**asdict(usage), "retries": metrics.retries}
    failure = redact(run.failure(has_result=True))  # a mutator-role call: result.json is its contract, the stream optional
    if failure:
        return Lessons(False, "", cost, f"meta skill call: {failure}", used)
    try:
        lessons = json.loads(result.read_text(encoding="utf-8")).get("lessons")
    except (json.JSONDecodeError, AttributeError):
        lessons = None
    if not isinstance(lessons, str) or not lessons.strip():
        return Lessons(False, "", cost, "meta skill call: result.json needs a non-empty string 'lessons'", used)
    return Lessons(True, lessons.strip()[:8000], cost, "", used)
