"""The concurrency pump: run at most N cells at once and report each one as it finishes; and a deadline over
it, the event loop's own timeout (never a signal, which a process started with
SIGINT ignored would not get)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


async def pump(items: Sequence[T], work: Callable[[T], Awaitable[R]], *, concurrency: int,
               on_done: Callable[[R], None], may_start: Callable[[], bool] | None = None) -> list[R]:
    """Run `work` over items with bounded concurrency; `on_done` sees results in completion order.
    `may_start` is asked just before each item starts (a budget); an item it refuses is not run. Cancelled,
    it returns only once every item it started has finished its cancellation (the cleanup included)."""
    gate = asyncio.Semaphore(max(1, concurrency))
    results: list[R] = []

    async def one(item: T) -> None:
        async with gate:
            if may_start is not None and not may_start():
                return
            result = await work(item)
        results.append(result)
        on_done(result)

    tasks = [asyncio.create_task(one(item)) for item in items]
    try:
        await asyncio.gather(*tasks)
    finally:
        # gather gives up at the first item cancelled or failed (a queued cell, when Ctrl-C or a deadline
        # cancels the pump): cancel only the items not already cancelling, once, and wait for every one to
        # finish its own cleanup (a cell kills and reaps its agent's group there)
        # before the caller's loop may close
        for task in tasks:
            if not task.cancelling():
                task.cancel()
        if tasks:
            await asyncio.wait(tasks)
    return results


class DeadlineReached(RuntimeError):
    """The deadline passed: the work was cancelled (each running cell killed and reaped its agent's group, as
    on Ctrl-C) and every cell that finished before it was reported."""


async def until(deadline: float | None, work: Awaitable[R]) -> R:
    """Await `work`, cancelling it at `deadline` (a time.monotonic() instant, the default loop's clock; None =
    never) and raising DeadlineReached."""
    timeout = asyncio.timeout_at(deadline)
    try:
        async with timeout:
            return await work
    except TimeoutError:
        if not timeout.expired():
            raise   # the work's own TimeoutError, not the deadline's
        raise DeadlineReached("the deadline passed; the running cells were cancelled") from None
