#!/usr/bin/env python3
"""GEPA on our bench: the real `gepa` package against our strategies on the landscape of bench/strategies.py.

GEPA drives the search; an adapter runs the landscape's cells and the same simulated mutator proposes the
children (its `custom_candidate_proposer`). One metric call = one cell = one task x one replicate on either
side, val and train alike, and every line stops before an evaluation would pass the same budget. The lines:
GEPA default (minibatch 3, instance frontier), GEPA with merge, and each line of bench/strategies.py. A bench
only: gepa is the `bench` extra (pip install -e '.[bench]') and never a dependency of mutator/ or eval/.

    python bench/peers.py [--seeds 32] [--budget 640] [--replicates 2] [--seed-offset 0]
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import importlib.util
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    import gepa
    from gepa.core.adapter import EvaluationBatch
    from gepa.strategies.eval_policy import FullEvaluationPolicy
except ImportError as exc:  # the bench extra is not installed
    raise SystemExit("bench/peers.py needs the gepa package: pip install -e '.[bench]'") from exc

from mutator.scoring.score import CellFigures, summarise  # noqa: E402


def _load_bench():
    # Loaded by path: run as `python bench/peers.py`, `import strategies` would find bench/strategies.py (this
    # folder is sys.path[0]) and shadow the strategies package it imports itself.
    path = ROOT / "bench" / "strategies.py"
    loaded = sys.modules.get("strategies_bench")
    if loaded is not None and Path(loaded.__file__) == path:
        return loaded  # the tests load it under the same name
    spec = importlib.util.spec_from_file_location("strategies_bench", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
Genome, Landscape, Outcome, OutOfBudget = bench.Genome, bench.Landscape, bench.Outcome, bench.OutOfBudget
SEED_RULES, WEIGHTS, MUTATOR_USD, LINES = bench.SEED_RULES, bench.WEIGHTS, bench.MUTATOR_USD, bench.LINES

# A genome as GEPA's candidate (dict[str, str]): one component per rule, its text the variant or OFF. One
# component per rule, not one text for the whole genome, because GEPA's merge works per component
# (gepa/proposer/merge.py: sample_and_attempt_merge_programs_by_common_predictors takes each component from
# the descendant that changed it): with one component a merge could only return one of its parents.
COMPONENTS = (*(op for op, _ in SEED_RULES), *bench.CATALOGUE)
OFF = "off"


def encode(genome: Genome) -> dict[str, str]:
    variants = dict(genome)  # at most one variant per rule: the mutator adds only rules the parent lacks
    return {op: str(variants[op]) if op in variants else OFF for op in COMPONENTS}


def decode(candidate: dict[str, str]) -> Genome:
    return Genome((op, int(text)) for op, text in candidate.items() if text != OFF)


class Item(NamedTuple):
    """One of GEPA's data instances: one cell, so GEPA's metric call is our rollout."""
    split: str
    task: str
    replicate: int


def run_cell(land: Landscape, genome: Genome, item: Item,
             rng: random.Random) -> tuple[CellFigures, list[str]]:
    """One cell of Landscape.cells and its failing grader tests. A restatement of that loop's body for one
    (task, replicate): Landscape has no per-cell method (the hook asked for is Landscape.cell)."""
    applied = frozenset(op for op, v in sorted(genome) if rng.random() >= land.skip[(op, v)])
    tests = land.tests(item.split, item.task, applied)
    cell = CellFigures(item.task, item.replicate, sum(tests.values()) / len(tests), land.cost(genome),
                       land.turns(genome), True)
    return cell, sorted(t for t, s in tests.items() if s < 1)


class LandscapeAdapter:
    """A GEPAAdapter (gepa/core/adapter.py, 0.1.4): `evaluate(batch, candidate, capture_traces)` returns an
    EvaluationBatch of per-item scores and `make_reflective_dataset` the failing tests. The score of a cell is
    its composite (eval − cost and steps terms, the real summarise() of one cell): the objective our lines'
    gate judges and the figure the table reports, so GEPA optimises what it is scored on. The adapter counts
    the metric calls itself and raises OutOfBudget before a batch would pass the budget, as Search.evaluate
    does: GEPA's own max_metric_calls is checked only between iterations (gepa/core/engine.py, run)."""

    propose_new_texts = None  # the protocol's optional proposer; ours goes in as custom_candidate_proposer

    def __init__(self, land: Landscape, budget: int, rng: random.Random, norms: dict) -> None:
        self.land, self.budget, self.rng, self.norms = land, budget, rng, norms
        self.calls, self.usd = 0, 0.0

    def evaluate(self, batch: list[Item], candidate: dict[str, str],
                 capture_traces: bool = False) -> EvaluationBatch:
        if self.calls + len(batch) > self.budget:
            raise OutOfBudget
        genome = decode(candidate)
        outputs, scores, traces = [], [], []
        for item in batch:
            cell, failing = run_cell(self.land, genome, item, self.rng)
            self.calls += 1
            self.usd += cell.cost_usd
            outputs.append(cell.score)
            scores.append(summarise([cell], WEIGHTS, self.norms[item.split]).composite)
            traces.append({"task": item.task, "replicate": item.replicate, "failing": failing})
        return EvaluationBatch(outputs=outputs, scores=scores,
                               trajectories=traces if capture_traces else None)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]) -> dict[str, list[dict[str, Any]]]:
        records = [{"Inputs": {"task": t["task"], "replicate": t["replicate"]},
                    "Generated Outputs": f"eval {out:.3f}",
                    "Feedback": "failing tests: " + (", ".join(t["failing"]) or "none"), "task": t["task"],
                    "failing": t["failing"]} for t, out in zip(eval_batch.trajectories, eval_batch.outputs)]
        return {name: records for name in components_to_update}


