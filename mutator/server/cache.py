"""A bounded LRU of the dashboard's encoded JSON responses, keyed by (store, path + query, data_version).

A store's responses only change when the store changes, and SQLite's `PRAGMA data_version` on the
dashboard's read-only connection moves whenever another connection (the loop) commits; so a key with
the current version is always fresh. Responses that also depend on something outside the store (a
process being alive, cell dirs appearing on disk) are "volatile" and live at most `volatile_ttl` s.
Never caches errors and never holds a connection.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

Key = tuple[str, str, int]   # (store id, canonical path + query, data_version)


@dataclass
class Entry:
    body: bytes
    expires: float | None   # monotonic deadline for a volatile entry, None = valid until the store changes


class ResponseCache:
    """LRU bounded by entry count and total body bytes; a store's entries of older versions are dropped
    as soon as a newer version of that store is seen."""

    def __init__(self, *, max_entries: int = 256, max_bytes: int = 64 << 20, max_entry_bytes: int = 8 << 20,
                 volatile_ttl: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries, self.max_bytes, self.max_entry_bytes = max_entries, max_bytes, max_entry_bytes
        self.volatile_ttl, self.clock = volatile_ttl, clock
        self._entries: OrderedDict[Key, Entry] = OrderedDict()
        self._versions: dict[str, int] = {}
        self.bytes = self.hits = self.misses = self.evictions = 0

    def get(self, key: Key) -> bytes | None:
        self._see_version(key[0], key[2])
        entry = self._entries.get(key)
        if entry is not None and entry.expires is not None and self.clock() >= entry.expires:
            self._drop(key)
            entry = None
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry.body

    def put(self, key: Key, body: bytes, *, volatile: bool = False) -> None:
        if len(body) > self.max_entry_bytes:
            return
        self._see_version(key[0], key[2])
        if key in self._entries:
            self._drop(key)
        self._entries[key] = Entry(body, self.clock() + self.volatile_ttl if volatile else None)
        self.bytes += len(body)
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))
            self.evictions += 1

    def drop_volatile(self, store: str) -> int:
        """Forget a store's volatile entries at once (a writer of it was just seen dying: an entry read while
        it lived would say RUNNING until its time ran out); the number dropped."""
        gone = [k for k, e in self._entries.items() if k[0] == store and e.expires is not None]
        for key in gone:
            self._drop(key)
        return len(gone)

    def stats(self) -> dict:
        return {"entries": len(self._entries), "bytes": self.bytes, "hits": self.hits, "misses": self.misses,
                "evictions": self.evictions}

    def clear(self) -> None:
        self._entries.clear()
        self._versions.clear()
        self.bytes = 0

    def _see_version(self, store: str, version: int) -> None:
        if self._versions.get(store) == version:
            return
        self._versions[store] = version
        for key in [k for k in self._entries if k[0] == store and k[2] != version]:
            self._drop(key)

    def _drop(self, key: Key) -> None:
        entry = self._entries.pop(key)
        self.bytes -= len(entry.body)
