"""The optional judge pass (--judge): keep only the mined tasks the judge can grade.

A task is gradable when the judge, shown the answer the user actually saw, agrees with the user: the
accepted answer meets its own expectations (at least half of them), and the corrected answer misses the
correction. A reply that does not parse, or a judge that contradicts the user, drops the task. The fake
judge (dry runs) or the real one (--real) through eval/graders' backends; never sees a skill.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

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


async def _judge_all(tasks: list[MinedTask], backend_name: str, model: str) -> list[bool]:
    backend = make_backend(backend_name)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(task: MinedTask) -> bool:
        attempt = Attempt(task.prompt, task.expectations, (), task.answer, ())
        async with gate:
            try:
                reply = await backend.call(model, attempt)
            except Exception:  # an API error outlasting the SDK's retries: the task is not known to be gradable
                return False
        return gradable(task, reply.text)

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def judge_pass(tasks: list[MinedTask], *, backend: str, model: str) -> tuple[list[MinedTask], JudgePass]:
    verdicts = asyncio.run(_judge_all(tasks, backend, model)) if tasks else []
    kept = [t for t, ok in zip(tasks, verdicts) if ok]
    dropped = tuple(t.id for t, ok in zip(tasks, verdicts) if not ok)
    return kept, JudgePass(backend, model, len(tasks), dropped)
