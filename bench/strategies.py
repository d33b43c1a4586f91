#!/usr/bin/env python3
"""Which search pays? greedy, branching, population, pareto and best-of-N on one synthetic landscape.

The landscape is built from the fakes: a genome is a set of CSV rules (fakes/csv_rules.py ops), a
cell applies each rule unless the agent fumbles it (skip probability = the rule implementation's
quality), and the demo grader scores the output against the answer key. Some rules help some tasks,
titlecase hurts, three rules only add turns (cost). The optimum is enumerated exactly. The REAL
strategy classes and the REAL gate (mutator/scoring/score.py) run in a loop mirroring mutator/round/loop.py, with a
simulated mutator shared by all strategies. Everything runs in-process: no agents, no database.

Every line gets the same rollout budget (val + train cells; best-of-N included) and stops before an evaluation
would pass it. Beside the real gate, two greedy lines judge candidates without it: keep iff Δ > 0, and a raw
threshold (keep iff Δ ≥ τ, gateZ 0). The last lines name the differences that are significant, paired over seeds.

    python bench/strategies.py [--seeds 8] [--budget 640] [--replicates 2]     (--seeds 32 for the full run)
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fakes.csv_rules import apply_rules, read_csv  # noqa: E402
from mutator.scoring.score import CellFigures, Comparison, Normalisers, Weights, compare, per_task, summarise  # noqa: E402
from strategies import Member, Scored, State, make_strategy  # noqa: E402

SEED_RULES = (("trim", 0), ("headers", 0))
HELPFUL = ("dates", "amounts", "booleans", "emails", "dedupe")
CATALOGUE = (*HELPFUL, "titlecase", "notes", "verify", "examples")   # the last three: cost only
TEST_RULES = {"dates": "dates", "amounts": "amounts", "flags": "booleans", "emails": "emails", "rows": "dedupe"}
VARIANTS = 3
WEIGHTS = Weights(0.1, 0.02)
MUTATOR_USD = 3000 * 5e-6 + 400 * 25e-6            # one fake mutator call priced as claude-opus-4-5
PER_TURN_IN, PER_TURN_OUT = 900, 80                 # fake agent tokens per turn (haiku: $1 / $5 per M)
SMART = 0.5                                         # chance the mutator acts on its evidence, else a random change
RAW_THRESHOLD = 0.02                                # the raw-threshold line: keep iff Δ ≥ this (gateZ 0)

Genome = frozenset  # of (op, variant)


def load_grader():
    spec = importlib.util.spec_from_file_location("csv_grader", ROOT / "suites" / "csv_grader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.grade


class Landscape:
    def __init__(self, rng: random.Random) -> None:
        grade = load_grader()
        self.suites = {}
        for split in ("train", "val", "test"):
            folder = ROOT / "suites" / f"clean-{split}"
            tasks = [json.loads(line)["id"] for line in (folder / "tasks.jsonl").read_text().splitlines() if line]
            self.suites[split] = {t: (read_csv(folder / "fixtures" / t / "input.csv"),
                                      read_csv(folder / "answers" / f"{t}.csv")) for t in tasks}
        self._grade, self._cache, self._expected = grade, {}, {}
        # each rule has VARIANTS implementations of different reliability (the fumble rate per cell)
        self.skip = {(op, v): rng.choice((0.02, 0.08, 0.30)) for op in CATALOGUE for v in range(VARIANTS)}
        self.skip.update({rule: 0.0 for rule in SEED_RULES})

    def tests(self, split: str, task: str, applied: frozenset) -> dict[str, float]:
        key = (split, task, applied)
        if key not in self._cache:
            rows, answer = self.suites[split][task]
            self._cache[key] = self._grade(answer, apply_rules(rows, sorted(applied)))
        return self._cache[key]

    def score(self, split: str, task: str, applied: frozenset) -> float:
        tests = self.tests(split, task, applied)
        return sum(tests.values()) / len(tests)

    @staticmethod
    def turns(genome: Genome) -> int:
        return 2 + len(genome)                         # read, one per rule, write

    def cost(self, genome: Genome) -> float:
        return self.turns(genome) * (PER_TURN_IN + 40 * len(genome)) * 1e-6 + self.turns(genome) * PER_TURN_OUT * 5e-6

    def cells(self, genome: Genome, split: str, replicates: int,
              rng: random.Random) -> tuple[list[CellFigures], dict[str, list[str]]]:
        """Measured cells, and per task the grader tests that failed in any replicate (the train evidence)."""
        out, failing = [], {}
        for task in self.suites[split]:
            for rep in range(replicates):
                applied = frozenset(op for op, v in genome if rng.random() >= self.skip[(op, v)])
                tests = self.tests(split, task, applied)
                failing.setdefault(task, set()).update(t for t, s in tests.items() if s < 1)
                out.append(CellFigures(task, rep, sum(tests.values()) / len(tests), self.cost(genome),
                                       self.turns(genome), True))
        return out, {t: sorted(v) for t, v in failing.items() if v}

    def expected(self, genome: Genome, split: str, norm: Normalisers) -> float:
        """The genome's true composite: every fumble pattern weighted by its probability."""
        key = (genome, split)
        if key not in self._expected:
            self._expected[key] = self._exact(genome, split, norm)
        return self._expected[key]

    def _exact(self, genome: Genome, split: str, norm: Normalisers) -> float:
        # only fumble-able rules that change the output need enumerating; the rest are always "applied"
        rules = sorted(r for r in genome if r[0] in (*HELPFUL, "titlecase") and self.skip[r] > 0)
        fixed = [op for op, v in genome if (op, v) not in rules]
        total = 0.0
        for task in self.suites[split]:
            for pattern in itertools.product((True, False), repeat=len(rules)):
                p, applied = 1.0, list(fixed)
                for (op, v), on in zip(rules, pattern, strict=True):
                    s = self.skip[(op, v)]
                    p *= (1 - s) if on else s
                    if on:
                        applied.append(op)
                if p:
                    total += p * self.score(split, task, frozenset(applied))
        mean = total / len(self.suites[split])
        return mean - WEIGHTS.w_cost * self.cost(genome) / norm.seed_cost - WEIGHTS.w_steps * self.turns(genome) / norm.seed_steps

    def optimum(self, split: str, norm: Normalisers) -> float:
        best_variant = {op: min(range(VARIANTS), key=lambda v: self.skip[(op, v)]) for op in CATALOGUE}
        return max(self.expected(Genome(SEED_RULES) | {(op, best_variant[op]) for op in subset}, split, norm)
                   for k in range(len(HELPFUL) + 2) for subset in itertools.combinations((*HELPFUL, "titlecase"), k))


