"""Progress lines on stderr while cells run: a live counter on a terminal, sparse lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, *, interval_s: float = 2.0) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.interval_s = interval_s
        self._last = 0.0
        self._label = ""

    def say(self, text: str) -> None:
        self._clear()
        print(text, file=self.stream, flush=True)

    def start(self, label: str, total: int, done: int) -> None:
        self._label = label
        self._last = 0.0
        if done:
            self.say(f"  {label}: {done}/{total} cells already done, running {total - done}")
        self.update(done, total, errors=0, force=True)

    def update(self, done: int, total: int, *, errors: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and done < total and now - self._last < (0.1 if self.live else self.interval_s):
            return
        self._last = now
        bar = "#" * int(20 * done / max(total, 1))
        text = f"  {self._label} [{bar:<20}] {done}/{total} cells" + (f", {errors} failed" if errors else "")
        if self.live:
            print("\r" + text, end="", file=self.stream, flush=True)
        elif done == total or force is False:
            print(text, file=self.stream, flush=True)

    def finish(self) -> None:
        self._clear()

    def _clear(self) -> None:
        if self.live and self._label:
            print("\r\033[K", end="", file=self.stream, flush=True)
