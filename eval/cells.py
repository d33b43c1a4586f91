"""The evaluation contract (what makes two evaluations interchangeable) and cell enumeration.

An evaluation is keyed by genome hash + suite content hash + everything in `Contract`: the same key
means the same cells may be reused, so nothing that changes a cell's outcome may be left out. Its agent
key puts the suite's agent hash in place of its content hash: evaluations sharing it differ only in the
grader, so one's agent work is re-graded for the other, never run again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from eval.suite import Suite

# Bump when the way cells are run or scored changes, so cached evaluations are not reused.
EVAL_PROTOCOL = 1


@dataclass(frozen=True)
class Contract:
    model: str
    replicates: int
    max_turns: int
    agent: str             # build-agent implementation id, e.g. "fake@1" or "anthropic@1"
    silence_ms: int        # watchdog: budget before the stream first grows
    heartbeat_ms: int      # watchdog: budget between stream growths
    protocol: int = EVAL_PROTOCOL
    salt: str = ""         # fresh replicate seeds (e.g. a confirmation re-evaluation) use a new salt
    with_skills: str = ""  # the other skills installed in every cell (eval/other_skills.py digest); "" = none

    def to_json(self) -> dict:
        """The contract as keyed and stored; a field added later enters only when set, so older keys stay."""
        fields = asdict(self)
        if not fields["with_skills"]:
            del fields["with_skills"]
        return fields


@dataclass(frozen=True)
class CellSpec:
    task_id: str
    replicate: int
    seed: int

    @property
    def name(self) -> str:
        return f"{self.task_id}__r{self.replicate}"


def evaluation_key(genome_hash: str, suite: Suite, contract: Contract) -> str:
    material = json.dumps({"genome": genome_hash, "suite": suite.name, "suite_hash": suite.content_hash,
                           **contract.to_json()}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def agent_key(genome_hash: str, suite: Suite, contract: Contract) -> str:
    """What an agent's work in a cell rests on: the evaluation key with the suite's agent hash in place of its
    whole-folder hash. Evaluations that share it share their agents' work; only the grades may differ."""
    material = json.dumps({"genome": genome_hash, "suite": suite.name, "agent_hash": suite.agent_hash,
                           **contract.to_json()}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def cell_seed(key: str, task_id: str, replicate: int) -> int:
    digest = hashlib.sha256(f"{key}:{task_id}:{replicate}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def enumerate_cells(suite: Suite, contract: Contract, key: str) -> list[CellSpec]:
    """Task-major order: every task's replicates together, tasks in suite order."""
    return [CellSpec(task.id, rep, cell_seed(key, task.id, rep))
            for task in suite.tasks for rep in range(contract.replicates)]