def norm_for(land: Landscape, split: str) -> Normalisers:
    seed = Genome(SEED_RULES)
    return Normalisers(land.cost(seed), land.turns(seed))


class Mutator:
    """One change per call, the same for every strategy: follow an objective, merge a ref, act on
    failing train tests (the targets, else the parent's worst tasks) or make a random change."""

    def __init__(self, land: Landscape, rng: random.Random) -> None:
        self.land, self.rng = land, rng

    def __call__(self, parent: Genome, *, objective: str | None, refs: list[Genome], failing: dict[str, list[str]],
                 targets: tuple[str, ...]) -> tuple[Genome, str]:
        have = {op for op, _ in parent}
        variant = self.rng.randrange(VARIANTS)
        if objective in CATALOGUE and objective not in have:
            return parent | {(objective, variant)}, objective
        for ref in refs:
            lend = sorted(rule for rule in ref - parent if rule[0] not in have)
            if lend:
                rule = self.rng.choice(lend)
                return parent | {rule}, rule[0]
        if failing and self.rng.random() < SMART:
            focus = [t for t in targets if t in failing] or sorted(failing, key=lambda t: -len(failing[t]))[:3]
            wanted = [TEST_RULES[t] for task in focus for t in failing[task] if t in TEST_RULES]
            wanted = [op for op in wanted if op not in have]
            if wanted:
                op = max(sorted(set(wanted)), key=wanted.count)
                return parent | {(op, variant)}, op
        extra = sorted(rule for rule in parent if rule not in SEED_RULES)
        if extra and self.rng.random() < 0.15:
            rule = self.rng.choice(extra)
            return parent - {rule}, f"-{rule[0]}"
        options = [op for op in CATALOGUE if op not in have]
        op = self.rng.choice(options) if options else "notes"
        return parent | {(op, variant)}, op


