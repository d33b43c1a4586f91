"""The meta skill: every N rounds, one mutator-model call distils the whole attempt log into
cross-round lessons, stored on the run and shown in later briefings.

The call sees what a mutation sees (ledger, diffs, train evidence) and edits nothing; it is a mutator-role
call through eval/agent_call.py, charged by the same rule as a mutation.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from pathlib import Path

from eval.agent_call import call, read_result_json, stage_workspace
from eval.redact import redact, redact_tree
from mutator.round.mutate import MutatorAgent, Stage
from mutator.store.evidence import untouched
from sandbox import binds_folders

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


def distil(*, workspace: Path, skill_dir: Path, stage: Stage, agent: MutatorAgent,
           round_no: int, meter: Path | None = None) -> Lessons:
    stage_workspace(workspace, skill_dir, "# Meta skill\n\n" + PROMPT, {})
    shown = stage(workspace, binds_folders(agent.launcher))
    spec = agent.call(workspace, PROMPT, writable=(), round_no=round_no, sibling=0, task="meta",
                      meter=meter, shown=shown)
    done = asyncio.run(call(spec))
    redact_tree(workspace, skip=untouched)  # secrets never stored: its stream, stderr and result.json
    cost = done.cost.usd     # the mutator's rule (eval/agent_call.py::cost_of), as for a mutation
    used = {**asdict(done.metrics.usage), "retries": done.metrics.retries}
    failure = redact(done.run.failure(has_result=True))  # a mutator-role call: result.json is its contract
    if failure:
        return Lessons(False, "", cost, f"meta skill call: {failure}", used)
    try:
        lessons = read_result_json(spec.result_path, who="the meta skill call",
                                   shape="an object with 'lessons'").get("lessons")
    except ValueError:
        lessons = None
    if not isinstance(lessons, str) or not lessons.strip():
        return Lessons(False, "", cost, "meta skill call: result.json needs a non-empty string 'lessons'",
                       used)
    return Lessons(True, lessons.strip()[:8000], cost, "", used)
