#!/usr/bin/env python3
"""What each greedy line keeps: every gated candidate of bench/strategies.py's greedy lines, by kind of change
and by where its measured Δ fell (a measured gain, Δ ≥ 0, or a tie kept inside the
noise band), with its TRUE effect.

This is how the gate's drift was found: keeping every tie let cost-only changes (a rule that adds turns and
changes no output) ride in on noise. The kinds: add/remove a helpful rule, add/remove a cost-only rule, add
titlecase (it hurts). Same landscape, mutator and seeds as bench/strategies.py (their hashes are printed).

    python bench/kept.py [--seeds 32] [--seed-offset 0] [--budget 640] [--replicates 2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.landscape import COST_ONLY, landscape_hash, mutator_hash  # noqa: E402
from bench.strategies import LINES, Landscape, Rules, Search  # noqa: E402

GREEDY = ("greedy", "greedy-keepties", "greedy-nogate", "greedy-raw")


def kind(op: str) -> str:
    name = op.lstrip("-")
    what = "cost-only" if name in COST_ONLY else "titlecase" if name == "titlecase" else "helpful"
    return ("remove " if op.startswith("-") else "add ") + what


class Probe(Search):
    """A Search that records every gate decision with the candidate's true Δ against the incumbent."""

    def __init__(self, *args, log: list, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log, self.last_op = log, ""

    def mutate(self, parent, **how):
        child, op = super().mutate(parent, **how)
        self.child, self.last_op = child, op
        return child, op

    def gate(self, cand, base, prior):
        gate, keep = super().gate(cand, base, prior)
        norm = self.norms["test"]
        true = self.land.expected(self.child, "test", norm) - self.land.expected(self.incumbent, "test", norm)
        self.log.append((self.line.label, kind(self.last_op), keep, "gain" if gate.delta >= 0 else "tie",
                         true))
        return gate, keep


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=32)
    ap.add_argument("--seed-offset", type=int, default=0)
    ap.add_argument("--budget", type=int, default=640)
    ap.add_argument("--replicates", type=int, default=2)
    args = ap.parse_args(argv)
    rules, log, finals = Rules.from_config(), [], defaultdict(list)
    lines = [line for line in LINES if line.label in GREEDY]
    for seed in range(args.seed_offset, args.seed_offset + args.seeds):
        land = Landscape(random.Random(seed))
        for line in lines:
            probe = Probe(land, line, args.budget, args.replicates, seed, rules=rules, log=log)
            outcome = probe.run()
            best = max(v for _, v in outcome.curve)
            finals[line.label].append((sum(op in COST_ONLY for op, _ in probe.incumbent),
                                       best - outcome.curve[-1][1], outcome.test_true))
    print(f"Landscape {landscape_hash()} · simulated mutator {mutator_hash()} · {args.seeds} seeds from "
          f"{args.seed_offset}, budget {args.budget}, {args.replicates} replicates; tieRule {rules.tie_rule} "
          "for 'greedy'. Σ true test Δ is summed over the seeds (÷ seeds = its share of a line's mean).\n")
    for line in lines:
        rows = [r for r in log if r[0] == line.label]
        cost_only, drift, test = zip(*finals[line.label], strict=True)
        print(f"{line.label}: {len(rows)} gated candidates, {sum(r[2] for r in rows)} kept; final test "
              f"{statistics.mean(test):.4f}; the final incumbent holds {statistics.mean(cost_only):.2f} "
              f"cost-only rules and sits {statistics.mean(drift):.4f} (true val) "
              "below the best incumbent of its own path")
        groups = defaultdict(list)
        for _, what, keep, band, true in rows:
            groups[("kept" if keep else "rejected", what, band if keep else "")].append(true)
        for (verdict, what, band), trues in sorted(groups.items()):
            print(f"  {verdict:<8} {what:<17} {band:<4} {len(trues):>5}  Σ true test Δ {sum(trues):+8.3f}  "
                  f"true loss in {sum(t < -1e-9 for t in trues):>4}")
        print()


if __name__ == "__main__":
    main()
