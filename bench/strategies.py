#!/usr/bin/env python3
"""Which search pays? greedy, branching, population, pareto and best-of-N on one synthetic landscape.

The landscape is built from the fakes (bench/landscape.py): a genome is a set of CSV rules, a cell applies each
rule unless the agent fumbles it, and the demo grader scores the output against the answer key. Some rules help
some tasks, titlecase hurts, three rules only add turns (cost). The optimum is enumerated exactly. The REAL
strategy classes and the REAL gate and tie rule (mutator/scoring/score.py, ties.py), configured from config.json
as the loop is, run in a loop mirroring mutator/round/loop.py, with a simulated mutator shared by all strategies.
Everything runs in-process: no agents, no database. The same arguments print the same table under any
PYTHONHASHSEED; each table names the landscape and mutator it came from by their hashes.

Every line gets the same rollout budget (val + train cells; best-of-N included) and stops before an evaluation
would pass it. Beside the configured gate, greedy-keepties runs the gate with every tie kept (tieRule 'keep'),
and two greedy lines judge candidates without the gate: keep iff Δ > 0, and a raw threshold (keep iff Δ ≥ τ,
gateZ 0). The last lines set the default against the gate-less lines and name every significant difference,
paired over seeds.

    python bench/strategies.py [--seeds 8] [--seed-offset 0] [--budget 640] [--replicates 2]
                               [--tie-rule keep|noAddedCost] [--evidence-replicates N] [--lines a,b]
    (--seeds 32 for the full run; --seed-offset 1000 for seeds no tuning has seen)
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.landscape import (  # noqa: E402,F401  (re-exported: bench/peers.py imports them from here)
    CATALOGUE,
    MUTATOR_USD,
    SEED_RULES,
    WEIGHTS,
    Genome,
    Landscape,
    Mutator,
    draws_hash,
    landscape_hash,
    mutator_hash,
    norm_for,
)
from bench.paired import against, censored_median, mean_se, significant, wilcoxon_p  # noqa: E402,F401
from mutator.config import load_settings  # noqa: E402
from mutator.scoring.score import CellFigures, Comparison, compare, per_task, summarise  # noqa: E402
from strategies import Member, Scored, State, make_strategy  # noqa: E402

RAW_THRESHOLD = 0.02                                # the raw-threshold line: keep iff Δ ≥ this (gateZ 0)


class OutOfBudget(Exception):
    """The next evaluation would pass the line's rollout budget: the search ends where it stands."""


@dataclass(frozen=True)
class Rules:
    """The loop's gate and evidence settings, as config.json gives them (score.*, evidenceReplicates)."""
    min_improvement: float = 0.0
    gate_z: float = 1.0
    method: str = "signflip"
    tie_rule: str = "noAddedCost"
    evidence_replicates: int = 0      # a kept candidate's train evaluation; 0 = the run's replicates

    @classmethod
    @functools.cache
    def from_config(cls, config_file: Path = ROOT / "config.json") -> Rules:
        s = load_settings(config_file=config_file, environ={})
        return cls(s.min_improvement, s.gate_z, s.gate_method, s.tie_rule, s.evidence_replicates)


@dataclass(frozen=True)
class Line:
    """One contender: a strategy and how its candidates are judged against the incumbent."""
    label: str
    strategy: str
    opts: dict
    # 'gate' (the real gate, as configured) | 'positive' (Δ > 0, no gate) | 'raw' (Δ ≥ τ, gateZ 0) | 'oracle' (keep
    # iff the TRUE val composite rises: every keep decision right, a reference for how much any gate could gain)
    keep: str = "gate"
    tie_rule: str = ""        # the gate's tie rule for this line; '' = the configured one


@dataclass
class Outcome:
    curve: list[tuple[int, float]]     # (rollouts so far, true val composite of the incumbent)
    val_measured: float
    test_true: float
    rollouts: int
    usd: float


