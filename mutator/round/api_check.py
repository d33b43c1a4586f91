"""The API check before a real run's first cell: one one-token request per distinct (endpoint, key, model)
the run will call (its build agent, its mutator and the solve phase, its suites' judges), so a dead endpoint,
a refused key, an overloaded API or an unknown model stops the run in seconds, before any cell, nothing lost.

What the check is served is charged to the run (the ledger's kind "API check") and asked of its budget first.
A failure is an ApiDown stop (exit 8: fix the cause, re-run the same command) or, for a model the API does not
know, a ConfigError (exit 2: the command must name another model). Agents of your own (--agent-cmd,
--mutator-cmd) are not checked: where they send their requests is theirs to say (the circuit breaker,
eval/breaker.py, still stops a run whose cells fail on the infrastructure one after another).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import sqlite_utils

from eval.api_probe import Answer, Endpoint, probe
from eval.breaker import api_cause
from eval.cost import Price, PricingError, Usage, price_for, usd
from eval.suite import Suite
from mutator.config import ConfigError
from mutator.round.budget import BudgetStop
from mutator.round.stops import ApiDown
from mutator.store import charges

API_BACKENDS = ("anthropic", "claude-cli")   # our backends: they call the Messages API at ANTHROPIC_BASE_URL
KIND = "API check"
# what one check is assumed to cost before it is asked (a short prompt, one token back)
ASSUMED = Usage(input_tokens=20, output_tokens=1)


@dataclass(frozen=True)
class Target:
    """One distinct (endpoint, key, model) and who in the run calls it."""
    endpoint: Endpoint
    model: str
    users: tuple[str, ...]


def targets(*, launch: Mapping, build_models: Iterable[str], mutator_model: str | None,
            suites: Iterable[Suite], environ: Mapping[str, str] | None = None) -> list[Target]:
    """Every (endpoint, key, model) the run's own backends and judges will call, each once, with its users.
    `launch` is the agents' launch record (mutator/cli/agents.py); `mutator_model` None when no mutator runs
    (--test-run)."""
    environ = os.environ if environ is None else environ
    endpoint = Endpoint.from_env(environ)
    found: dict[tuple[str, str, str], list[str]] = {}

    def add(model: str, who: str) -> None:
        found.setdefault((endpoint.url, endpoint.key_id, model), []).append(who)
    models = [m for m in build_models if m]
    if launch.get("agent") in API_BACKENDS:
        for model in models:
            add(model, f"the build agent (--agent {launch['agent']}, --model)")
    if mutator_model and launch.get("mutator_agent") in API_BACKENDS:
        add(mutator_model, f"the mutator (--mutator-agent {launch['mutator_agent']}, --mutator-model)")
    for suite in suites:
        if suite.runner != "judge" or (environ.get("SM_JUDGE") or "anthropic") != "anthropic":
            continue
        named = suite.option("judge_model") or environ.get("SM_JUDGE_MODEL")
        for model in ([str(named)] if named else models):
            add(model, f"the judge of suite {suite.name}")
    return [Target(endpoint, model, tuple(dict.fromkeys(who))) for (_, _, model), who in found.items()]


def failure(target: Target, answer: Answer) -> Exception:
    """The stop (or, for an unknown model, the input error) a failed check raises, in the user's words."""
    where = target.endpoint.url
    users = " and ".join(target.users)
    if answer.kind == "model":
        return ConfigError(f"the model API at {where} does not know model {target.model!r}, used by {users}: "
                           f"{answer.said}. Name a model it serves (--model / --mutator-model, or a suite's "
                           f"judge_model). Nothing ran and nothing was spent")
    cause, fix = api_cause(f"{answer.kind} {answer.status or ''} {answer.said}")
    if answer.kind == "unreachable":
        cause = "the model API cannot be reached (connection refused or no route)"
    return ApiDown(f"API check before the first cell: {cause}, at {where} for model {target.model!r}, used "
                   f"by {users}; {answer.requests} request(s) in {answer.seconds:.1f} s, the last said: "
                   f"{answer.said or '(nothing)'}. Nothing ran and nothing was lost. Fix: {fix}; then re-run "
                   f"the same command")


def check(found: list[Target], *, db: sqlite_utils.Database, run_id: str, pricing: Mapping[str, Price],
          budget=None, say: Callable[[str], None] = print,
          ask: Callable[[Endpoint, str], Answer] = probe) -> float:
    """Ask every target once, in order, and stop at the first that fails; returns the USD charged to the run.
    Each answer is charged as it comes (a later failure keeps what the earlier checks were served)."""
    if not found:
        return 0.0
    charged, started = 0.0, time.monotonic()
    for target in found:
        try:
            price = price_for(pricing, target.model)
        except PricingError:
            price = Price(0.0, 0.0, 0.0, 0.0)   # an unpriced judge model: its cells say so in their words
        if budget is not None:
            left = budget.remaining(db, run_id)
            assumed = usd(price, ASSUMED)
            if left < assumed:
                raise BudgetStop(f"budget reached: the API check before the first cell would commit about "
                                 f"${assumed:.6f} and ${max(left, 0.0):.6f} is left; re-run the same "
                                 f"command with a higher cap to resume it")
        answer = ask(target.endpoint, target.model)
        cost = usd(price, answer.usage)
        if cost:
            charges.charge_run(db, run_id, cost, kind=KIND, ref=f"api-check:{uuid.uuid4().hex}")
            charged += cost
        if not answer.ok:
            raise failure(target, answer)
    models = ", ".join(t.model for t in found)
    say(f"API check: {found[0].endpoint.url} answered for {models} in {time.monotonic() - started:.1f} s "
        f"(${charged:.6f}, charged to the run)")
    return charged
