"""Secrets never stored, never staged: replace secret values with [REDACTED] in text and in a cell's logs.

A secret is the value of any variable of the harness's environment whose name looks secret
(KEY|TOKEN|SECRET|PASSWORD, at least 8 characters long), and any known key shape (`sk-ant-...`).
Runs on everything before it is stored or handed to the mutator; never changes anything else.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from eval.environment import SECRET_NAME, environ_items

REDACTED = "[REDACTED]"
MIN_SECRET = 8          # shorter values ("1", "test") are not secrets and would mangle ordinary text
KEY_SHAPES = re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}|\bsk-[A-Za-z0-9]{32,}\b")
KEY_BYTES = re.compile(KEY_SHAPES.pattern.encode("ascii"))
MAX_FILE = 64 * 1024 * 1024


def secret_values(source: Mapping[str, str] | None = None) -> list[str]:
    # asked for every file of every cell: once per environment
    return list(_secret_values(environ_items(source)))


@functools.lru_cache(maxsize=16)
def _secret_values(items: tuple) -> tuple[str, ...]:
    pairs = ((os.fsdecode(name), os.fsdecode(value)) for name, value in items)   # bytes from os.environ._data
    values = {value for name, value in pairs if SECRET_NAME.search(name) and len(value) >= MIN_SECRET}
    # the longest first: a value containing another is replaced whole
    return tuple(sorted(values, key=len, reverse=True))


def redact(text: str | None, source: Mapping[str, str] | None = None) -> str | None:
    if not text:
        return text
    for value in secret_values(source):
        if value in text:
            text = text.replace(value, REDACTED)
    return KEY_SHAPES.sub(REDACTED, text)


def redact_file(path: Path, source: Mapping[str, str] | None = None) -> bool:
    """Rewrite one text file without its secrets; True when something was replaced. Binary files are left."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        return _redact_regular(str(path), path.stat().st_size, source)
    except OSError:
        return False


def _redact_regular(path: str, size: int, source: Mapping[str, str] | None) -> bool:
    if size > MAX_FILE:
        return False
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return False
    # what the text below would match is in the bytes too (the bytes' \b is ASCII: it matches at least as
    # often), so a file without either is left unread as text: most of a cell's files
    if b"\0" in raw or not (KEY_BYTES.search(raw) or any(value in raw for value in _secret_bytes(source))):
        return False
    text = raw.decode("utf-8", errors="surrogateescape")
    clean = redact(text, source)
    if clean == text:
        return False
    with open(path, "wb") as f:
        f.write(clean.encode("utf-8", errors="surrogateescape"))
    return True


def _secret_bytes(source: Mapping[str, str] | None) -> tuple[bytes, ...]:
    return _encoded(tuple(secret_values(source)))


@functools.lru_cache(maxsize=16)
def _encoded(values: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(value.encode("utf-8", errors="surrogateescape") for value in values)


def redact_tree(root: Path, source: Mapping[str, str] | None = None, *,
                skip: Callable[[Path], bool] | None = None) -> list[Path]:
    """Redact every text file under root (a cell's logs, a mutator workspace's streams) bar those `skip` says
    were redacted already (evidence staged from stored cells); returns the files changed, sorted. Symlinks are
    neither followed nor redacted."""
    changed: list[Path] = []
    pending = [str(root)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            elif entry.is_file(follow_symlinks=False) and not (skip and skip(Path(entry.path))):
                try:
                    size = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
                if _redact_regular(entry.path, size, source):
                    changed.append(Path(entry.path))
    return sorted(changed)


def redact_cell(cell_root: Path, error: str | None, source: Mapping[str, str] | None = None) -> str | None:
    """After the agent and the grader: every text file of the cell, and its error, without secrets."""
    redact_tree(cell_root, source)
    return redact(error, source)