class Search:
    """One line's search on the landscape at a hard rollout budget: the evaluation cache, the spend, the curve."""

    def __init__(self, land: Landscape, line: Line, budget: int, replicates: int, seed: int,
                 raw_threshold: float = RAW_THRESHOLD, rules: Rules | None = None) -> None:
        self.land, self.line, self.budget, self.replicates, self.seed = land, line, budget, replicates, seed
        self.raw_threshold = raw_threshold
        self.rules = rules or Rules.from_config()   # the loop's settings unless a line is measured otherwise
        # replicates per evaluation: val always the run's; train (the mutator's evidence) evidenceReplicates
        self.depth = {"val": replicates, "train": self.rules.evidence_replicates or replicates}
        self.rng = random.Random(f"bench:{seed}:{line.label}")   # unused by the bench's own cells (see evaluate)
        self.mutator = Mutator.for_seed(land, seed)
        self.norms = {split: norm_for(land, split) for split in ("train", "val", "test")}
        self.val_cells: dict[Genome, list[CellFigures]] = {}
        self.train_cells: dict[Genome, list[CellFigures]] = {}
        self.train_failing: dict[Genome, dict[str, list[str]]] = {}
        self.spent = {"rollouts": 0, "usd": 0.0}
        self.names: dict[Genome, str] = {}
        self.by_name: dict[str, Genome] = {}
        self.calls = 0
        self.val_size = len(land.suites["val"]) * replicates
        self.seed_genome = Genome(SEED_RULES)
        self.incumbent = self.seed_genome
        self.curve: list[tuple[int, float]] = []

    def name(self, g: Genome) -> str:
        return self.names.setdefault(g, f"g{len(self.names)}")

    def evaluate(self, g: Genome, split: str, store: dict) -> list[CellFigures]:
        if g not in store:  # the evaluation cache: same genome, same contract, no new spend
            if self.spent["rollouts"] + self.depth[split] * len(self.land.suites[split]) > self.budget:
                raise OutOfBudget  # every line stops at the same hard rollout cap
            store[g], failing_tests = self.land.cells(g, split, self.depth[split], stream=str(self.seed))
            if split == "train":
                self.train_failing[g] = failing_tests
            self.spent["rollouts"] += len(store[g])
            self.spent["usd"] += sum(c.cost_usd for c in store[g])
        self.by_name[self.name(g)] = g
        return store[g]

    def member(self, g: Genome) -> Member:
        norms = self.norms
        tasks = per_task(self.val_cells[g], WEIGHTS, norms["val"])
        train = {t: f.composite for t, f in per_task(self.train_cells[g], WEIGHTS, norms["train"]).items()} \
            if g in self.train_cells else {}
        return Member(self.name(g), summarise(self.val_cells[g], WEIGHTS, norms["val"]).composite,
                      {t: f.composite for t, f in tasks.items()}, train)

    def failing(self, g: Genome) -> dict[str, list[str]]:
        return self.train_failing.get(g, {})  # only genomes selected for train have evidence

    def mutate(self, parent: Genome, **how) -> tuple[Genome, object]:
        self.spent["usd"] += MUTATOR_USD
        self.calls += 1
        return self.mutator(parent, failing=self.failing(parent), **how)

    def point(self) -> None:
        self.curve.append((self.spent["rollouts"], self.land.expected(self.incumbent, "val", self.norms["val"])))

    def best_of_n(self) -> None:
        """Independent mutants of the seed until the budget is spent; a duplicate is served from the cache."""
        while self.calls < 3 * self.budget // self.val_size:
            child, _ = self.mutate(self.seed_genome, objective=None, refs=[], targets=())
            if child == self.seed_genome:
                continue
            self.evaluate(child, "val", self.val_cells)
            if self.member(child).composite > self.member(self.incumbent).composite:
                self.incumbent = child
            self.point()

    def gate(self, cand: dict, base: dict, prior: list) -> tuple[object, bool]:
        rules = self.rules
        if self.line.keep == "oracle":
            gate, norm = compare(cand, base, prior=prior, min_improvement=0.0, gate_z=0.0, tie_rule="keep"), self.norms["val"]
            return gate, self.land.expected(self.child, "val", norm) > self.land.expected(self.incumbent, "val", norm) + 1e-12
        if self.line.keep == "raw":
            gate = compare(cand, base, prior=prior, min_improvement=self.raw_threshold, gate_z=0.0,
                           method=rules.method, tie_rule="keep")
            return gate, gate.keep
        gate = compare(cand, base, prior=prior, min_improvement=rules.min_improvement, gate_z=rules.gate_z,
                       method=rules.method, tie_rule=self.line.tie_rule or rules.tie_rule)
        return gate, gate.keep if self.line.keep == "gate" else gate.delta > 1e-12

    def one_round(self, strategy, state: State, prior: list) -> list[Scored]:
        scored, first_op = [], None
        for sibling, spec in enumerate(strategy.plan(state)):
            parent = self.by_name[spec.parent_hash]
            child, op = self.mutate(parent, objective=first_op if spec.share_objective else None,
                                    refs=[self.by_name[h] for h in spec.ref_hashes], targets=spec.target_tasks)
            first_op = op if sibling == 0 else first_op
            if child == parent:  # the critic rejects a no-op without spending an evaluation
                scored.append(Scored(sibling, spec, None, evaluated=False))
                continue
            cand, self.child = per_task(self.evaluate(child, "val", self.val_cells), WEIGHTS, self.norms["val"]), child
            base = per_task(self.val_cells[self.incumbent], WEIGHTS, self.norms["val"])
            gate, keep = self.gate(cand, base, prior)
            prior.append(Comparison(gate.n, gate.s_r))
            scored.append(Scored(sibling, spec, self.name(child), True, self.member(child).composite, keep,
                                 {t: f.composite for t, f in cand.items()}))
        return scored

    def strategy_rounds(self) -> None:
        strategy_id = self.line.strategy
        strategy = make_strategy(strategy_id, self.line.opts)
        pool, prior, round_no = (), [], 0
        # the mutator-call cap stops a search whose candidates are all cached (it spends no more rollouts)
        while self.calls < 3 * self.budget // self.val_size:
            round_no += 1
            members = tuple(self.member(g) for g in self.val_cells)
            state = State(round_no, self.member(self.incumbent),
                          random.Random(f"{self.seed}:{strategy_id}:{round_no}"), members, pool)
            integration = strategy.integrate(state, self.one_round(strategy, state, prior))
            self.incumbent, pool = self.by_name[integration.incumbent], integration.pool or pool
            self.point()
            for h in integration.selected:
                self.evaluate(self.by_name[h], "train", self.train_cells)

    def run(self) -> Outcome:
        self.evaluate(self.seed_genome, "val", self.val_cells)
        self.evaluate(self.seed_genome, "train", self.train_cells)
        self.point()
        try:
            self.best_of_n() if self.line.strategy == "best-of-n" else self.strategy_rounds()
        except OutOfBudget:
            self.point()
        return Outcome(self.curve, self.member(self.incumbent).composite,
                       self.land.expected(self.incumbent, "test", self.norms["test"]), self.spent["rollouts"],
                       self.spent["usd"])


