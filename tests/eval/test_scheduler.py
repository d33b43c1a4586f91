"""The concurrency pump: a cancelled pump (Ctrl-C, a deadline) returns only after every item it started has
finished its own cleanup, so a cell always kills and reaps its agent before the event loop closes; and `until`,
the deadline as the event loop's own timeout."""

from __future__ import annotations

import asyncio

import pytest

from eval.scheduler import DeadlineReached, pump, until


@pytest.mark.parametrize("failure", ["cancelled", "an item raised"])
def test_a_stopped_pump_waits_for_every_running_item_to_clean_up(failure: str) -> None:
    started: list[int] = []
    cleaned: list[int] = []
    three_running = asyncio.Event()

    async def work(item: int) -> int:
        started.append(item)
        if len(started) == 3:
            three_running.set()
        if failure == "an item raised" and item == 0:
            await asyncio.sleep(0)
            raise OSError("disk full")
        try:
            await asyncio.Event().wait()   # a hung agent
        finally:
            await asyncio.sleep(0.01)      # the cleanup awaits too (kill the group, wait for its exit)
            await asyncio.sleep(0.01)
            cleaned.append(item)
        return item

    async def main() -> None:
        # 6 items, 3 at a time: the 3 queued ones are cancelled at once, before the running ones have cleaned up
        run = asyncio.create_task(pump(range(6), work, concurrency=3, on_done=lambda result: None))
        await three_running.wait()
        if failure == "cancelled":
            run.cancel()
        with pytest.raises(asyncio.CancelledError if failure == "cancelled" else OSError):
            await run
        assert sorted(cleaned) == sorted(set(started) - ({0} if failure == "an item raised" else set()))

    asyncio.run(main())
    assert cleaned, "no item was running when the pump stopped"


def test_until_is_the_loops_own_timeout_and_says_it_was_the_deadline() -> None:
    async def hung() -> None:
        await asyncio.Event().wait()

    async def own_timeout() -> None:
        raise TimeoutError("the work's own")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert await until(None, asyncio.sleep(0, result="done")) == "done"
        assert await until(loop.time() + 600, asyncio.sleep(0, result="done")) == "done"
        with pytest.raises(DeadlineReached):
            await until(loop.time(), hung())
        with pytest.raises(TimeoutError, match="the work's own"):
            await until(loop.time() + 600, own_timeout())

    asyncio.run(main())
