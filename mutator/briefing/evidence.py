"""Stage the mutator's read-only evidence beside its editable skill/ in the workspace.

evidence/current/      every train rollout of the parent (all tasks and replicates), compacted
evidence/attempts/round-K[-S]/  the train rollouts of each past attempt that was evaluated on train
history/ledger.md      every attempt of this run: verdict, summary, val aggregates, train delta
history/round-K[-S].diff        each attempt's real diff vs its parent, from the genome store
tasks/                 the train task statements and their inputs
solve/                 the solve phase's graded demonstrations (when it ran)

Never staged: the database, any val task detail (val appears only as aggregate deltas), the test suite.

Under a sandbox that binds folders (bwrap), history/ and evidence/attempts/ are the run's shared history
(<data dir>/evidence/runs/<run>/, mutator/store/evidence.py::Shared) bound read-only: the same files, added to
once per attempt instead of linked into every workspace, so staging, the tamper check and redaction walk a
workspace whose size does not grow with the round number. Without one (`--sandbox none`), they are linked in.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.suite import Suite
from mutator.store import briefing_reads, cache
from mutator.store.evidence import EvidenceStore, link
from mutator.store.figures import Figures, Mark, RunFigures, kept_newest

INPUT_CLIP = 4000


@dataclass(frozen=True)
class LedgerRow:
    label: str                 # "3" or "3.1" for sibling 1 of round 3
    verdict: str
    summary: str
    reasoning: str
    delta: float | None        # val Δcomposite and its split: aggregates only
    delta_eval: float | None
    delta_cost: float | None
    delta_steps: float | None
    train_delta: float | None  # train composite minus the parent's, when both were evaluated on train
    note: str = ""             # critic / failure reason
    skills: str = ""           # a skill set's member(s) the change touched


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


LEDGER_HEAD = ("# Ledger — every attempt of this run", "",
               "Val figures are aggregates over the validation suite (Δcomposite = Δeval + Δcost + Δsteps); "
               "the",
               "train Δ is vs the parent on the train tasks. Each attempt's diff is in "
               "round-<label>.diff.", "")


def ledger_block(row: LedgerRow) -> list[str]:
    """One attempt's lines in the ledger."""
    lines = [f"## Attempt {row.label} — {row.verdict}",
             f"- summary: {row.summary or '—'}",
             *([f"- skill changed: {row.skills}"] if row.skills else []),
             f"- val Δcomposite {_signed(row.delta)} (Δeval {_signed(row.delta_eval)}, Δcost "
             f"{_signed(row.delta_cost)}, Δsteps {_signed(row.delta_steps)}); train Δcomposite "
             f"{_signed(row.train_delta)}"]
    if row.note:
        lines.append(f"- why: {row.note}")
    if row.reasoning:
        lines.append(f"- reasoning: {row.reasoning[:1500]}")
    return [*lines, ""]


def render_ledger(rows: Sequence[LedgerRow]) -> str:
    lines = list(LEDGER_HEAD)
    for row in rows:
        lines += ledger_block(row)
    if not rows:
        lines.append("No attempts yet.")
    return "\n".join(lines) + "\n"


def link_trajectories(store: EvidenceStore, evaluation_id: int, cell_dirs: Sequence[tuple[str, str]],
                      target: Path) -> int:
    """Show each cell's trajectory.md as <cell name>.md (stored once, linked); returns how many were found."""
    target.mkdir(parents=True, exist_ok=True)
    found = 0
    for name, cell_dir in cell_dirs:   # strings: every rollout shown is linked anew each round
        stored = store.rollout(evaluation_id, name, f"{cell_dir}/trajectory.md")
        if stored is not None:
            link(stored, f"{target}/{name}.md")
            found += 1
    return found