def run_search(land: Landscape, line: Line, budget: int, replicates: int, seed: int,
               raw_threshold: float = RAW_THRESHOLD, rules: Rules | None = None) -> Outcome:
    return Search(land, line, budget, replicates, seed, raw_threshold, rules).run()


LINES = (
    Line("greedy", "greedy", {}),
    Line("greedy-keepties", "greedy", {}, tie_rule="keep"),
    Line("greedy-nogate", "greedy", {}, keep="positive"),
    Line("greedy-raw", "greedy", {}, keep="raw"),
    Line("branching", "branching", {"width": 3}),
    Line("population", "population", {}),
    Line("pareto", "pareto", {}),
    Line("best-of-n", "best-of-n", {}),
)
EXTRA = (Line("greedy-oracle", "greedy", {}, keep="oracle"),)    # only with --lines
DEFAULT, GATELESS = "greedy", ("greedy-nogate", "greedy-raw")


def to_target(outcome: Outcome, target: float) -> int | None:
    """Rollouts spent when the incumbent's TRUE val composite first reached `target`; None = censored (never)."""
    return next((r for r, v in outcome.curve if v >= target - 1e-12), None)


@dataclass
class Results:
    rows: dict[str, list[Outcome]]
    lands: list[Landscape]
    targets: list[float]
    optima: list[tuple[float, float, float, float]]   # per seed: seed val, optimum val, seed test, optimum test


