"""The harness's own log: what the libraries under a command say (aiohttp's "Error handling request" when a
metering key proxy's caller or upstream drops a connection, asyncio's leftovers) goes to
`<data-dir>/logs/harness.log`, never among the progress lines on the terminal.

Python prints a library's unhandled log records to stderr (logging.lastResort) when nothing is configured; the
key proxy (eval/agents/key_proxy.py, hashed into every agent id) is left as it is, and its loggers are given a
home here, by the command that starts it.
"""

from __future__ import annotations

import logging
from pathlib import Path

LOGGERS = ("aiohttp", "asyncio")   # the key proxy's server and client, and the event loops they run on
NAME = "harness.log"


class LazyFile(logging.FileHandler):
    """A FileHandler whose folder is made on the first record (a command that logs nothing leaves none)."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        super().emit(record)


def log_path(data_dir: Path) -> Path:
    return Path(data_dir) / "logs" / NAME


def route_library_logs(data_dir: Path) -> Path:
    """Send the libraries' records (LOGGERS) to the data dir's harness.log, not to the terminal; returns its
    path. Calling it again (another command in the same process, a test) moves them to the new data dir."""
    path = log_path(data_dir)
    handler = LazyFile(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s pid %(process)d %(name)s %(levelname)s: %(message)s"))
    handler.set_name("skill-mutator-harness-log")
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == handler.get_name()]:
            logger.removeHandler(old)
            old.close()
        logger.addHandler(handler)
        logger.propagate = False   # never also to the root logger's (or lastResort's) stderr
    return path
