"""The optional judge pass (--judge): keep only the mined tasks the judge can grade.

A task is gradable when the judge, shown the answer the user actually saw, agrees with the user: the
accepted answer meets its own expectations (at least half of them), and the corrected answer misses the
correction. A reply that does not parse, or a judge that contradicts the user, drops the task. The fake
judge (dry runs) or the real one (--real) through eval/graders' backends, its calls metered by the loopback
proxy and capped by --budget-usd; never sees a skill.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from eval.agents.meter import read_meter
from eval.cost import Price, Usage, usd
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
    # priced from config.json; a dry run's fake judge is priced as if real, like cells
    cost_usd: float = 0.0
    unjudged: tuple[str, ...] = ()   # task ids never judged: --budget-usd would have been passed


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


async def _judge_all(tasks: list[MinedTask], backend_name: str, model: str, price: Price | None,
                     budget_usd: float | None, meters: Path) -> list[tuple[bool | None, float]]:
    backend = make_backend(backend_name)
    gate = asyncio.Semaphore(CONCURRENCY)
    spent = {"usd": 0.0, "done": 0, "in_flight": 0}
    pilot = asyncio.Lock()   # with a cap and nothing to estimate from yet, the first call runs alone

    def may_start() -> bool:
        if budget_usd is None:
            return True
        mean = spent["usd"] / spent["done"] if spent["done"] else 0.0
        return spent["usd"] < budget_usd and spent["usd"] + (spent["in_flight"] + 1) * mean <= budget_usd

    async def ask(task: MinedTask, index: int) -> tuple[bool | None, float]:
        if not may_start():
            return None, 0.0   # not judged: the budget would pass its cap
        attempt = Attempt(task.prompt, task.expectations, (), task.answer, ())
        meter = meters / f"{index}.meter.jsonl" if backend.id.startswith("anthropic") else None
        spent["in_flight"] += 1
        reply, failed = None, False
        try:
            reply = await backend.call(model, attempt, meter=meter)
        except Exception:  # an API error outlasting the SDK's retries: the task is not known to be gradable
            failed = True
        finally:   # what the proxy metered was served, a failed or garbled reply included
            served = read_meter(meter) if meter is not None else None
            usage = Usage(**served.total()) if served is not None else reply.usage if reply else Usage()
            cost = usd(price, usage) if price else 0.0
            spent.update(usd=spent["usd"] + cost, done=spent["done"] + 1, in_flight=spent["in_flight"] - 1)
        return (False if failed else gradable(task, reply.text)), cost

    async def one(task: MinedTask, index: int) -> tuple[bool | None, float]:
        async with gate:
            if budget_usd is not None and not spent["done"]:
                async with pilot:
                    if not spent["done"]:   # still nothing to estimate from: this call is the pilot
                        return await ask(task, index)
            return await ask(task, index)

    return list(await asyncio.gather(*(one(t, i) for i, t in enumerate(tasks))))


def judge_pass(tasks: list[MinedTask], *, backend: str, model: str, price: Price | None = None,
               budget_usd: float | None = None,
               meters: Path | None = None) -> tuple[list[MinedTask], JudgePass]:
    """The judge pass; a real judge's calls pass the metering proxy (their cost is what was served, failed
    calls included). With `budget_usd`, no call starts that would pass it: the tasks left are dropped, and
    said so. With `meters` (a folder in the data dir), the meters stay there for `charge_pass` to charge once,
    so a crash mid-pass loses none of what was served; without it they live in a temporary folder for the pass
    only."""
    with contextlib.ExitStack() as stack:
        if meters is None:
            meters = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sm-judge-meters-")))
        meters.mkdir(parents=True, exist_ok=True)
        results = asyncio.run(_judge_all(tasks, backend, model, price, budget_usd, meters)) if tasks else []
    kept = [t for t, (ok, _) in zip(tasks, results) if ok]
    dropped = tuple(t.id for t, (ok, _) in zip(tasks, results) if ok is False)
    unjudged = tuple(t.id for t, (ok, _) in zip(tasks, results) if ok is None)
    return kept, JudgePass(backend, model, len(tasks) - len(unjudged), dropped + unjudged,
                           round(sum(c for _, c in results), 6), unjudged)


def judge_meters(data_dir: Path) -> Path:
    """Where a judge pass's meters wait to be charged: in the data dir, so a crash mid-pass leaves them to the
    next mining command or watch tick."""
    return data_dir / "meters" / "mining-judge"


def charge_pass(db_path: Path, judge: dict | None, meters: Path | None, price_of, *,
                at: float | None = None) -> float:
    """Charge the store's ledger (no run pays it) for a judge pass: each meter left in `meters` by this pass
    or a crashed one once (keyed by its content, then removed), and an unmetered judge's (the fake's) own
    figure; returns what was charged."""
    from mutator.store.charges import charge_run, settle_call
    from mutator.store.db import connect
    found = sorted(meters.glob("*.meter.jsonl")) if meters is not None and meters.is_dir() else []
    judge = judge or {}
    metered = str(judge.get("backend", "")).startswith("anthropic")   # as _judge_all meters its calls
    unmetered = 0.0 if metered else judge.get("cost_usd") or 0.0
    if not found and not unmetered:
        return 0.0
    db, charged = connect(db_path), 0.0
    for meter in found:
        charged += settle_call(db, meter, price_of, payer=None, kind="mining judge", at=at)
    if unmetered:
        charge_run(db, None, unmetered, kind="mining judge", at=at)
        charged += unmetered
    return charged