def run_all(seeds: range, lines: tuple[Line, ...], budget: int, replicates: int, raw_threshold: float,
            rules: Rules) -> Results:
    results = Results({line.label: [] for line in lines}, [], [], [])
    for seed in seeds:
        land = Landscape(random.Random(seed))
        val_norm, test_norm = norm_for(land, "val"), norm_for(land, "test")
        seed_val, opt_val = land.expected(Genome(SEED_RULES), "val", val_norm), land.optimum("val", val_norm)
        results.lands.append(land)
        results.optima.append((seed_val, opt_val, land.expected(Genome(SEED_RULES), "test", test_norm),
                               land.optimum("test", test_norm)))
        results.targets.append(seed_val + 0.9 * (opt_val - seed_val))
        for line in lines:
            results.rows[line.label].append(run_search(land, line, budget, replicates, seed, raw_threshold, rules))
    return results


def print_header(args: argparse.Namespace, seeds: range, res: Results, rules: Rules) -> None:
    land = res.lands[-1]
    print(f"Synthetic landscape from the fakes: {len(seeds)} seeds ({seeds.start}..{seeds.stop - 1}), an equal "
          f"budget of {args.budget} rollouts per line (val + train cells), {args.replicates} replicates, val "
          f"{len(land.suites['val'])} tasks, test {len(land.suites['test'])} tasks.")
    print(f"Landscape {landscape_hash()} · simulated mutator {mutator_hash()} · these seeds' draws "
          f"{draws_hash(res.lands)} (sha256 of their definitions; a different hash is a different bench).")
    evidence = rules.evidence_replicates or args.replicates
    print(f"Gate as configured: minImprovement {rules.min_improvement:g}, gateZ {rules.gate_z:g}, {rules.method}, "
          f"tieRule {rules.tie_rule}; train evidence {evidence} replicate(s) (evidenceReplicates "
          f"{rules.evidence_replicates}).")
    print(f"True composite (mean over seeds): seed val {statistics.mean(o[0] for o in res.optima):.4f} → optimum "
          f"{statistics.mean(o[1] for o in res.optima):.4f}; seed test {statistics.mean(o[2] for o in res.optima):.4f}"
          f" → optimum {statistics.mean(o[3] for o in res.optima):.4f}.")
    print(f"Lines: greedy = the gate as configured; greedy-keepties = the gate keeping every tie (tieRule keep); "
          f"greedy-nogate = keep iff Δ > 0; greedy-raw = keep iff Δ ≥ {args.raw_threshold:g} (gateZ 0); best-of-N = "
          "independent mutants of the seed, best measured val.")
    print("'to 90%': rollouts until the incumbent's TRUE val composite closes 90% of the seed→optimum gap; the "
          "median counts the seeds that never got there as censored at '> budget'.\n")


def print_table(res: Results, budget: int) -> None:
    header = (f"| {'line':<15} | {'reached 90%':>11} | {'median to 90%':>13} | {'final val (measured)':>20} | "
              f"{'final val (true)':>17} | {'final test (true)':>17} | {'rollouts':>8} | {'cost USD':>8} |")
    print(header)
    print("|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|")
    for label, outcomes in res.rows.items():
        hits = [to_target(o, t) for o, t in zip(outcomes, res.targets, strict=True)]
        reached = sum(h is not None for h in hits)
        print(f"| {label:<15} | {reached:>5}/{len(outcomes):<5} | {censored_median(hits, budget):>13} | "
              f"{mean_se([o.val_measured for o in outcomes]):>20} | "
              f"{mean_se([o.curve[-1][1] for o in outcomes]):>17} | {mean_se([o.test_true for o in outcomes]):>17} | "
              f"{statistics.mean(o.rollouts for o in outcomes):>8.0f} | {statistics.mean(o.usd for o in outcomes):>8.2f} |")


