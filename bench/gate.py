#!/usr/bin/env python3
"""Gate calibration: changes of known true effect drawn through the real gate (mutator/score.py).

Each simulated comparison has per-task deltas d_t = k·σ/√n + ε_t, ε_t ~ N(0, σ²), i.e. a true change of
k standard errors; the run's earlier comparisons (rounds − 1 of them, same noise) are pooled into the
gate through `prior`, exactly as the loop does. The decision comes from `score.compare`; the design
prediction is what the gate's construction promises if its pooled s were an ordinary SD estimate with df
degrees of freedom: P(keep) = P(T ≥ −t) with T ~ noncentral t(df, k) and t = gate_t(gate_z, df).

    python bench/gate.py [--runs 500] [--gate-z 1.0] [--seed 7]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutator.score import Comparison, TaskFigures, compare, gate_t, robust_scale  # noqa: E402

EFFECTS = (-2.0, -1.0, 0.0, 1.0, 2.0)   # true Δ in standard errors (σ/√n)
SIGMA = 0.1                              # per-task SD of a delta; the rates do not depend on it
ROUND_STEPS = (1, 2, 5, 10)              # the gate at round r pools r comparisons: df = r·(n − 1)
TASK_COUNTS = (4, 8, 16)
BANK = 1500                              # earlier comparisons' s_r are drawn from this many real robust_scale()s


def figures(values: np.ndarray) -> dict[str, TaskFigures]:
    return {f"t{i:02d}": TaskFigures(f"t{i:02d}", eval=float(v), cost=0.0, steps=0.0, composite=float(v), n_cells=1)
            for i, v in enumerate(values)}


def design_keep(k: float, gate_z: float, df: int) -> float:
    t = gate_t(gate_z, df)
    return float(stats.nct.sf(-t, df, k)) if df else float(stats.norm.sf(-k))


def design_gain(k: float, gate_z: float, df: int) -> float:
    """P(Δ > +t·SE): the gate's figures call a credible improvement."""
    t = gate_t(gate_z, df)
    return float(stats.nct.sf(t, df, k)) if df else float(stats.norm.sf(-k))


def simulate(n: int, rounds: int, gate_z: float, runs: int, rng: np.random.Generator,
             bank: np.ndarray) -> dict[float, tuple[float, float]]:
    """{effect: (P(keep), P(Δ > t·SE))} over `runs` gates at round `rounds` of a run with n tasks."""
    incumbent = figures(np.full(n, 0.5))
    se_true = SIGMA / math.sqrt(n)
    out = {}
    for k in EFFECTS:
        keeps = gains = 0
        for _ in range(runs):
            prior = [Comparison(n, float(s)) for s in rng.choice(bank, size=rounds - 1)]
            candidate = figures(0.5 + k * se_true + rng.normal(0.0, SIGMA, n))
            gate = compare(candidate, incumbent, prior=prior, min_improvement=0.0, gate_z=gate_z)
            keeps += gate.keep
            gains += gate.delta > gate.t * gate.se
        out[k] = (keeps / runs, gains / runs)
    return out


def row(label: str, n: int, rounds: int, gate_z: float, runs: int, rng: np.random.Generator,
        banks: dict[int, np.ndarray]) -> str:
    df = rounds * (n - 1)
    observed = simulate(n, rounds, gate_z, runs, rng, banks[n])
    cells = []
    for k in EFFECTS:
        keep = observed[k][0]
        # below 0 the error is keeping a worse change; at or above 0 it is rejecting one that is not worse
        err, pred = (keep, design_keep(k, gate_z, df)) if k < 0 else (1 - keep, 1 - design_keep(k, gate_z, df))
        cells.append(f"{err:6.1%} /{pred:6.1%}")
    gain = observed[0.0][1]
    return (f"{label:<14}{n:>3} {rounds:>4} {df:>4} {gate_t(gate_z, df):6.3f}  " + "  ".join(cells)
            + f"  {gain:6.1%} /{design_gain(0.0, gate_z, df):6.1%}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=500, help="simulated gates per cell of the table (default 500)")
    p.add_argument("--gate-z", type=float, default=None, help="gate_z to calibrate (default: config.json score.gateZ)")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    gate_z = args.gate_z
    if gate_z is None:
        from mutator.config import load_settings
        gate_z = load_settings().gate_z
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    banks = {n: np.array([robust_scale(rng.normal(0.0, SIGMA, n)) for _ in range(BANK)]) for n in TASK_COUNTS}
    mc = math.sqrt(0.16 * 0.84 / args.runs)
    print(f"Gate calibration · gate_z {gate_z} · min_improvement 0 · {args.runs} simulated gates per cell "
          f"(Monte-Carlo SE ≈ {mc:.1%} at 16%) · normal per-task noise")
    print("Each cell: observed / design. Effects are true Δ in SE units; for k<0 the rate is FALSE-KEEP "
          "(a worse change kept), for k≥0 FALSE-REJECT (a change that is not worse rejected).")
    print("'beat +t·SE' = share of null changes (k=0) whose Δ clears +t·SE (a false credible improvement).")
    head = (f"{'':<14}{'n':>3} {'rnd':>4} {'df':>4} {'t':>6}  "
            + "  ".join(f"{f'k={k:+g}':^15}" for k in EFFECTS) + f"  {'beat +t·SE':^15}")
    print(head)
    print("-" * len(head))
    for rounds in ROUND_STEPS:
        print(row("by rounds", 8, rounds, gate_z, args.runs, rng, banks))
    for n in TASK_COUNTS:
        if n != 8:
            print(row("by tasks", n, 5, gate_z, args.runs, rng, banks))
    z_design = float(stats.norm.sf(gate_z))
    print(f"\nAt k=0 the design false-reject rate is 1 − Φ(gate_z) = {z_design:.1%} at every df (t = t.ppf(Φ(z), df) "
          "pays for the uncertain s); false-keep at k<0 falls as df grows because t shrinks toward gate_z.")
    print("Where observed ≠ design beyond Monte-Carlo error, the gap is the robust scale's doing: 1.4826·MAD is a "
          "noisier SD estimate than the sample SD the t quantile assumes, and biased low for few tasks (for normal "
          "deltas E[1.4826·MAD] ≈ 0.74σ at n=4, 0.89σ at n=8, 0.95σ at n=16), so SE is too small and the gate "
          "rejects (and 'beats +t·SE') more often than designed until n is ~16.")
    print(f"[{time.perf_counter() - started:.1f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