def stage_tasks(suite: Suite, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for task in suite.tasks:
        lines = [f"# {task.id}", "", task.prompt.strip(), "", "Required outputs: "
                                                              f"{', '.join(task.required) or '—'}"]
        for rel in task.inputs:
            text = (suite.fixture_dir(task.id) / rel).read_text(encoding="utf-8", errors="replace")
            clipped = text if len(text) <= INPUT_CLIP else text[:INPUT_CLIP] + "\n… (clipped)"
            lines += ["", f"## Input {rel}", "```", clipped.rstrip("\n"), "```"]
        (target / f"{task.id}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_read_only(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if stat.S_IMODE(os.stat(path).st_mode) != 0o444:   # a stored file already is
                os.chmod(path, 0o444)


class Evidence:
    """Reads this run's attempts and cells from the store and stages them into a workspace: what every
    workspace shares (diffs, rollouts) is stored once and linked (mutator/store/evidence.py); the ledger is
    written anew."""

    def __init__(self, *, db, genomes, store: EvidenceStore, run_id: str, train: Suite, train_composite,
                 solve_dir: Path | None, known: dict | None = None,
                 figures: RunFigures | None = None) -> None:
        self.db, self.genomes, self.store, self.run_id, self.train = db, genomes, store, run_id, train
        # the run's attempts' small columns, re-read where they changed (the session's, kept across rounds)
        self.figures = figures or RunFigures(db, run_id)
        # what the run's shared history holds, by what made it ({} before this session's first staging): the
        # session keeps it across rounds, so a round adds only what is new
        self.known = {} if known is None else known
        self.train_composite = train_composite      # evaluation id -> train composite (seed-normalised)
        self.solve_dir = solve_dir

    def _cells(self, evaluation_id: int) -> list[tuple[str, str]]:
        # several eval models: each model's cells, named by model too
        return [(f"{r['task_id']}__r{r['replicate']}" + (f"__{r['model']}" if r.get("model") else ""),
                 r["cell_dir"])
                for r in cache.cell_rows(self.db, evaluation_id, "task_id, replicate, cell_dir")]

    def train_evaluations(self) -> Mapping[str, int]:
        """Each genome's newest train evaluation in this run (the one its attempts were last evaluated on):
        kept across rounds and changed in place, so read it, never change it."""
        newest = self.known.setdefault("train", kept_newest(lambda f: f.train_evaluation_id))
        return newest.of(self.figures)[0]

    def train_evaluation(self, genome_hash: str) -> int | None:
        return self.train_evaluations().get(genome_hash)

    def ledger_rows(self, train: Mapping[str, int] | None = None, last: int | None = None) -> list[LedgerRow]:
        """Every decided attempt of the run as the ledger shows it, in order; with `last`, only the last ones
        (the briefing's: read without the rest, so a briefing costs no more at round 500 than at round 5)."""
        train = self.train_evaluations() if train is None else train
        found = briefing_reads.ledger_attempts(self.db, self.run_id, last)
        return [self._ledger_row(a, train) for a in reversed(found)]

    def _ledger_row(self, a: dict, train: Mapping[str, int]) -> LedgerRow:
        mine, parents = a["train_evaluation_id"], train.get(a["parent_hash"] or "")
        train_delta = (self.train_composite(mine)
                       - self.train_composite(parents)) if mine and parents else None
        return LedgerRow(label=_label(a), verdict=a["verdict"], summary=a["summary"] or "",
                         reasoning=a["reasoning"] or "", delta=a["delta"], delta_eval=a["delta_eval"],
                         delta_cost=a["delta_cost"], delta_steps=a["delta_steps"], train_delta=train_delta,
                         note=a["error"] if a["status"] in ("critic_rejected", "failed") else "",
                         skills=a.get("skills_touched") or "")

    def ledger(self, train: Mapping[str, int]) -> str:
        """`render_ledger(self.ledger_rows(train))`, each attempt's lines made once per session while its row
        and the train evaluations its train Δ compares stay as they were (mutator/store/figures.py notes which
        changed): a round reads no attempt's texts (a reasoning may be 20 KB) and no figure that did not
        change, and when only attempts decided after the last one shown changed, their lines are added to the
        text made before."""
        # train evaluations changed since the last ledger (re-graded, re-run); None: any may have
        changed = self.figures.watch.changed("evaluations", self.known.setdefault("evaluations", Mark()))
        kept = self.train_evaluations()   # up to date with the rows: a parent's changed only with its rows
        book, rows = self.known.get("book"), self.figures.rows()
        ids = self.figures.changed_since(book.version) if book and book.figures is self.figures else None
        if ids is not None and changed is not None and book.stands(ids, changed, train, kept, rows):
            new = sorted((rows[i] for i in ids if i in rows and _decided(rows[i])), key=_order)
            if not new or _order(new[0]) > book.last:
                return book.add(new, train, changed)
        # attempt id -> (its row's read and train ids, composites, lines)
        made = self.known.setdefault("ledger", {})
        self.known["book"] = book = Book(self.figures, made, self.train_composite, self._block)
        return book.add(sorted((f for f in rows.values() if _decided(f)), key=_order), train, changed)

    def _block(self, f: Figures, train: Mapping[str, int]) -> list[str]:
        whole = briefing_reads.ledger_attempt(self.db, f.id)
        return ledger_block(self._ledger_row(whole, train))

    def stage(self, workspace: Path, parent_hash: str, shared: bool = False) -> dict[Path, Path]:
        """Stage the workspace's read-only evidence. `shared` (the sandbox binds folders): its history/ and
        evidence/attempts/ are left as empty folders and the answer maps each to the run's shared folder the
        sandbox binds there read-only (the same files, kept once per run), so a round's staging and tamper
        check cost no more at round 500 than at round 5; else every file is linked into the workspace
        itself."""
        train = self.train_evaluations()
        current = train.get(parent_hash)
        target = workspace / "evidence" / "current"
        if current is None or not link_trajectories(self.store, current, self._cells(current), target):
            target.mkdir(parents=True, exist_ok=True)
            _write_read_only(target / "README.md", "The parent has no train rollouts yet.\n")
        # shared: from the round before the last one it saw (an attempt is final once its round ended: its
        # genome and its train evaluation are set by then), so a round reads a few rows, not one per earlier
        # attempt
        since = self.known.get("since", 1) if shared else 1
        attempts = briefing_reads.attempts_since(self.db, self.run_id, since)
        ledger = self.ledger(train)
        shown = self._share(attempts, ledger) if shared else {}
        if not shared:
            history = workspace / "history"
            history.mkdir(parents=True, exist_ok=True)
            for a in attempts:
                if a["train_evaluation_id"]:
                    self._link_rollouts(a, workspace / "evidence" / "attempts")
                if a["genome_hash"] and a["parent_hash"]:
                    self._link_diff(a, history)
            _write_read_only(history / "ledger.md", ledger)
        for folder in shown:
            (workspace / folder).mkdir(parents=True, exist_ok=True)   # where the sandbox binds the shared one
        stage_tasks(self.train, workspace / "tasks")
        make_read_only(workspace / "tasks")
        if self.solve_dir and self.solve_dir.is_dir():
            shutil.copytree(self.solve_dir, workspace / "solve")
            make_read_only(workspace / "solve")
        # evidence/ and history/ hold stored files (read-only already, mutator/store/evidence.py) and the two
        # written above: not walked again, so a round costs no more for the files earlier rounds added
        return {workspace / folder: source for folder, source in shown.items()}

    def _link_rollouts(self, a: dict, attempts: Path) -> None:
        """Attempt `a`'s train rollouts into `attempts`/round-<label>/."""
        link_trajectories(self.store, a["train_evaluation_id"], self._cells(a["train_evaluation_id"]),
                          attempts / f"round-{_label(a, '-')}")

    def _link_diff(self, a: dict, history: Path) -> None:
        """Attempt `a`'s diff vs its parent as `history`/round-<label>.diff."""
        link(self.store.diff(a["parent_hash"], a["genome_hash"], self.genomes.diff),
             f"{history}/round-{_label(a, '-')}.diff")

    def _share(self, attempts: list[dict], ledger: str) -> dict[str, Path]:
        """Bring the run's shared history up to `attempts` (adding only what is new since this process's last
        staging; built anew at its first) and write its ledger; {workspace folder: shared folder} to bind."""
        shared = self.store.shared(self.run_id)
        # first staging here: a re-grade or a re-done attempt may have come since
        if "built" not in self.known:
            shutil.rmtree(shared.root, ignore_errors=True)
            shared.history.mkdir(parents=True)
            shared.attempts.mkdir()
            self.known["built"] = True
        for a in attempts:
            label = _label(a, "-")
            if a["train_evaluation_id"] and self.known.get(f"attempts/{label}") != a["train_evaluation_id"]:
                # this process's older one
                shutil.rmtree(shared.attempts / f"round-{label}", ignore_errors=True)
                self._link_rollouts(a, shared.attempts)
                self.known[f"attempts/{label}"] = self.known["rollouts"] = a["train_evaluation_id"]
            pair = (a["parent_hash"], a["genome_hash"])
            if all(pair) and self.known.get(f"history/{label}") != pair:
                (shared.history / f"round-{label}.diff").unlink(missing_ok=True)
                self._link_diff(a, shared.history)
                self.known[f"history/{label}"] = pair
        if attempts:
            self.known["since"] = max(self.known.get("since", 1), attempts[-1]["round"] - 1)
        _replace_read_only(shared.history / "ledger.md", ledger)
        return {"history": shared.history,
                **({"evidence/attempts": shared.attempts} if "rollouts" in self.known
                                               else {})}


def _decided(f: Figures) -> bool:
    return f.round > 0 and f.verdict is not None


def _order(f: Figures) -> tuple[int, int]:
    return f.round, f.sibling


class Book:
    """The ledger's text as made from the decided attempts in order, with what each attempt's lines compared,
    so a round that only decided new attempts after the last one adds their lines and walks none of the
    others."""

    def __init__(self, figures: RunFigures, made: dict, composite: Callable[[int], float],
                 block: Callable[[Figures, Mapping[str, int]], list[str]]):
        self.figures, self.version, self.made = figures, figures.version, made
        self.composite, self.block = composite, block   # a train evaluation's composite; an attempt's lines
        self.shown: set[int] = set()                   # the attempts shown
        # each shown attempt's parent -> the train evaluation it compared
        self.parents: dict[str, int | None] = {}
        self.evaluations: set[int] = set()             # the train evaluations the shown train Δs compare
        self.last: tuple[int, int] | None = None       # the last shown attempt's (round, sibling)
        self.train: Mapping[str, int] | None = None    # the train map the lines were made with
        self.text = ""

    def stands(self, ids: set[int], changed: set[int], train: Mapping[str, int], kept: Mapping[str, int],
               rows: dict[int, Figures]) -> bool:
        """Whether every attempt shown reads as it did: none of their rows changed, no train evaluation their
        Δs compare, and each parent's newest train evaluation is the one compared. When `train` is the
        session's kept map, changed in place since the last ledger (not made anew), only the parents whose
        rows changed are looked at: an entry changes in place only for a row that changed and holds that
        genome."""
        if not self.shown or ids & self.shown or changed & self.evaluations or not ids <= rows.keys():
            return False
        parents = self.parents.keys() & {rows[i].genome_hash for i in ids} \
            if train is kept and train is self.train else self.parents
        return all(train.get(parent) == self.parents[parent] for parent in parents)

    def add(self, decided: list[Figures], train: Mapping[str, int], changed: set[int] | None) -> str:
        """Add `decided` (in order, after every attempt shown) and return the text; `changed`: the train
        evaluations changed since the last ledger (None: any may have)."""
        lines: list[str] = []
        for f in decided:
            mine, parents = f.train_evaluation_id, train.get(f.parent_hash or "")
            key, old = (f.read, mine, parents), self.made.get(f.id)
            fresh = old is None or old[0] != key
            compared = bool(mine and parents)
            moved = compared and (changed is None or mine in changed or parents in changed)
            composites = (self.composite(mine),
                          self.composite(parents)) if compared and (fresh or moved) else None
            if fresh or (moved and composites != old[1]):
                self.made[f.id] = old = (key, composites, self.block(f, train))
            lines += old[2]
            self.shown.add(f.id)
            self.parents[f.parent_hash or ""] = parents
            if compared:
                self.evaluations.update((mine, parents))
        if decided:
            self.last = _order(decided[-1])
        self.train = train
        if not self.text:
            lines = [*LEDGER_HEAD, *(lines or ["No attempts yet."])]
        if lines:
            self.text += "\n".join(lines) + "\n"
        self.version = self.figures.version
        return self.text


def _write_read_only(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o444)


def _replace_read_only(path: Path, text: str) -> None:
    """`_write_read_only` by an atomic replace: a file a sandbox shows is whole or the one before."""
    incoming = path.with_name(f".incoming-{os.getpid()}-{path.name}")
    _write_read_only(incoming, text)
    os.replace(incoming, path)


def _label(attempt: dict, sep: str = ".") -> str:
    return f"{attempt['round']}" + (f"{sep}{attempt['sibling']}" if attempt["sibling"] else "")