def print_tests(res: Results, n_seeds: int) -> None:
    rows = res.rows
    pairs = len(rows) * (len(rows) - 1) // 2
    floor = 2 / 2 ** n_seeds   # the smallest two-sided Wilcoxon p over this many seeds (every sign one way)
    if floor >= 0.05 / max(pairs, 1):
        print(f"Note: with {n_seeds} seeds no pair can be significant here: the smallest Wilcoxon p is "
              f"{floor:.2g}, Holm's first step over {pairs} pairs needs < {0.05 / max(pairs, 1):.2g}; run --seeds 32.")
    others = [label for label in GATELESS if label in rows]
    if DEFAULT in rows and others:
        print(f"The default against the gate-less lines on the final TRUE test composite (paired over {n_seeds} "
              f"seeds, Holm over these {len(others)}): " + "; ".join(against(rows, lambda o: o.test_true, DEFAULT,
                                                                             others)) + ".")
    if DEFAULT in rows and "greedy-keepties" in rows:
        print("The default against the gate keeping every tie: "
              + against(rows, lambda o: o.test_true, DEFAULT, ["greedy-keepties"])[0] + ".")
    for name, metric in (("final TRUE test composite", lambda o: o.test_true),
                         ("final TRUE val composite", lambda o: o.curve[-1][1])):
        found = significant(rows, metric)
        print(f"Significant on {name} (Wilcoxon signed-rank, paired over {n_seeds} seeds, Holm-adjusted "
              f"p < 0.05 over all {pairs} pairs): " + ("; ".join(found) if found else "none")
              + (" — every other difference is not." if found else "."))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--seeds", type=int, default=8, help="landscapes (paired across lines); 32 for the full "
                    "comparison (default 8 to stay quick)")
    ap.add_argument("--seed-offset", type=int, default=0, help="the first seed (default 0); e.g. 1000 for seeds "
                    "no tuning has seen")
    ap.add_argument("--budget", type=int, default=640, help="rollouts (cells) per search, val + train; every line "
                    "stops before an evaluation would pass it")
    ap.add_argument("--replicates", type=int, default=2)
    ap.add_argument("--raw-threshold", type=float, default=RAW_THRESHOLD,
                    help=f"the greedy-raw line keeps iff Δ ≥ this (gateZ 0; default {RAW_THRESHOLD})")
    ap.add_argument("--tie-rule", choices=("keep", "noAddedCost"), help="the gate's tie rule for the gated lines "
                    "(default: score.tieRule in config.json)")
    ap.add_argument("--evidence-replicates", type=int, help="replicates of a kept candidate's train evaluation, "
                    "0 = --replicates (default: evidenceReplicates in config.json)")
    ap.add_argument("--lines", help="comma-separated line labels to run (default: all but greedy-oracle, which keeps "
                    "iff the TRUE val composite rises: every keep decision right, for reference)")
    args = ap.parse_args(argv)
    started = time.monotonic()
    rules = Rules.from_config()
    rules = Rules(rules.min_improvement, rules.gate_z, rules.method, args.tie_rule or rules.tie_rule,
                  rules.evidence_replicates if args.evidence_replicates is None else args.evidence_replicates)
    wanted = set(args.lines.split(",")) if args.lines else {line.label for line in LINES}
    unknown = wanted - {line.label for line in LINES + EXTRA}
    if unknown:
        ap.error(f"--lines: unknown {', '.join(sorted(unknown))}; the lines are "
                 f"{', '.join(x.label for x in LINES + EXTRA)}")
    seeds = range(args.seed_offset, args.seed_offset + args.seeds)
    res = run_all(seeds, tuple(line for line in LINES + EXTRA if line.label in wanted), args.budget, args.replicates,
                  args.raw_threshold, rules)
    print_header(args, seeds, res, rules)
    print_table(res, args.budget)
    print(f"\n± is the standard error over seeds. Wall time {time.monotonic() - started:.1f} s.")
    print_tests(res, args.seeds)


if __name__ == "__main__":
    main()
