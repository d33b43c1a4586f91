"""What a run is given: its suites in their roles, its agents, and the run id made of its identity."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from eval.errors import SkillMutatorError
from eval.suite import Suite
from mutator.store.db import dumps


class LoopError(SkillMutatorError, RuntimeError):
    """The loop refuses to start (e.g. --suite equals --val); the message says the fix."""


@dataclass(frozen=True)
class Suites:
    train: Suite
    val: Suite
    holdout: Suite | None = None


@dataclass(frozen=True)
class Agents:
    build_argv: tuple[str, ...]
    build_id: str            # part of the evaluation contract
    mutator_argv: tuple[str, ...]
    mutator_id: str
    network: bool = False    # real backends call the model API: a sandbox must share the network
    solve_argv: tuple[str, ...] | None = None  # the mutator model solving a task bare; None: its backend cannot
    solve_id: str = ""
    mutator_how: str = "the fake mutator"      # how the mutator backend was chosen, for messages
    launch: dict = dataclasses.field(default_factory=dict)  # the agent flags, so --test-run RUN can repeat them


def check_roles(suites: Suites) -> None:
    if suites.train.path == suites.val.path or suites.train.name == suites.val.name:
        raise LoopError(f"--suite and --val are both {suites.train.name!r}; validation must be a different "
                        f"suite from train (the gate would otherwise score on the mutator's evidence)")
    if suites.holdout and suites.holdout.name in (suites.train.name, suites.val.name):
        raise LoopError(f"--holdout {suites.holdout.name!r} is also used as train or val; "
                        f"a test suite must be held out from both")


def run_id_for(identity: dict) -> str:
    return "run-" + hashlib.sha256(dumps(identity).encode()).hexdigest()[:12]


def cheaper_identity(design, screen, tie_rule: str = "keep", evidence: int = 0) -> dict:
    """The identity's part for sequential val, the screen, the tie rule and the train evidence's depth (`evidence`
    replicates when fewer than the run's, else 0): each part is absent at its old setting (one look, no screen,
    every tie kept, evidence at every replicate), so a run made before it existed keeps its id."""
    return {**({"sequential": design.to_json()} if design.sequential else {}),
            **({"screen": dataclasses.asdict(screen)} if screen.tasks else {}),
            **({"tie_rule": tie_rule} if tie_rule != "keep" else {}),
            **({"evidence_replicates": evidence} if evidence else {})}


def run_identity(s, suites: Suites, agents: Agents, contract, seed_hash: str, *, cheaper: dict) -> dict:
    """What makes a run this run: its id hashes it (settings `s`, never an executor or a path)."""
    return {"seed": seed_hash, "suite": [suites.train.name, suites.train.content_hash],
            "val": [suites.val.name, suites.val.content_hash], "strategy": s.strategy,
            "strategy_opts": s.strategy_opts, "model": s.model, "mutator_model": s.mutator_model,
            "mutator": agents.mutator_id, "contract": contract.to_json(), "w_cost": s.w_cost,
            "w_steps": s.w_steps, "min_improvement": s.min_improvement, "gate_z": s.gate_z,
            **({"gate_method": s.gate_method} if s.gate_method != "t" else {}), "rng_seed": s.seed,
            **({"confirm": True} if s.confirm else {}), **cheaper}