class MutatorProposer:
    """GEPA's ProposalFn (candidate, reflective_dataset, components_to_update) -> new texts: the bench's
    Mutator on the parent, shown the failing tests of the minibatch (our lines show it
    the parent's train failures)."""

    def __init__(self, mutator) -> None:
        self.mutator, self.calls = mutator, 0

    def __call__(self, candidate: dict[str, str], reflective_dataset: dict,
                 components_to_update: list[str]) -> dict:
        failing: dict[str, set[str]] = {}
        for record in next(iter(reflective_dataset.values()), []):  # every component gets the same records
            failing.setdefault(record["task"], set()).update(record["failing"])
        parent = decode(candidate)
        child, _ = self.mutator(parent, objective=None, refs=[], targets=(),
                                failing={task: sorted(tests) for task, tests in failing.items() if tests})
        self.calls += 1
        # a no-op gives no texts, and GEPA then skips the child's evaluation (reflective_mutation.py, Stage
        # 3c), as our critic rejects a no-op unevaluated
        return {op: text for op, text in encode(child).items() if text != candidate[op]}


class Recorder:
    """A GEPA callback (gepa/core/callbacks.py): after every iteration, the rollouts spent and the TRUE val
    composite of GEPA's current best (FullEvaluationPolicy.get_best_program, what GEPAResult returns).
    notify_callbacks swallows a callback's exception, so one is kept here and raised after the run."""

    def __init__(self, adapter: LandscapeAdapter, norm) -> None:
        self.adapter, self.norm = adapter, norm
        self.state, self.curve, self.error = None, [], None

    def best(self) -> tuple[Genome, float]:
        """GEPA's best candidate and its measured val composite (the mean of its val cells' scores)."""
        idx = FullEvaluationPolicy().get_best_program(self.state)
        scores = self.state.prog_candidate_val_subscores[idx]
        return decode(self.state.program_candidates[idx]), sum(scores.values()) / len(scores)

    def point(self) -> None:
        genome = self.best()[0]
        self.curve.append((self.adapter.calls, self.adapter.land.expected(genome, "val", self.norm)))

    def on_iteration_start(self, event: dict) -> None:
        if self.state is None:
            self.state = event["state"]
            self._guarded(self.point)  # the seed, after GEPA's seed evaluation on val

    def on_iteration_end(self, event: dict) -> None:
        self._guarded(self.point)

    def _guarded(self, step) -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 — kept and raised after the run
            self.error = self.error or exc


class Silent:
    """GEPA's LoggerProtocol, quiet: its StdOutLogger prints every iteration."""

    def log(self, message: str) -> None:
        pass


@dataclass(frozen=True)
class PeerLine:
    """One GEPA contender: its optimize() settings."""
    label: str
    use_merge: bool = False
    minibatch: int = 3
    frontier: str = "instance"


PEER_LINES = (PeerLine("gepa"), PeerLine("gepa-merge", use_merge=True))


@dataclass
class PeerRun:
    outcome: Outcome
    # GEPA's own count, state.total_num_evals: equal to ours when a metric call is a cell
    gepa_calls: int
    candidates: int
    merges: int
    mutator_calls: int