class OutOfBudget(Exception):
    """The next evaluation would pass the line's rollout budget: the search ends where it stands."""


@dataclass(frozen=True)
class Line:
    """One contender: a strategy and how its candidates are judged against the incumbent."""
    label: str
    strategy: str
    opts: dict
    keep: str = "gate"        # 'gate' (the real gate, gateZ 1) | 'positive' (Δ > 0, no gate) | 'raw' (Δ ≥ τ, gateZ 0)


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
                 raw_threshold: float = RAW_THRESHOLD) -> None:
        self.land, self.line, self.budget, self.replicates, self.seed = land, line, budget, replicates, seed
        self.raw_threshold = raw_threshold
        self.rng = random.Random(f"bench:{seed}:{line.label}")
        self.mutator = Mutator(land, random.Random(f"mutator:{seed}:{line.label}"))
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
            if self.spent["rollouts"] + self.replicates * len(self.land.suites[split]) > self.budget:
                raise OutOfBudget  # every line stops at the same hard rollout cap
            store[g], failing_tests = self.land.cells(g, split, self.replicates, self.rng)
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
        if self.line.keep == "raw":
            gate = compare(cand, base, prior=prior, min_improvement=self.raw_threshold, gate_z=0.0)
            return gate, gate.keep
        gate = compare(cand, base, prior=prior, min_improvement=0.0, gate_z=1.0)
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
            cand = per_task(self.evaluate(child, "val", self.val_cells), WEIGHTS, self.norms["val"])
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
               raw_threshold: float = RAW_THRESHOLD) -> Outcome:
    return Search(land, line, budget, replicates, seed, raw_threshold).run()


def mean_se(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.4f}" if values else "—"
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values) / len(values) ** 0.5:.4f}"


LINES = (
    Line("greedy", "greedy", {}),
    Line("greedy-nogate", "greedy", {}, keep="positive"),
    Line("greedy-raw", "greedy", {}, keep="raw"),
    Line("branching", "branching", {"width": 3}),
    Line("population", "population", {}),
    Line("pareto", "pareto", {}),
    Line("best-of-n", "best-of-n", {}),
)


def to_target(outcome: Outcome, target: float) -> int | None:
    """Rollouts spent when the incumbent's TRUE val composite first reached `target`; None = censored (never)."""
    return next((r for r, v in outcome.curve if v >= target - 1e-12), None)


def censored_median(hits: list[int | None], budget: int) -> str:
    """The median of rollouts-to-target with the censored seeds counted as 'more than the budget'."""
    ordered = sorted(math.inf if h is None else h for h in hits)
    mid = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    if math.isinf(mid[1]):
        return f"> {budget}"
    return f"{statistics.mean(mid):.0f}"


def wilcoxon_p(a: list[float], b: list[float]) -> float:
    """Two-sided Wilcoxon signed-rank p over paired seeds; 1 when every pair ties."""
    from scipy import stats
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if all(abs(d) < 1e-12 for d in diffs):
        return 1.0
    return float(stats.wilcoxon(a, b, zero_method="wilcox").pvalue)


