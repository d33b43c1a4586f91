"""Progress on stderr while cells run: on a terminal, one `rich` bar per evaluation with its ETA and its
failures counted live; otherwise (a log, a pipe, a CI job) sparse plain lines.

Only draws: it never decides anything and never reads the store.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as Bars


class Progress:
    def __init__(self, stream: TextIO | None = None, *, interval_s: float = 2.0,
                 live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.interval_s = interval_s
        self._last = 0.0
        self._label = ""
        self._bars: Bars | None = None
        self._task = None
        self._banner = ""

    def announce(self, banner: str) -> None:
        """A line said once, before this command's first word of progress (e.g. "dry run (fake agents)"): a
        command refused for bad input prints only its error."""
        self._banner = banner

    def say_banner(self) -> None:
        """Say the announced line now, if it has not been said."""
        banner, self._banner = self._banner, ""
        if banner:
            self.say(banner)

    def say(self, text: str) -> None:
        self.say_banner()
        if self._bars is not None:
            self._bars.console.print(text, markup=False, highlight=False)   # above the live bar
        else:
            print(text, file=self.stream, flush=True)

    def start(self, label: str, total: int, done: int) -> None:
        self.say_banner()
        self._label = label
        self._last = 0.0
        if done:
            self.say(f"  {label}: {done}/{total} cells already done, running {total - done}")
        if self.live:
            self._open_bar(label, total, done)
        self.update(done, total, errors=0, force=True)

    def update(self, done: int, total: int, *, errors: int, force: bool = False) -> None:
        if self._bars is not None:
            self._bars.update(self._task, completed=done, total=total,
                              failed=f"[red]{errors} failed[/]" if errors else "")
            return
        now = time.monotonic()
        if not force and done < total and now - self._last < self.interval_s:
            return
        self._last = now
        bar = "#" * int(20 * done / max(total, 1))
        text = f"  {self._label} [{bar:<20}] {done}/{total} cells" + (f", {errors} failed" if errors else "")
        if done == total or force is False:
            print(text, file=self.stream, flush=True)

    def finish(self) -> None:
        """The evaluation is over: its bar stays on screen with its final count; the next gets a new one."""
        if self._bars is not None:
            self._bars.stop()
            self._bars, self._task = None, None

    def _open_bar(self, label: str, total: int, done: int) -> None:
        self.finish()
        console = Console(file=self.stream, stderr=self.stream is sys.stderr, force_terminal=self.live)
        self._bars = Bars(TextColumn("  {task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                          TextColumn("cells {task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
                          TimeRemainingColumn(), console=console, refresh_per_second=8)
        self._task = self._bars.add_task(label, total=total, completed=done, failed="")
        self._bars.start()
