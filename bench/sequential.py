#!/usr/bin/env python3
"""Sequential val against the fixed-n gate: false-reject, power and cells per
decision, through the loop's code.

Each simulated decision draws cells for a candidate and an incumbent (n tasks × R replicates; a cell's
composite is its task's level plus noise, the candidate's shifted by k standard errors of the fixed-n
comparison) and runs them through `mutator.round.waves.sequential_val` — the function the loop and the A/A run
call — once with the run's design (val in R waves, early looks at sequential.earlyZ) and once with one look
(every cell at once, the fixed-n gate). Earlier comparisons are pooled in as the loop does (rounds − 1 of
them, full evaluations). Noise families: normal; t3 (Student t with 3 df, heavy tails); real (cell noise
resampled with random signs from the per-task deltas a demo store holds: A/A copies raw, gate records
centred). k < 0 rows give the false keep of a worse change (power = 1 − it), k = 0 the false reject of a null
change (the design: 1 − Φ(gateZ)).

    python bench/sequential.py [--runs 400] [--no-real] [--store DB] [--tasks 4,6,8,16] [--replicates 2,4]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gate import SIGMA, demo_store, families, real_deltas  # noqa: E402

from mutator.round.evaluations import Outcome  # noqa: E402
from mutator.round.waves import Gating  # noqa: E402
from mutator.round.waves import sequential_val as run_looks  # noqa: E402
from mutator.scoring.gate import robust_scale  # noqa: E402
from mutator.scoring.score import CellFigures, Comparison, Normalisers, Weights  # noqa: E402
from mutator.scoring.sequential import Design  # noqa: E402

EFFECTS = (-3.0, -1.0, 0.0, 1.0, 3.0)
NORM = Normalisers(seed_cost=0.0, seed_steps=0.0)


def outcome(values: np.ndarray, only: frozenset | None) -> Outcome:
    """values[t, r] as cells; `only` keeps those (task, replicate) cells, as the evaluator does."""
    cells = tuple(CellFigures(f"t{t:02d}", r, float(values[t, r]), 0.0, 0.0, True)
                  for t in range(values.shape[0]) for r in range(values.shape[1])
                  if only is None or (f"t{t:02d}", r) in only)
    return Outcome(0, cells, 0, 0.0, complete=True, n_cells=len(cells))


def decide(gating: Gating, val, sides: dict[str, np.ndarray], prior: list[Comparison]) -> tuple[bool, int]:
    """(rejected, cells of the candidate the decision used)."""
    out, gate, looks = run_looks(gating, lambda side, _suite, _label, only: outcome(sides[side], only),
                                 val=val, genome="candidate", incumbent="incumbent", norm=NORM, prior=prior,
                                 label="bench", healthy=lambda _o: True)
    return (not gate.keep), len(out.cells)


def simulate(family, n: int, reps: int, rounds: int, gate_z: float, early_z: float, method: str, runs: int,
             rng: np.random.Generator) -> dict:
    """{(design, k): (P(reject), mean cells)} for the sequential and the fixed-n design."""
    val = SimpleNamespace(tasks=[SimpleNamespace(id=f"t{t:02d}") for t in range(n)], name="val")
    designs = {"seq": Design(reps, gate_z, early_z), "fixed": Design(1, gate_z, early_z)}
    gatings = {name: Gating(Weights(0.0, 0.0), 0.0, gate_z, method, d) for name, d in designs.items()}
    # SD of one task's delta at R replicates (cell noise SIGMA)
    sd_task = SIGMA * math.sqrt(2.0 / reps)
    se_true = sd_task / math.sqrt(n)
    out = {}
    for k in EFFECTS:
        tallies = {name: [0, 0] for name in designs}
        for _ in range(runs):
            prior = [Comparison(n, robust_scale(family.noise(rng, n) * math.sqrt(2.0 / reps)))
                     for _ in range(rounds - 1)]
            level = rng.uniform(0.3, 0.7, size=(n, 1))
            sides = {"incumbent": level + family.noise(rng, (n, reps)),
                     "candidate": level + k * se_true + family.noise(rng, (n, reps))}
            for name, gating in gatings.items():
                rejected, cells = decide(gating, val, sides, prior)
                tallies[name][0] += rejected
                tallies[name][1] += cells
        for name, (rejects, cells) in tallies.items():
            out[(name, k)] = (rejects / runs, cells / runs)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=400, help="simulated decisions per row (default 400)")
    p.add_argument("--tasks", default="4,6,8,16", help="task counts (default 4,6,8,16)")
    p.add_argument("--replicates", default="2,4", help="replicate counts = waves (default 2,4)")
    p.add_argument("--rounds", type=int, default=5, help="the decision's round: "
                                                         "rounds − 1 comparisons pooled (5)")
    p.add_argument("--store", type=Path, help="a mutator.db for the 'real' family (default: a demo dry run)")
    p.add_argument("--no-real", action="store_true", help="skip the 'real' family")
    p.add_argument("--seed", type=int, default=11)
    args = p.parse_args(argv)
    from mutator.config import load_settings
    s = load_settings(config_file=ROOT / "config.json")
    started = time.perf_counter()
    bank = None
    if not args.no_real:
        if args.store:
            bank = real_deltas(args.store)
        else:
            with tempfile.TemporaryDirectory(prefix="sequential-bench-") as tmp:
                bank = real_deltas(demo_store(Path(tmp)))
    rng = np.random.default_rng(args.seed)
    design0 = float(stats.norm.sf(s.score.gate_z))
    mc = math.sqrt(design0 * (1 - design0) / args.runs)
    print(f"Sequential val · method {s.score.gate_method} · gateZ {s.score.gate_z:g} · "
          f"earlyZ {s.sequential.early_z:g} · "
          f"round {args.rounds} · {args.runs} decisions per row "
          f"(Monte-Carlo SE ≈ {mc:.1%} at the design {design0:.1%})")
    print("Each pair: P(reject) sequential / fixed-n; cells = the candidate's val cells per decision, "
          "sequential / fixed-n. k<0 a worse change (reject = power), k=0 a null change (reject = false "
          f"reject, design {design0:.1%}), k>0 a better one. '!' marks a sequential k=0 rate off the design "
          "by more than 3 MC SE.")
    head = f"{'family':<7}{'n':>3}{'R':>3} {'last z':>7}  " + "".join(f"{f'k={k:+g} reject':^19}"
                                                                      for k in EFFECTS) \
        + "  " + " ".join(f"{f'cells k={k:+g}':^13}" for k in EFFECTS)
    print(head)
    print("-" * len(head))
    off = 0
    for family in families(bank):
        for n in (int(x) for x in args.tasks.split(",")):
            for reps in (int(x) for x in args.replicates.split(",")):
                got = simulate(family, n, reps, args.rounds, s.score.gate_z, s.sequential.early_z,
                               s.score.gate_method, args.runs, rng)
                flag = "!" if abs(got[("seq", 0.0)][0] - design0) > 3 * mc else " "
                off += flag == "!"
                rates = "  ".join(f"{got[('seq', k)][0]:6.1%} /{got[('fixed', k)][0]:6.1%}"
                                  + (flag if k == 0 else " ") + "  " for k in EFFECTS)
                cells = " ".join(f"{got[('seq', k)][1]:5.1f} /{got[('fixed', k)][1]:5.1f} " for k in EFFECTS)
                print(f"{family.name:<7}{n:>3}{reps:>3} "
                      f"{Design(reps, s.score.gate_z, s.sequential.early_z).z(reps):7.3f}  "
                      f"{rates}{cells}", flush=True)
    print(f"\n{off} sequential k=0 rows off the design beyond 3 Monte-Carlo SE. "
          f"[{time.perf_counter() - started:.1f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
