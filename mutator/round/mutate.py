"""One mutator call: stage a workspace, run the mutator agent through eval/agent_call.py, collect
{summary, reasoning}.

The workspace holds `skill/` (the only thing the mutator should edit), `briefing.md` and read-only
references; the mutator never sees the database, val task details or the test suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.agent_call import AgentCall, call, prepare, read_result_json, stage_workspace
from eval.cost import Price, Usage
from eval.redact import redact, redact_tree
from mutator.round import tamper
from mutator.store.evidence import untouched
from sandbox import Launcher, binds_folders

PROMPT = """You are improving an agent skill. Read briefing.md in your working directory: it gives the
objective, how candidates are scored and gated, and the recent attempts. Make ONE focused change to
the skill in ./skill/ (edit only files under ./skill/). When done, write ./result.json as
{"summary": "<one line: what you changed>", "reasoning": "<why it should raise the composite score>"}.
"""


# Stages a workspace's read-only evidence (mutator/briefing/evidence.py): (workspace, the sandbox binds
# folders) -> {folder of the workspace: the host folder to bind there read-only}
Stage = Callable[[Path, bool], Mapping[Path, Path]]


@dataclass(frozen=True)
class Mutation:
    ok: bool
    summary: str
    reasoning: str
    error: str
    cost_usd: float                 # what the call is charged (eval/agent_call.py::cost_of)
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
                "mutator_cache_read_tokens": self.usage.cache_read_input_tokens,
                "mutator_retries": self.retries, "mutator_priced_cost_usd": self.priced_usd,
                "mutator_reported_cost_usd": self.reported_usd}


def read_result(path: Path) -> tuple[str, str]:
    """(summary, reasoning) from result.json, or ValueError saying what is wrong with it."""
    obj = read_result_json(path, shape="an object with 'summary' and 'reasoning'")
    summary, reasoning = obj.get("summary"), obj.get("reasoning")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("result.json needs a non-empty string 'summary'")
    if not isinstance(reasoning, str):
        raise ValueError("result.json needs a string 'reasoning'")
    return summary.strip()[:2000], reasoning.strip()[:20000]


@dataclass(frozen=True)
class MutatorAgent:
    """How the mutator-role calls of a run are made (the mutation and the meta skill): one record, built
    once."""
    argv: Sequence[str]
    agent: str               # the mutator's implementation id (the pricing rule reads it)
    model: str
    max_turns: int
    price: Price
    launcher: Launcher
    silence_ms: int
    heartbeat_ms: int
    network: bool = False
    env: Mapping[str, str] = field(default_factory=dict)   # more variables (a test's hooks); never SM_*

    def call(self, workspace: Path, prompt: str, *, writable: Sequence[Path], round_no: int, sibling: int,
             task: str = "", meter: Path | None = None,
             shown: Mapping[Path, Path] | None = None) -> AgentCall:
        """A mutator-role call in `workspace` (its cwd and home), writing result.json; metered when given one;
        `shown`: folders of the workspace bound read-only from the run's shared history (a `stage`'s
        answer)."""
        return AgentCall(argv=self.argv, agent=self.agent, model=self.model, max_turns=self.max_turns,
                         price=self.price, prompt=prompt, cwd=workspace, home=workspace,
                         launcher=self.launcher, silence_ms=self.silence_ms, heartbeat_ms=self.heartbeat_ms,
                         skill_dir=workspace / "skill", writable=writable, readable=(workspace,),
                         shown=dict(shown or {}), network=self.network, result_json=True, round_no=round_no,
                         sibling=sibling, task=task, env=self.env, meter=meter)


def mutate(*, workspace: Path, parent_dir: Path, briefing: str, refs: Mapping[str, Path], agent: MutatorAgent,
           round_no: int, sibling: int, stage: Stage | None = None,
           watch: Mapping[str, Path] | None = None, meter: Path | None = None) -> Mutation:
    skill_dir = stage_workspace(workspace, parent_dir, briefing, refs)
    # read-only evidence, history, tasks beside skill/; the run's history bound in where the sandbox can
    # bwrap: it sees only its workspace, the rest mounted read-only
    sandboxed = binds_folders(agent.launcher)
    shown = stage(workspace, sandboxed) if stage is not None else {}
    spec = agent.call(workspace, PROMPT, writable=(skill_dir,), round_no=round_no, sibling=sibling,
                      meter=meter, shown=shown)
    # its prompt and empty outputs exist before the snapshot: they are the harness's, not its writes
    prepare(spec)
    # what it must leave as it was (mutator/round/tamper.py)
    before = tamper.snapshot(workspace, parent_dir, watch, around=not sandboxed)
    done = asyncio.run(call(spec))
    outside = tamper.changed(before, tamper.snapshot(workspace, parent_dir, watch, around=not sandboxed))
    # secrets never stored nor staged: its stream, stderr, result.json and skill/
    redacted = [path.relative_to(workspace).as_posix() for path in redact_tree(workspace, skip=untouched)
                if path.is_relative_to(skill_dir)]
    cost = done.cost.usd
    used = {"usage": done.metrics.usage, "retries": done.metrics.retries, "priced_usd": done.cost.priced_usd,
            "reported_usd": done.cost.reported_usd}
    if outside:
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        return Mutation(False, "", "", f"mutator wrote outside its skill: {shown}", cost, skill_dir, **used)
    if redacted:   # a skill must never carry a key: this candidate is not evaluated, kept nor proposed
        return Mutation(False, "", "", f"the mutator wrote a secret into {', '.join(redacted)} (redacted "
                                       f"there): a "
                        f"skill must never carry a key; the candidate is FAILED, not "
                        f"evaluated", cost, skill_dir, **used)
    # The mutator's contract is the workspace and result.json: a stream (and its result event) is optional,
    # so only a timeout or a non-zero exit fails it here; read_result judges what it wrote.
    failure = redact(done.run.failure(has_result=True))
    if failure:
        return Mutation(False, "", "", f"mutator {failure}", cost, skill_dir, **used)
    try:
        summary, reasoning = read_result(spec.result_path)
    except ValueError as err:
        return Mutation(False, "", "", f"mutator returned garbage: {err}", cost, skill_dir, **used)
    return Mutation(True, summary, reasoning, "", cost, skill_dir, **used)
