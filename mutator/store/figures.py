"""A session's view of its run's attempts that a round re-reads only where they changed, so the figures a
round asks of every earlier attempt (the ledger, the gate's pooled noise, the val-query count, each genome's
train evaluation) cost no more at round 500 than at round 5.

Which rows this connection changed is noted by TEMP triggers (the connection's temp schema: nothing is written
to the store); whether another process changed any is told by the store's change counters (`store_changes`,
bumped by a trigger per row written, migration `change_counts`): when a table's counter moved by more than
this connection's own changes, another connection wrote it (never the heartbeat, which writes `runs` only) and
everything is read."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlite_utils

WATCHED = ("attempts", "evaluations")


@dataclass
class Mark:
    """Where one reader of the watch last looked: the table's change counter and the last own change it
    saw."""
    count: int | None = None
    seq: int = 0


class Watch:
    """Which rows of the watched tables changed since a reader's mark: a set of ids when this connection made
    every change since, else None."""

    def __init__(self, db: sqlite_utils.Database):
        self.conn = db.conn
        try:
            counted = self.conn.execute("select count(*) from sqlite_master where type = 'trigger' and name "
                                        "like 'store\\_changes\\_%' escape '\\'").fetchone()[0]
            self.conn.execute("create temp table if not exists sm_watch_changes (seq integer primary key, "
                              "tbl text not null, row integer not null)")
            for table in WATCHED:
                for op, ref in (("insert", "new"), ("update", "new"), ("delete", "old")):
                    self.conn.execute(f"create temp trigger if not exists sm_watch_{table}_{op} after {op} "
                                      f"on main.{table} begin insert into sm_watch_changes (tbl, row) values "
                                      f"('{table}', {ref}.id); end")
            # a store whose counters a later change dropped: read all
            self.live = counted == 3 * len(WATCHED)
        except sqlite3.Error:   # a connection that cannot hold them (read-only): every look reads everything
            self.live = False

    def changed(self, table: str, mark: Mark) -> set[int] | None:
        """The ids of `table` changed since `mark` (which moves on), or None: anything may have (the first
        look, another connection's write, a store without the counters)."""
        if not self.live:
            return None
        # one statement, so the counter and the own changes are read from one snapshot
        count, last = self.conn.execute(
            "select (select n from main.store_changes where tbl = ?), (select coalesce(max(seq), 0) from "
            "temp.sm_watch_changes)", [table]).fetchone()
        ids = None
        if mark.count is not None and mark.seq <= last:
            own = [r[0] for r in self.conn.execute("select row from temp.sm_watch_changes where seq > ? and "
                                                   "seq <= ? and tbl = ?", [mark.seq, last, table])]
            if count - mark.count == len(own):   # every change since was this connection's
                ids = set(own)
        # a look inside an open transaction may read what a rollback then undoes (no trigger says so): the
        # next look reads everything
        mark.count, mark.seq = (None if self.conn.in_transaction else count), last
        return ids


def watch(db: sqlite_utils.Database) -> Watch:
    """The store's one watch, kept on its Database object (the triggers are its connection's)."""
    found = getattr(db, "_sm_watch", None)
    if found is None or found.conn is not db.conn:
        found = db._sm_watch = Watch(db)
    return found


class Figures(NamedTuple):
    """An attempt's small columns (never its summary or reasoning), and how many times this session read
    it."""
    id: int
    round: int
    sibling: int
    verdict: str | None
    status: str | None
    error: str | None
    parent_hash: str | None
    genome_hash: str | None
    delta: float | None
    delta_eval: float | None
    delta_cost: float | None
    delta_steps: float | None
    val_evaluation_id: int | None
    train_evaluation_id: int | None
    gate_n: int | None
    gate: str | None
    confirmed: int
    pooled: int                  # whether it stored a pool snapshot (population, pareto)
    val_suite_hash: str | None   # the val evaluation's suite content hash (never changes once made)
    summary_length: int | None
    reasoning_length: int | None
    # which read made it (kept by a whole re-read that found it as it was): a reader's cache key
    read: int = 0


COLUMNS = ("a.id, a.round, a.sibling, a.verdict, a.status, a.error, a.parent_hash, a.genome_hash, a.delta, "
           "a.delta_eval, a.delta_cost, a.delta_steps, a.val_evaluation_id, a.train_evaluation_id, a.gate_n, "
           "a.gate, a.confirm is not null, a.pool_snapshot is not null, e.suite_hash, length(a.summary), "
           "length(a.reasoning)")


LOG = 64   # refreshes remembered by changed_since: a reader that looks less often than this rebuilds
# unique across sessions, so a cache keyed by it never mistakes one read for another
_reads = itertools.count(1)


def _same(old: Figures | None, new: Figures) -> Figures:
    return old if old is not None and old[:-1] == new[:-1] else new


class RunFigures:
    """Every attempt of one run, by id, as of the last `rows()`: re-read where the watch says it changed."""

    def __init__(self, db: sqlite_utils.Database, run_id: str):
        self.db, self.run_id = db, run_id
        self.watch, self.mark = watch(db), Mark()
        self._rows: dict[int, Figures] = {}
        # which rows each refresh changed, so a reader can update what it made from them without a pass over
        # all (None: a whole re-read); `version` counts the refreshes that changed something
        self.version = 0
        self._log: list[tuple[int, set[int] | None]] = []

    def _read(self, where: str = "", params: tuple = ()) -> list[Figures]:
        read = next(_reads)
        return [Figures(*r, read=read) for r in self.db.execute(
            f"select {COLUMNS} from attempts a left join evaluations e on e.id = a.val_evaluation_id where "
            f"a.run_id = ?{where} order by a.id", [self.run_id, *params]).fetchall()]

    def rows(self) -> dict[int, Figures]:
        """By id, in id order (a genome's newest train evaluation is its last)."""
        ids = self.watch.changed("attempts", self.mark)
        # anything may have changed: a row found as it was keeps its read, so readers keep theirs
        if ids is None:
            old = self._rows
            self._rows = {f.id: _same(old.get(f.id), f) for f in self._read()}
            self._changed(None)
        elif ids:
            self._changed(ids)
            found: dict[int, Figures] = {}
            wanted = sorted(ids)
            for at in range(0, len(wanted), 500):   # under SQLite's bound-parameter limit
                part = wanted[at:at + 500]
                found.update((f.id, f) for f in self._read(f" and a.id in ({', '.join('?' * len(part))})",
                                                           tuple(part)))
            for attempt_id in ids - found.keys():   # deleted (or moved to another run)
                self._rows.pop(attempt_id, None)
            new = found.keys() - self._rows.keys()
            late = bool(new) and min(new) < max(self._rows, default=0)
            # a changed row keeps its place; a new one (a larger id, as SQLite gives) goes last
            self._rows.update(found)
            if late:
                self._rows = dict(sorted(self._rows.items()))
        return self._rows

    def _changed(self, ids: set[int] | None) -> None:
        self.version += 1
        self._log.append((self.version, None if ids is None else set(ids)))
        del self._log[:-LOG]

    def changed_since(self, version: int) -> set[int] | None:
        """The ids of the rows changed (added, rewritten or gone) by the refreshes after `version` (as of the
        last `rows()`), or None: unknown (a whole re-read since, or older than the log keeps)."""
        if version == self.version:
            return set()
        if version > self.version or not self._log or self._log[0][0] > version + 1:
            return None
        ids: set[int] = set()
        for made, changed in self._log:
            if made > version:
                if changed is None:
                    return None
                ids |= changed
        return ids


class Kept:
    """What a reader makes from every attempt of a run, brought up to date from the rows the refreshes since
    changed — `apply(value, ids, rows)` in place, False when it cannot (then `make(rows)` again) — so a round
    that changed a few rows costs it no more at round 500 than at round 5."""

    def __init__(self, make: Callable[[dict[int, Figures]], Any],
                 apply: Callable[[Any, set[int], dict[int, Figures]], bool]):
        self.make, self.apply = make, apply
        self.source: RunFigures | None = None
        self.version, self.value = 0, None

    def of(self, figures: RunFigures) -> Any:
        rows = figures.rows()
        changed = figures.changed_since(self.version) if self.source is figures else None
        if changed is None or (changed and not self.apply(self.value, changed, rows)):
            self.value = self.make(rows)
        self.source, self.version = figures, figures.version
        return self.value


def kept_sum(term: Callable[[Figures], int]) -> Kept:
    """`sum(term(f) for f in rows)` (whole numbers: the same in any order), as [total, {id: term}]."""
    def make(rows: dict[int, Figures]) -> list:
        terms = {attempt_id: term(f) for attempt_id, f in rows.items()}
        return [sum(terms.values()), terms]

    def apply(value: list, ids: set[int], rows: dict[int, Figures]) -> bool:
        for attempt_id in ids:
            new = term(rows[attempt_id]) if attempt_id in rows else 0
            value[0] += new - value[1].pop(attempt_id, 0)
            if attempt_id in rows:
                value[1][attempt_id] = new
        return True
    return Kept(make, apply)


def kept_newest(value: Callable[[Figures], Any],
                of: Callable[[Figures], Any] = lambda f: f.genome_hash) -> Kept:
    """{of(f): value(f) of the last row (in id order) with a value not None}, e.g. each genome's newest train
    evaluation, as (that map, {key: the row's id}, {row id: key})."""
    def make(rows: dict[int, Figures]) -> tuple[dict, dict, dict]:
        found, holder = {}, {}
        for f in rows.values():
            if (v := value(f)) is not None:
                found[of(f)], holder[of(f)] = v, f.id
        return found, holder, {attempt_id: key for key, attempt_id in holder.items()}

    def apply(kept: tuple[dict, dict, dict], ids: set[int], rows: dict[int, Figures]) -> bool:
        found, holder, held = kept
        for attempt_id in sorted(ids):
            f, key = rows.get(attempt_id), held.get(attempt_id)
            if key is not None and (f is None or of(f) != key or value(f) is None):
                return False                        # it held a key as it no longer does: an older row may now
            if f is not None and (v := value(f)) is not None and holder.get(of(f), 0) <= attempt_id:
                held.pop(holder.get(of(f)), None)
                found[of(f)], holder[of(f)], held[attempt_id] = v, attempt_id, of(f)
        return True
    return Kept(make, apply)


def kept_where(value: Callable[[Figures], Any]) -> Kept:
    """{row id: value(f)} of the rows whose value is not None, in id order."""
    def make(rows: dict[int, Figures]) -> dict[int, Any]:
        return {attempt_id: v for attempt_id, f in rows.items() if (v := value(f)) is not None}

    def apply(found: dict[int, Any], ids: set[int], rows: dict[int, Figures]) -> bool:
        for attempt_id in sorted(ids):
            v = value(rows[attempt_id]) if attempt_id in rows else None
            if v is None:
                found.pop(attempt_id, None)
            elif attempt_id in found or not found or attempt_id > next(reversed(found)):
                found[attempt_id] = v
            else:
                return False                       # one before the last: out of id order
        return True
    return Kept(make, apply)
