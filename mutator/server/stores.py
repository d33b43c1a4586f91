"""Store discovery and read-only connections for the dashboard.

A store is a data dir holding `mutator.db`. The dashboard finds them under the project (data/, the
root, runs/*, direct child dirs, the configured data dir) and names each by a short id so that no
request ever carries a filesystem path. Connections are read-only: the dashboard never writes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from eval.reaper import pid_alive
from mutator.store.db import connect_readonly, upgrade
from mutator.store.queries import rows, runs

DB_NAME = "mutator.db"


@dataclass(frozen=True)
class Store:
    id: str
    data_dir: Path
    label: str

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_NAME


def store_id(data_dir: Path) -> str:
    return hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:10]


def discover(project_root: Path, extra: list[Path]) -> list[Store]:
    """Every mutator.db under the project's usual places plus the configured data dir(s)."""
    candidates: list[Path] = [*extra, project_root / "data", project_root]
    runs = project_root / "runs"
    if runs.is_dir():
        candidates += sorted(p for p in runs.iterdir() if p.is_dir())
    try:
        candidates += sorted(p for p in project_root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        pass
    seen: dict[Path, Store] = {}
    for path in candidates:
        resolved = path.resolve()
        if resolved in seen or not (resolved / DB_NAME).is_file():
            continue
        try:
            label = str(resolved.relative_to(project_root.resolve())) or "."
        except ValueError:
            label = str(resolved)
        seen[resolved] = Store(store_id(resolved), resolved, label)
    return list(seen.values())


def inside(root: Path, candidate: Path) -> Path | None:
    """The resolved path when it lies inside root (symlinks followed), else None."""
    try:
        resolved = candidate.resolve()
    except OSError:
        return None
    return resolved if resolved.is_relative_to(root.resolve()) else None


@dataclass
class Stores:
    """The discovered stores and one cached read-only connection per store."""
    project_root: Path
    extra: list[Path]
    _stores: dict[str, Store] = field(default_factory=dict)
    _conns: dict[str, sqlite_utils.Database] = field(default_factory=dict)

    def refresh(self) -> list[Store]:
        found = discover(self.project_root, self.extra)
        self._stores = {s.id: s for s in found}
        return found

    def get(self, sid: str | None) -> Store | None:
        if not self._stores:
            self.refresh()
        if sid is None:
            return next(iter(self._stores.values()), None)
        if sid not in self._stores:
            self.refresh()  # a store created since (e.g. by a launch) is found on demand
        return self._stores.get(sid)

    def db(self, store: Store) -> sqlite_utils.Database:
        conn = self._conns.get(store.id)
        if conn is None:
            # a store an older version wrote gets today's columns (and stored decisions) once
            upgrade(store.db_path)
            conn = connect_readonly(store.db_path)
            conn.conn.row_factory = sqlite3.Row
            self._conns[store.id] = conn
        return conn

    def data_version(self, store: Store) -> int:
        """Changes whenever another connection (the loop) commits to this store: cheap change detection."""
        return rows.data_version(self.db(store))

    def running_store(self) -> Store | None:
        for store in self.refresh():
            try:
                found = runs.running_pids(self.db(store))
            except sqlite3.Error:
                continue
            if any(pid_alive(pid) for pid in found):
                return store
        return None

    def close(self) -> None:
        for conn in self._conns.values():
            conn.conn.close()
        self._conns.clear()
