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

import functools
import importlib.metadata
import importlib.util
import json
import math
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
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

from bench import calibrated, threshold_oracle  # noqa: E402
from bench import peers_report as report  # noqa: E402
from mutator.scoring.score import summarise  # noqa: E402


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


class RuleCodec:
    """The quiet landscape's genome as GEPA's candidate: one component per rule (encode/decode above)."""

    def seed(self, genome: Genome) -> dict[str, str]:
        return encode(genome)

    def decode(self, candidate: dict[str, str]) -> Genome:
        return decode(candidate)

    def texts(self, candidate: dict[str, str], child: Genome) -> dict[str, str]:
        return {op: text for op, text in encode(child).items() if text != candidate[op]}


class SlotCodec:
    """A calibrated landscape's genome (a set of edit ids) as GEPA's candidate: SLOTS components, each an edit
    id or OFF. A child's new edit goes in its parent's first free slot and a dropped one leaves its slot, so
    GEPA's per-component merge combines the edits two descendants added."""
    SLOTS = 48

    def seed(self, genome: frozenset) -> dict[str, str]:
        ids = sorted(genome)
        return {f"slot{i:02d}": ids[i] if i < len(ids) else OFF for i in range(self.SLOTS)}

    def decode(self, candidate: dict[str, str]) -> frozenset:
        return frozenset(text for text in candidate.values() if text != OFF)

    def texts(self, candidate: dict[str, str], child: frozenset) -> dict[str, str]:
        parent = self.decode(candidate)
        out = {slot: OFF for slot, text in candidate.items() if text != OFF and text not in child}
        free = [slot for slot, text in candidate.items() if text == OFF or slot in out]
        for eid in sorted(child - parent):
            out[free.pop(0)] = eid
        return out


def codec_for(land) -> RuleCodec | SlotCodec:
    return SlotCodec() if isinstance(land, calibrated.Calibrated) else RuleCodec()


class Item(NamedTuple):
    """One of GEPA's data instances: one cell, so GEPA's metric call is our rollout."""
    split: str
    task: str
    replicate: int


def stream(seed: int, k: int) -> str:
    """The keyed stream of the k-th run of a cell (k = 0: the first, the stream every line's first run draws;
    bench/search.py's cache never runs a cell twice)."""
    return str(seed) if k == 0 else f"{seed}#{k}"