def run_gepa(land: Landscape, line: PeerLine, budget: int, replicates: int, seed: int) -> PeerRun:
    norms = {split: bench.norm_for(land, split) for split in ("train", "val", "test")}
    adapter = LandscapeAdapter(land, budget, random.Random(f"bench:{seed}:{line.label}"), norms)
    proposer = MutatorProposer(bench.Mutator(land, random.Random(f"mutator:{seed}:{line.label}")))
    recorder = Recorder(adapter, norms["val"])
    items = {split: [Item(split, task, rep) for task in land.suites[split] for rep in range(replicates)]
             for split in ("train", "val")}
    try:  # gepa/api.py, optimize (0.1.4)
        gepa.optimize(seed_candidate=encode(Genome(SEED_RULES)), trainset=items["train"], valset=items["val"],
                      adapter=adapter, custom_candidate_proposer=proposer,
                      reflection_minibatch_size=line.minibatch, frontier_type=line.frontier,
                      use_merge=line.use_merge, max_metric_calls=budget, seed=seed, logger=Silent(),
                      callbacks=[recorder], raise_on_exception=True)
    except OutOfBudget:
        pass  # the next evaluation would have passed the budget: GEPA ends where it stands
    if recorder.error is not None:
        raise recorder.error
    recorder.point()
    best, val_measured = recorder.best()
    state = recorder.state
    outcome = Outcome(recorder.curve, val_measured, land.expected(best, "test", norms["test"]), adapter.calls,
                      adapter.usd + proposer.calls * MUTATOR_USD)
    merges = sum(len([p for p in parents if p is not None]) > 1
                 for parents in state.parent_program_for_candidate)
    return PeerRun(outcome, state.total_num_evals, len(state.program_candidates), merges, proposer.calls)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p values, in the input order."""
    order = sorted(range(len(pvalues)), key=pvalues.__getitem__)
    adjusted, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def versus(rows: dict[str, list[Outcome]], peers: list[str], ours: list[str], metric) -> list[tuple]:
    """Each GEPA line against each other and against each of our lines: the mean paired difference, the
    Wilcoxon p and the Holm p over this family of pairs."""
    pairs = [(a, b) for i, a in enumerate(peers)
             for b in peers[i + 1:]] + [(p, line) for p in peers for line in ours]
    diffs, raw = [], []
    for peer, line in pairs:
        a, b = [metric(o) for o in rows[peer]], [metric(o) for o in rows[line]]
        diffs.append(statistics.mean(x - y for x, y in zip(a, b, strict=True)))
        raw.append(bench.wilcoxon_p(a, b))
    return [(*pair, d, p, q) for pair, d, p, q in zip(pairs, diffs, raw, holm(raw), strict=True)]


def print_significance(rows: dict[str, list[Outcome]], seeds: int, ours: list[str]) -> None:
    peers = [p.label for p in PEER_LINES]
    for name, metric in (("final TRUE test composite", lambda o: o.test_true),
                         ("final TRUE val composite", lambda o: o.curve[-1][1])):
        found = versus(rows, peers, ours, metric)
        print(f"\nGEPA lines on {name}: mean paired difference, Wilcoxon signed-rank p over {seeds} seeds, "
              f"Holm p over these {len(found)} pairs:")
        for peer, line, diff, p, q in found:
            better, worse = (peer, line) if diff > 0 else (line, peer)
            verdict = f"significant: {better} > {worse}" if q < 0.05 else "not significant"
            print(f"  {peer:<10} − {line:<21} {diff:+.4f}  p={p:<8.2g} Holm p={q:<8.2g} {verdict}")


def one_seed(seed: int, ours: tuple, budget: int,
             replicates: int) -> tuple[float, dict[str, PeerRun], dict[str, Outcome]]:
    """One seed's 90% target, GEPA's runs and our lines' outcomes."""
    land = Landscape(random.Random(seed))
    val_norm = bench.norm_for(land, "val")
    seed_val = land.expected(Genome(SEED_RULES), "val", val_norm)
    return (seed_val + 0.9 * (land.optimum("val", val_norm) - seed_val),
            {peer.label: run_gepa(land, peer, budget, replicates, seed) for peer in PEER_LINES},
            {line.label: bench.run_search(land, line, budget, replicates, seed) for line in ours})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=32, help="landscapes (paired across lines)")
    ap.add_argument("--budget", type=int, default=640, help="metric calls = rollouts = cells per search, val "
                    "+ train; every line stops before an evaluation would pass it")
    ap.add_argument("--replicates", type=int, default=2)
    ap.add_argument("--seed-offset", type=int, default=0, help="the first landscape seed")
    ap.add_argument("--lines", help="comma-separated labels of our lines to run beside GEPA's (default: "
                    "every line of bench/strategies.py)")
    ap.add_argument("--jobs", type=int, default=1, help="seeds run in this many processes "
                                                        "at once (the same table)")
    args = ap.parse_args(argv)
    ours = tuple(line for line in LINES if not args.lines or line.label in args.lines.split(","))
    unknown = set(args.lines.split(",")) - {line.label for line in LINES} if args.lines else set()
    if unknown:
        ap.error(f"--lines: unknown {', '.join(sorted(unknown))}; the lines are "
                 f"{', '.join(x.label for x in LINES)}")
    suites = Landscape(random.Random(0)).suites
    seed_cells = args.replicates * (len(suites["val"]) + len(suites["train"]))  # our lines' first evaluations
    if args.budget < seed_cells:
        ap.error(f"--budget {args.budget} does not cover the seed's own val + train cells ({seed_cells})")
    started = time.monotonic()
    rows: dict[str, list[Outcome]] = {line.label: [] for line in (*PEER_LINES, *ours)}
    runs: dict[str, list[PeerRun]] = {line.label: [] for line in PEER_LINES}
    targets = []
    work = functools.partial(one_seed, ours=ours, budget=args.budget, replicates=args.replicates)
    for target, peer_runs, outcomes in bench.over_seeds(work, range(args.seed_offset,
                                                                    args.seed_offset + args.seeds),
                                                        args.jobs):
        targets.append(target)
        for label, run in peer_runs.items():
            runs[label].append(run)
            rows[label].append(run.outcome)
        for label, outcome in outcomes.items():
            rows[label].append(outcome)
    land = Landscape(random.Random(args.seed_offset))
    print(f"GEPA {importlib.metadata.version('gepa')} on the landscape of bench/strategies.py: {args.seeds} "
          f"seeds (from {args.seed_offset}), {args.budget} metric calls per line (one call = one cell, val + "
          f"train), {args.replicates} replicates, val {len(land.suites['val'])} tasks, train "
          f"{len(land.suites['train'])}.")
    print("gepa = GEPA default (minibatch 3, instance Pareto frontier); gepa-merge = the same with "
          "use_merge (5 merges at most); both propose with our simulated mutator. The other lines are "
          f"bench/strategies.py's; {bench.DEFAULT} is config.json's default.")
    print("'to 90%': rollouts until the TRUE val composite of the line's current best closes 90% of the "
          "seed→optimum gap; the median counts the seeds that never got there as censored at '> budget'.\n")
    bench.print_table(rows, targets, args.budget)
    print(f"\n± is the standard error over seeds. Wall time {time.monotonic() - started:.1f} s.\n")
    print("Our lines' cells per decision (as bench/strategies.py prints them):")
    bench.print_cells({line.label: rows[line.label] for line in ours})
    print()
    bench.print_tests({line.label: rows[line.label] for line in ours}, args.seeds)
    bench.print_choice({line.label: rows[line.label] for line in ours}, args.seeds)
    print()
    for label, peer_runs in runs.items():
        print(f"{label}: per run {statistics.mean(r.mutator_calls for r in peer_runs):.0f} mutator calls, "
              f"{statistics.mean(r.candidates for r in peer_runs):.1f} candidates kept (seed included), "
              f"{statistics.mean(r.merges for r in peer_runs):.1f} merges accepted; GEPA's own metric-call "
              "count equals ours in "
              f"{sum(r.gepa_calls == r.outcome.rollouts for r in peer_runs)}/{len(peer_runs)} runs.")
    pairs = len(PEER_LINES) * (len(PEER_LINES) - 1) // 2 + len(PEER_LINES) * len(ours)
    if 2 / 2 ** args.seeds >= 0.05 / pairs:
        print(f"Note: with {args.seeds} seeds no pair can be significant (the smallest Wilcoxon p is "
              f"{2 / 2 ** args.seeds:.2g}); run --seeds 32.")
    print_significance(rows, args.seeds, [line.label for line in ours])


if __name__ == "__main__":
    main()