def significant(rows: dict[str, list[Outcome]], metric, alpha: float = 0.05) -> list[str]:
    """Every pair of lines whose paired difference in `metric` is significant after Holm's correction."""
    labels = list(rows)
    tests = []
    for i, x in enumerate(labels):
        for y in labels[i + 1:]:
            a, b = [metric(o) for o in rows[x]], [metric(o) for o in rows[y]]
            better, worse = (x, y) if statistics.mean(a) >= statistics.mean(b) else (y, x)
            tests.append((wilcoxon_p(a, b), better, worse))
    tests.sort()
    found = []
    for rank, (p, better, worse) in enumerate(tests):
        if p * (len(tests) - rank) >= alpha:
            break  # Holm: stop at the first pair that fails its step-down level
        found.append(f"{better} > {worse} (p={p:.2g})")
    return found


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=8, help="landscapes (paired across lines); 32 for the full "
                    "comparison (default 8 to stay quick)")
    ap.add_argument("--budget", type=int, default=640, help="rollouts (cells) per search, val + train; every line "
                    "stops before an evaluation would pass it")
    ap.add_argument("--replicates", type=int, default=2)
    ap.add_argument("--raw-threshold", type=float, default=RAW_THRESHOLD,
                    help=f"the greedy-raw line keeps iff Δ ≥ this (gateZ 0; default {RAW_THRESHOLD})")
    args = ap.parse_args(argv)
    started = time.monotonic()
    rows: dict[str, list[Outcome]] = {line.label: [] for line in LINES}
    targets, optima = [], []
    for seed in range(args.seeds):
        land = Landscape(random.Random(seed))
        val_norm, test_norm = norm_for(land, "val"), norm_for(land, "test")
        seed_val, opt_val = land.expected(Genome(SEED_RULES), "val", val_norm), land.optimum("val", val_norm)
        optima.append((seed_val, opt_val, land.expected(Genome(SEED_RULES), "test", test_norm),
                       land.optimum("test", test_norm)))
        targets.append(seed_val + 0.9 * (opt_val - seed_val))
        for line in LINES:
            rows[line.label].append(run_search(land, line, args.budget, args.replicates, seed, args.raw_threshold))
    print(f"Synthetic landscape from the fakes: {args.seeds} seeds, an equal budget of {args.budget} rollouts per "
          f"line (val + train cells), {args.replicates} replicates, val {len(land.suites['val'])} tasks, "
          f"test {len(land.suites['test'])} tasks.")
    print(f"True composite (mean over seeds): seed val {statistics.mean(o[0] for o in optima):.4f} → optimum "
          f"{statistics.mean(o[1] for o in optima):.4f}; seed test {statistics.mean(o[2] for o in optima):.4f} → "
          f"optimum {statistics.mean(o[3] for o in optima):.4f}.")
    print("Lines: greedy = the real gate (gateZ 1); greedy-nogate = keep iff Δ > 0; greedy-raw = keep iff "
          f"Δ ≥ {args.raw_threshold:g} (gateZ 0); best-of-N = independent mutants of the seed, best measured val.")
    print("'to 90%': rollouts until the incumbent's TRUE val composite closes 90% of the seed→optimum gap; the "
          "median counts the seeds that never got there as censored at '> budget'.\n")
    header = (f"| {'line':<13} | {'reached 90%':>11} | {'median to 90%':>13} | {'final val (measured)':>20} | "
              f"{'final val (true)':>17} | {'final test (true)':>17} | {'rollouts':>8} | {'cost USD':>8} |")
    print(header)
    print("|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|")
    for label, outcomes in rows.items():
        hits = [to_target(o, t) for o, t in zip(outcomes, targets, strict=True)]
        reached = sum(h is not None for h in hits)
        print(f"| {label:<13} | {reached:>5}/{len(outcomes):<5} | {censored_median(hits, args.budget):>13} | "
              f"{mean_se([o.val_measured for o in outcomes]):>20} | "
              f"{mean_se([o.curve[-1][1] for o in outcomes]):>17} | {mean_se([o.test_true for o in outcomes]):>17} | "
              f"{statistics.mean(o.rollouts for o in outcomes):>8.0f} | {statistics.mean(o.usd for o in outcomes):>8.2f} |")
    print(f"\n± is the standard error over seeds. Wall time {time.monotonic() - started:.1f} s.")
    pairs = len(LINES) * (len(LINES) - 1) // 2
    floor = 2 / 2 ** args.seeds   # the smallest two-sided Wilcoxon p over this many seeds (every sign one way)
    if floor >= 0.05 / pairs:
        print(f"Note: with {args.seeds} seeds no pair can be significant here: the smallest Wilcoxon p is "
              f"{floor:.2g}, Holm's first step over {pairs} pairs needs < {0.05 / pairs:.2g}; run --seeds 32.")
    for name, metric in (("final TRUE test composite", lambda o: o.test_true),
                         ("final TRUE val composite", lambda o: o.curve[-1][1])):
        found = significant(rows, metric)
        print(f"Significant on {name} (Wilcoxon signed-rank, paired over {args.seeds} seeds, Holm-adjusted "
              f"p < 0.05): " + ("; ".join(found) if found else "none") + (" — every other difference is not."
                                                                          if found else "."))


if __name__ == "__main__":
    main()
