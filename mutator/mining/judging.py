"""The optional judge pass (--judge): keep only the mined tasks the judge can grade.

A task is gradable when the judge, shown the answer the user actually saw, agrees with the user: the
accepted answer meets its own expectations (at least half of them), and the corrected answer misses the
correction. A reply that does not parse, or a judge that contradicts the user, drops the task. The fake
judge (dry runs) or the real one (--real) through eval/graders' backends; never sees a skill.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from eval.cost import Price, usd
from eval.graders.judge import Attempt, JudgeError, parse_reply
from eval.graders.judge_backends import make_backend
from mutator.mining.tasks import MinedTask

CONCURRENCY = 4


@dataclass(frozen=True)
class JudgePass:
    backend: str         # fake | anthropic
    model: str
    calls: int
    dropped: tuple[str, ...]   # task ids
    cost_usd: float = 0.0      # priced from config.json; a dry run's fake judge is priced as if real, like cells


def gradable(task: MinedTask, reply_text: str) -> bool:
    try:
        verdict = parse_reply(reply_text)
    except JudgeError:
        return False
    passed = [bool(e.get("passed")) for e in verdict.expectations]
    if not passed:
        return False
    if task.result == "corrected":
        return not passed[0]
    return sum(passed) * 2 >= len(passed)


async def _judge_all(tasks: list[MinedTask], backend_name: str, model: str,
                     price: Price | None) -> list[tuple[bool, float]]:
    backend = make_backend(backend_name)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(task: MinedTask) -> tuple[bool, float]:
        attempt = Attempt(task.prompt, task.expectations, (), task.answer, ())
        async with gate:
            try:
                reply = await backend.call(model, attempt)
            except Exception:  # an API error outlasting the SDK's retries: the task is not known to be gradable
                return False, 0.0
        return gradable(task, reply.text), usd(price, reply.usage) if price else 0.0

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def judge_pass(tasks: list[MinedTask], *, backend: str, model: str,
               price: Price | None = None) -> tuple[list[MinedTask], JudgePass]:
    results = asyncio.run(_judge_all(tasks, backend, model, price)) if tasks else []
    kept = [t for t, (ok, _) in zip(tasks, results) if ok]
    dropped = tuple(t.id for t, (ok, _) in zip(tasks, results) if not ok)
    return kept, JudgePass(backend, model, len(tasks), dropped, round(sum(c for _, c in results), 6))