class LandscapeAdapter:
    """A GEPAAdapter (gepa/core/adapter.py, 0.1.4): `evaluate(batch, candidate, capture_traces)` returns an
    EvaluationBatch of per-item scores and `make_reflective_dataset` the failing tests. A cell is the
    landscape's
    own (Landscape.cell / Calibrated.cell) drawn from the keyed stream (seed, split, task, replicate, genome,
    k-th run): a genome's first run of a cell is the cell every line of the seed sees, a re-run a fresh draw.
    The score of a cell is its composite (the real summarise() of one cell), the objective our lines' gate
    judges. The adapter counts the metric calls itself, by what they were for, and raises OutOfBudget before a
    batch would pass the budget, as Search.evaluate does: GEPA's own max_metric_calls is checked only between
    iterations (gepa/core/engine.py, run)."""

    propose_new_texts = None  # the protocol's optional proposer; ours goes in as custom_candidate_proposer

    def __init__(self, land, budget: int, seed: int, norms: dict, codec) -> None:
        self.land, self.budget, self.seed, self.norms, self.codec = land, budget, seed, norms, codec
        self.calls, self.usd = 0, 0.0
        self.runs: Counter = Counter()     # (genome, item) -> runs so far
        self.phase: str | None = None      # set by Recorder from GEPA's evaluation events
        self.split: Counter = Counter()    # metric calls by purpose

    def evaluate(self, batch: list[Item], candidate: dict[str, str],
                 capture_traces: bool = False) -> EvaluationBatch:
        if self.calls + len(batch) > self.budget:
            raise OutOfBudget
        genome = self.codec.decode(candidate)
        outputs, scores, traces = [], [], []
        for item in batch:
            k = self.runs[(genome, item)]
            self.runs[(genome, item)] += 1
            cell, failing = self.land.cell(genome, item.split, item.task, item.replicate,
                                           stream=stream(self.seed, k))
            self.calls += 1
            self.usd += cell.cost_usd
            purpose = ("merge" if self.phase == "merge" else "full val") if item.split == "val" else \
                (self.phase or "child minibatch")
            self.split[purpose + (" (re-run)" if k else "")] += 1
            outputs.append(cell.score)
            scores.append(summarise([cell], WEIGHTS, self.norms[item.split]).composite + SHIFT)
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
    mutator on the parent, on the seed's shared stream (bench/calibrated.py mutator_for), shown the failing
    tests of the minibatch (our lines show it the parent's train failures)."""

    def __init__(self, mutator, codec=None) -> None:
        self.mutator, self.codec, self.calls = mutator, codec or RuleCodec(), 0
        self.seen: set = set()
        self.duplicates = 0               # children proposed before (or a candidate already)

    def __call__(self, candidate: dict[str, str], reflective_dataset: dict,
                 components_to_update: list[str]) -> dict:
        failing: dict[str, set[str]] = {}
        for record in next(iter(reflective_dataset.values()), []):  # every component gets the same records
            failing.setdefault(record["task"], set()).update(record["failing"])
        parent = self.codec.decode(candidate)
        self.seen.add(parent)
        child, _ = self.mutator(parent, objective=None, refs=[], targets=(),
                                failing={task: sorted(tests) for task, tests in failing.items() if tests})
        self.calls += 1
        self.duplicates += child != parent and child in self.seen
        self.seen.add(child)
        # a no-op gives no texts, and GEPA then skips the child's evaluation (reflective_mutation.py, Stage
        # 3c), as our critic rejects a no-op unevaluated
        return self.codec.texts(candidate, child) if child != parent else {}


class Recorder:
    """A GEPA callback (gepa/core/callbacks.py): after every iteration, the rollouts spent and the TRUE val
    composite of GEPA's current best (FullEvaluationPolicy.get_best_program, what GEPAResult returns); on each
    evaluation's start, what it is for (the adapter's spend split). notify_callbacks swallows a callback's
    exception, so one is kept here and raised after the run."""

    def __init__(self, adapter: LandscapeAdapter, norm) -> None:
        self.adapter, self.norm = adapter, norm
        self.state, self.curve, self.error = None, [], None

    def best(self) -> tuple[Genome, float]:
        """GEPA's best candidate and its measured val composite (the mean of its val cells' scores)."""
        idx = FullEvaluationPolicy().get_best_program(self.state)
        scores = self.state.prog_candidate_val_subscores[idx]
        genome = self.adapter.codec.decode(self.state.program_candidates[idx])
        return genome, sum(scores.values()) / len(scores) - SHIFT

    def point(self) -> None:
        genome = self.best()[0]
        self.curve.append((self.adapter.calls, self.adapter.land.expected(genome, "val", self.norm)))

    def on_iteration_start(self, event: dict) -> None:
        if self.state is None:
            self.state = event["state"]
            self._guarded(self.point)  # the seed, after GEPA's seed evaluation on val

    def on_iteration_end(self, event: dict) -> None:
        self._guarded(self.point)

    def on_evaluation_start(self, event: dict) -> None:
        parents = [p for p in (event.get("parent_ids") or []) if p is not None]
        self.adapter.phase = ("parent minibatch" if event.get("candidate_idx") is not None
                              else "merge" if len(parents) > 1 else "child minibatch")

    def on_evaluation_end(self, event: dict) -> None:
        self.adapter.phase = None

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
    selector: str = "pareto"
    cache: bool = False       # cache_evaluation: a genome's re-measure of a cell is read back, not re-run


PEER_LINES = (PeerLine("gepa"), PeerLine("gepa-merge", use_merge=True), PeerLine("gepa-cache", cache=True),
              PeerLine("gepa-mb6", minibatch=6), PeerLine("gepa-mb10", minibatch=10),
              PeerLine("gepa-current-best", selector="current_best"))
# GEPA sees each cell's composite + SHIFT: the composite is negative on a failed cell (the cost and steps
# penalties), and GEPA's merge draws common ancestors with their scores as weights (gepa/proposer/merge.py,
# find_common_ancestor_pair: "Total of weights must be greater than zero" when none is positive); a constant
# shift keeps every order and every difference. perfect_score sits above any shifted composite, so
# skip_perfect_score never skips a minibatch (the composite's best is 1 − the penalties, never 1).
SHIFT = 1.0
PERFECT_SCORE = SHIFT + 1.0


@dataclass
class PeerRun:
    outcome: Outcome
    # GEPA's own count, state.total_num_evals: equal to ours when a metric call is a cell
    gepa_calls: int
    candidates: int
    merges: int
    mutator_calls: int
    split: dict = field(default_factory=dict)    # metric calls by purpose (minibatches, val, merge)
    duplicates: int = 0


def run_gepa(land, line: PeerLine, budget: int, replicates: int, seed: int) -> PeerRun:
    norms = {split: calibrated.norm_of(land, split) for split in ("train", "val", "test")}
    codec = codec_for(land)
    adapter = LandscapeAdapter(land, budget, seed, norms, codec)
    proposer = MutatorProposer(calibrated.mutator_for(land, seed), codec)
    recorder = Recorder(adapter, norms["val"])
    items = {split: [Item(split, task, rep) for task in land.suites[split] for rep in range(replicates)]
             for split in ("train", "val")}
    try:  # gepa/api.py, optimize (0.1.4)
        gepa.optimize(seed_candidate=codec.seed(calibrated.seed_genome(land)), trainset=items["train"],
                      valset=items["val"], adapter=adapter, custom_candidate_proposer=proposer,
                      reflection_minibatch_size=line.minibatch, frontier_type=line.frontier,
                      candidate_selection_strategy=line.selector, cache_evaluation=line.cache,
                      perfect_score=PERFECT_SCORE, use_merge=line.use_merge, max_metric_calls=budget,
                      seed=seed,
                      logger=Silent(), callbacks=[recorder], raise_on_exception=True)
    except OutOfBudget:
        pass  # the next evaluation would have passed the budget: GEPA ends where it stands
    if recorder.error is not None:
        raise recorder.error
    recorder.point()
    best, val_measured = recorder.best()
    state = recorder.state
    test = lambda g: land.expected(g, "test", norms["test"])  # noqa: E731
    genomes = [codec.decode(c) for c in state.program_candidates]
    kept = [test(genomes[i]) - max(test(genomes[p]) for p in parents if p is not None)
            for i, parents in enumerate(state.parent_program_for_candidate)
            if i and any(p is not None for p in parents)]
    outcome = Outcome(recorder.curve, val_measured, test(best), adapter.calls,
                      adapter.usd + proposer.calls * MUTATOR_USD, decisions=proposer.calls,
                      spent={"seed": len(items["val"])}, calls=proposer.calls, kept=kept, final=best)
    merges = sum(len([p for p in parents if p is not None]) > 1
                 for parents in state.parent_program_for_candidate)
    return PeerRun(outcome, state.total_num_evals, len(state.program_candidates), merges, proposer.calls,
                   dict(adapter.split), proposer.duplicates)



# our lines peers.py runs by default: the default, each keep rule with and without waves and the screen,
# the gate-less lines, best-of-N and the oracles (headroom, not competitors)
OURS = (bench.DEFAULT, "greedy:seq+screen:lenient", "greedy:seq+screen:strict", "greedy:seq+screen:positive",
        "greedy:seq+screen:eb", "greedy:seq:eb", "greedy:fixed:eb", "greedy:seq:lenient",
        "greedy:fixed:lenient",
        "greedy-nogate", "greedy-raw", "best-of-n", "greedy-oracle", "threshold-oracle",
        # round 5 (issue 47): the ebc keep rule, and one replicate per val task
        "greedy:fixed:ebc", "greedy:fixed:ebc:r1", "greedy:fixed:positive:r1")
ORACLES = ("greedy-oracle", "threshold-oracle")


def every_line() -> dict:
    return {line.label: line for line in (*LINES, *bench.EXTRA)}


def cell_sd(land, genome, seed: int, draws: int = 32) -> tuple[float, float]:
    """(mean, root-mean-square) over val tasks of the SD of a cell's score, `draws` cells of `genome` each
    from
    the landscape's own cell function on a stream no line uses."""
    sds = []
    for task in land.suites["val"]:
        xs = [land.cell(genome, "val", task, 0, stream=f"sd:{seed}:{k}")[0].score for k in range(draws)]
        sds.append(statistics.pstdev(xs))
    return statistics.mean(sds), math.sqrt(statistics.mean(x * x for x in sds))


def one_seed(seed: int, ours: tuple, peers: tuple, budget: int, replicates: int,
             landscape: str) -> tuple[dict[str, PeerRun], dict[str, Outcome], tuple[float, float]]:
    """One seed: GEPA's runs, our lines' outcomes and the per-cell SD of the default's final incumbent."""
    land = calibrated.make(landscape, seed)
    runs = {peer.label: run_gepa(land, peer, budget, replicates, seed) for peer in peers}
    outcomes = {line.label: bench.run_search(land, line, budget, replicates, seed) for line in ours}
    final = outcomes[bench.DEFAULT].final if bench.DEFAULT in outcomes else calibrated.seed_genome(land)
    return runs, outcomes, cell_sd(land, final, seed)


def run(landscape: str, seeds: range, ours: tuple, peers: tuple, budget: int, replicates: int,
        jobs: int) -> dict:
    rows: dict[str, list[Outcome]] = {line.label: [] for line in (*peers, *ours)}
    runs: dict[str, list[PeerRun]] = {line.label: [] for line in peers}
    sds = []
    bench.tune_oracles(ours, landscape, budget, replicates)
    work = functools.partial(one_seed, ours=ours, peers=peers, budget=budget, replicates=replicates,
                             landscape=landscape)
    for peer_runs, outcomes, sd in bench.over_seeds(work, seeds, jobs):
        sds.append(sd)
        for label, r in peer_runs.items():
            runs[label].append(r)
            rows[label].append(r.outcome)
        for label, outcome in outcomes.items():
            rows[label].append(outcome)
    default = bench.DEFAULT
    result = {"landscape": landscape, "cell_sd": statistics.mean(m for m, _ in sds),
              "cell_sd_rms": math.sqrt(statistics.mean(r * r for _, r in sds)), "seeds": list(seeds),
              "budget": budget, "replicates": replicates, "default": default,
              "lines": {label: report.summary(o) for label, o in rows.items()},
              "vs_default": (report.vs_default(rows, default, ORACLES, bench.wilcoxon_p)
                             if default in rows else {}),
              "oracles": [label for label in ORACLES if label in rows],
              "threshold_oracle": threshold_oracle.describe(landscape, budget, replicates)
              if "threshold-oracle" in rows else None,
              "gepa": {label: {"mutator_calls": statistics.mean(r.mutator_calls for r in rs),
                               "duplicates": statistics.mean(r.duplicates for r in rs),
                               "candidates": statistics.mean(r.candidates for r in rs),
                               "merges": statistics.mean(r.merges for r in rs),
                               "split": {k: statistics.mean(r.split.get(k, 0) for r in rs)
                                         for k in sorted({k for r in rs for k in r.split})},
                               "counts_agree":
                                   f"{sum(r.gepa_calls == r.outcome.rollouts for r in rs)}/{len(rs)}"}
                       for label, rs in runs.items()},
              "per_seed_true_test": {label: [o.test_true for o in o_] for label, o_ in rows.items()}}
    result["rows"] = rows
    return result


def main(argv: list[str] | None = None) -> None:
    ap = report.parser(calibrated.LANDSCAPES, OURS, [p.label for p in PEER_LINES], __doc__.split("\n")[0])
    args = ap.parse_args(argv)
    known = every_line()
    wanted = args.lines.split(",") if args.lines else list(OURS)
    unknown = set(wanted) - set(known)
    if unknown:
        ap.error(f"--lines: unknown {', '.join(sorted(unknown))}; the lines are {', '.join(known)}")
    ours = tuple(known[label] for label in dict.fromkeys(wanted))
    peer_names = args.peers.split(",") if args.peers else [p.label for p in PEER_LINES]
    if set(peer_names) - {p.label for p in PEER_LINES}:
        ap.error(f"--peers: the GEPA lines are {', '.join(p.label for p in PEER_LINES)}")
    peers = tuple(p for p in PEER_LINES if p.label in peer_names)
    suites = calibrated.make(args.landscape, 0).suites
    seed_cells = args.replicates * (len(suites["val"]) + len(suites["train"]))  # our lines' first evaluations
    if args.budget < seed_cells:
        ap.error(f"--budget {args.budget} does not cover the seed's own val + train cells ({seed_cells})")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()   # the code the figures come from, read before the run
    started = time.monotonic()
    result = run(args.landscape, range(args.seed_offset, args.seed_offset + args.seeds), ours, peers,
                 args.budget, args.replicates, args.jobs)
    wall = time.monotonic() - started
    rows = result.pop("rows")
    print(f"GEPA {importlib.metadata.version('gepa')} beside our lines. " + report.header(result) + "\n")
    print(report.table(result))
    print(f"\nWall time {wall:.1f} s.\n\nGEPA's spending:\n{report.gepa_lines(result)}")
    if args.seeds < 8:
        print(f"Note: with {args.seeds} seeds no pair can be significant; run --seeds 32.")
    if bench.DEFAULT in rows and len(ours) > 1:
        print()
        bench.print_cells({line.label: rows[line.label] for line in ours})
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.write_docs:
        command = "python bench/peers.py " + " ".join(argv if argv is not None else sys.argv[1:])
        print(f"wrote {report.write_docs(result, command, wall, commit)}")


if __name__ == "__main__":
    main()
