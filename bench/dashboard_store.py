"""The synthetic store bench/dashboard.py times: a greedy, a branching, a population and an A/A run written
in the shapes the real loop writes them, with CRITIC no-change attempts, other critic rejections, failed
mutations, siblings, crossover refs and pool snapshots.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from mutator.store.db import connect, dumps

TESTS = ("parses", "headers", "rows", "amounts", "dates", "emails", "flags", "text")
GATE = -0.02   # every comparison's threshold here (the figures are synthetic; the shapes are the loop's)


class Builder:
    """Writes runs in the shapes the real loop writes them (mutator/round/loop.py,
    strategies/, validity/aa.py)."""

    def __init__(self, conn, rng: random.Random, cells_per_eval: int) -> None:
        self.conn, self.rng, self.cells_per_eval = conn, rng, cells_per_eval
        self.tasks = [f"task-{i:02d}" for i in range(max(1, cells_per_eval // 4))]
        self.cell_id = 0
        self.genomes = 0
        self.now = time.time()

    def genome(self, parent: str | None) -> str:
        self.genomes += 1
        genome = f"{self.genomes:064x}"
        self.conn.execute("insert into genomes (hash, parent_hash, "
                          "skill_name, created_at) values (?, ?, ?, ?)",
                          [genome, parent, "bench-skill", self.now])
        return genome

    def evaluate(self, genome: str, suite: str, salt: str = "") -> int:
        """One finished evaluation of cells_per_eval cells (tasks × 4 replicates), 8 named tests per cell."""
        rng = self.rng
        ev_id = self.conn.execute(
            "insert into evaluations (key, genome_hash, suite, split, status, n_cells, n_done, eval, cost, "
            "steps, replicates) values (?, ?, ?, ?, 'done', ?, ?, ?, 0.01, 5, 4)",
            [f"{genome[-12:]}{suite}{salt}", genome, suite, suite, self.cells_per_eval, self.cells_per_eval,
             rng.random()]).lastrowid
        cells, tests = [], []
        for c in range(self.cells_per_eval):
            self.cell_id += 1
            cells.append((self.cell_id, ev_id, self.tasks[c // 4 % len(self.tasks)], c % 4, "ok",
                          rng.random(), 0.01, 5, 1000, 100, 1200))
            tests += [(self.cell_id, name, rng.random()) for name in TESTS]
        self.conn.executemany("insert into cells (id, evaluation_id, task_id, replicate, status, score, "
                              "cost_usd, steps, input_tokens, output_tokens, duration_ms) values "
                              "(?,?,?,?,?,?,?,?,?,?,?)", cells)
        self.conn.executemany("insert into tests (cell_id, name, score) values (?, ?, ?)", tests)
        return ev_id

    def run(self, run_id: str, strategy: str, kind: str = "evolve") -> str:
        seed = self.genome(None)
        self.conn.execute(
            "insert into runs (id, kind, status, strategy, strategy_opts, skill_name, suite, val, model, "
            "replicates, rounds_target, rounds_done, w_cost, w_steps, min_improvement, gate_z, seed_cost, "
            "seed_steps, seed_val_cost, seed_val_steps, incumbent_hash, seed_hash, config, created_at, "
            "updated_at) values (?, ?, 'finished', ?, '{}', 'bench-skill', 'train', 'val', 'm', 4, 0, 0, "
            "0.1, 0.02, 0.0, 1.0, 0.01, 5, "
            "0.01, 5, ?, ?, '{}', ?, ?)", [run_id, kind, strategy, seed, seed, self.now, self.now])
        self.now += 1
        self.attempt(run_id, 0, 0, None, seed, "SEED", composite=0.5, val=self.evaluate(seed, "val"),
                     train=self.evaluate(seed, "train"))
        return seed

    def attempt(self, run_id: str, rnd: int, sibling: int, parent: str | None, genome: str | None,
                verdict: str, *, composite: float | None = None, delta: float | None = None,
                val: int | None = None, train: int | None = None, refs: tuple[str, ...] = (),
                pool: list[str] | None = None, critic: list | None = None, error: str | None = None) -> None:
        status = {"SEED": "seed", "KEEP": "kept", "REJECT": "rejected", "CRITIC": "critic_rejected",
                  "FAILED": "failed"}[verdict]
        gate = dumps({"s_r": 0.1, "n": 25, "delta": delta, "threshold": GATE, "keep": (delta or 0) >= GATE,
                      "deltas": {t: self.rng.gauss(delta, 0.05)
                                 for t in self.tasks}}) if delta is not None else None
        self.conn.execute(
            "insert into attempts (run_id, round, sibling, parent_hash, genome_hash, ref_hashes, status, "
            "verdict, summary, reasoning, critic, gate, val_evaluation_id, train_evaluation_id, composite, "
            "eval, cost, steps, delta, gate_threshold, gate_se, gate_t, gate_n, pool_snapshot, error, "
            "started_at, finished_at) values (?, ?, ?, ?, ?, ?, ?, ?, 'a change', 'because', ?, ?, ?, ?, ?, "
            "?, 0.01, 5, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, rnd, sibling, parent, genome, dumps(list(refs)), status, verdict,
             dumps(critic) if critic is not None else (None if verdict in ("SEED", "FAILED") else "[]"), gate,
             val, train, composite, composite, delta, GATE if delta is not None else None,
             0.02 if delta is not None else None, 1.1 if delta is not None else None,
             25 if delta is not None else None, dumps(pool) if pool else None, error, self.now, self.now])
        self.now += 1

    def candidate(self, run_id: str, rnd: int, sibling: int, parent: str, parent_score: float,
                  incumbent_score: float, refs: tuple[str, ...] = ()) -> tuple[str | None, float | None]:
        """One mutation: 10 % a CRITIC no-change (genome == parent), 5 % another
        CRITIC, 3 % FAILED, else scored."""
        roll = self.rng.random()
        if roll < 0.10:
            self.attempt(run_id, rnd, sibling, parent, parent, "CRITIC", refs=refs,
                         error="changed: identical to its "
                         "parent", critic=[{"gate": "changed", "verdict": "fail",
                                            "reason": "identical to its parent"}])
            return None, None
        if roll < 0.15:
            genome = self.genome(parent)
            self.attempt(run_id, rnd, sibling, parent, genome, "CRITIC", refs=refs,
                         error="references: missing file", critic=[{"gate": "references", "verdict": "fail",
                                  "reason": "SKILL.md links to x.md"}])
            return None, None
        if roll < 0.18:
            self.attempt(run_id, rnd, sibling, parent, None, "FAILED", refs=refs,
                         error="mutator wrote no result.json")
            return None, None
        genome = self.genome(parent)
        score = parent_score + self.rng.gauss(0.0, 0.03)
        return genome, score

    def greedy(self, run_id: str, budget: int) -> None:
        incumbent = self.run(run_id, "greedy")
        score, rnd = 0.5, 0
        while budget > 1:
            rnd += 1
            genome, composite = self.candidate(run_id, rnd, 0, incumbent, score, score)
            budget -= 1
            if genome is None:
                continue
            delta = composite - score
            keep = delta >= GATE
            self.attempt(run_id, rnd, 0, incumbent, genome, "KEEP" if keep else "REJECT", composite=composite,
                         delta=delta, val=self.evaluate(genome, "val"),
                         train=self.evaluate(genome, "train") if keep else None)
            if keep:
                incumbent, score = genome, composite
        self.finish(run_id, rnd, incumbent)

    def branching(self, run_id: str, budget: int, width: int = 3) -> None:
        incumbent = self.run(run_id, "branching")
        score, rnd = 0.5, 0
        while budget >= width:
            rnd += 1
            scored = []
            for sibling in range(width):
                genome, composite = self.candidate(run_id, rnd, sibling, incumbent, score, score)
                if genome is not None:
                    scored.append((sibling, genome, composite))
            budget -= width
            best = max(scored, key=lambda x: (x[2], -x[0]), default=None)
            winner = best if best and best[2] - score >= GATE else None
            for sibling, genome, composite in scored:
                keep = winner is not None and sibling == winner[0]
                self.attempt(run_id, rnd, sibling, incumbent, genome, "KEEP" if keep else "REJECT",
                             composite=composite, delta=composite - score, val=self.evaluate(genome, "val"),
                             train=self.evaluate(genome, "train") if keep else None)
            if winner:
                incumbent, score = winner[1], winner[2]
        self.finish(run_id, rnd, incumbent)

    def population(self, run_id: str, budget: int, size: int = 4, children: int = 2) -> None:
        seed = self.run(run_id, "population")
        pool, scores, rnd = [seed], {seed: 0.5}, 0
        while budget >= children:
            rnd += 1
            leader = pool[0]
            scored = []
            for sibling in range(children):
                parent = self.rng.choices(pool, weights=range(len(pool), 0, -1))[0]
                others = [g for g in pool if g != parent]
                refs = (self.rng.choice(others),) if others and self.rng.random() < 0.5 else ()
                genome, composite = self.candidate(run_id, rnd, sibling, parent, scores[parent],
                                                   scores[leader], refs)
                if genome is not None:
                    scored.append((sibling, parent, genome, composite, refs))
                    scores[genome] = composite
            budget -= children
            pool = sorted([*pool, *(g for _, _, g, _, _ in scored)], key=lambda g: -scores[g])[:size]
            for sibling, parent, genome, composite, refs in scored:
                keep = genome in pool
                self.attempt(run_id, rnd, sibling, parent, genome, "KEEP" if keep else "REJECT",
                             composite=composite, delta=composite - scores[leader],
                             val=self.evaluate(genome, "val"),
                             train=self.evaluate(genome, "train") if keep else None, refs=refs, pool=pool)
        self.finish(run_id, rnd, pool[0])

    def aa(self, run_id: str, copies: int) -> None:
        seed = self.run(run_id, "aa", kind="aa")
        for copy in range(1, copies + 1):
            delta = self.rng.gauss(0.0, 0.02)
            self.attempt(run_id, copy, 0, seed, seed, "KEEP" if delta >= GATE else "REJECT",
                         composite=0.5 + delta, delta=delta,
                         val=self.evaluate(seed, "val", salt=f"aa-{copy}"))
        self.finish(run_id, copies, seed)

    def finish(self, run_id: str, rounds: int, incumbent: str) -> None:
        self.conn.execute("update runs set rounds_target = ?, "
                          "rounds_done = ?, incumbent_hash = ? where id = ?",
                          [rounds, rounds, incumbent, run_id])


def build(data_dir: Path, n_attempts: int, cells_per_eval: int) -> dict[str, str]:
    """A greedy, a branching and a population run (35 / 30 / 25 % of the attempts) and an A/A run (10 %), with
    CRITIC no-change attempts, other critic rejections and failed mutations among their candidates."""
    db = connect(data_dir / "mutator.db")
    builder = Builder(db.conn, random.Random(0), cells_per_eval)
    ids = {"greedy": "run-00000000000a", "branching": "run-00000000000b", "population": "run-00000000000c",
           "aa": "aa-00000000000d"}
    with db.conn:
        builder.greedy(ids["greedy"], int(n_attempts * 0.35))
        builder.branching(ids["branching"], int(n_attempts * 0.30))
        builder.population(ids["population"], int(n_attempts * 0.25))
        builder.aa(ids["aa"], int(n_attempts * 0.10) - 1)
    db.conn.close()
    return ids
