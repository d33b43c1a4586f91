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

Beside the cells a decision costs, what Wald's sequential probability ratio test would need for the same
decision: H0 "no change" against H1 "a change k SE worse" at the same false-reject rate (the design), the same
power (the sequential gate's measured reject rate at k) and the same effect, observing one paired cell at a
time. Its expected sample size has Wald's closed form (wald_asn, no overshoot); the ratio sequential cells /
SPRT cells is how far a decision is from that limit (the goal: ≤ 1.3×). The SPRT here is one-sided and knows
σ; the gate estimates σ and also stops at wins, so a ratio near 1 is the most to expect.

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
SPRT_EFFECTS = (-3.0, -1.0)      # the losses a decision exists to catch: Wald's SPRT beside them
NORM = Normalisers(seed_cost=0.0, seed_steps=0.0)


def wald_asn(alpha: float, power: float, effect: float, sigma: float = 1.0) -> tuple[float, float]:
    """Wald's expected sample size of the SPRT of H0: μ = 0 against H1: μ = effect for N(μ, σ²) observations
    at false-reject rate alpha and power (= 1 − β): (E_0[N], E_1[N]) with A = log((1−β)/α),
    B = log(β/(1−α)) and a step's mean log-likelihood ratio ∓effect²/(2σ²):
    E_0[N] = (α·A + (1−α)·B)/(−effect²/2σ²), E_1[N] = ((1−β)·A + β·B)/(effect²/2σ²)
    (Wald 1945, no overshoot)."""
    if not 0 < alpha < power < 1 or effect == 0 or sigma <= 0:
        raise ValueError(f"wald_asn needs 0 < alpha < power < 1 and effect ≠ 0, "
                         f"got {alpha}, {power}, {effect}")
    beta = 1.0 - power
    a, b = math.log(power / alpha), math.log(beta / (1.0 - alpha))
    drift = effect ** 2 / (2.0 * sigma ** 2)
    return (alpha * a + (1.0 - alpha) * b) / -drift, (power * a + beta * b) / drift


def sprt_cells(n: int, reps: int, k: float, alpha: float, power: float) -> float:
    """The SPRT's expected candidate cells at a change of k SE of the fixed-n comparison (n tasks × R
    replicates): one paired cell's delta has SD σ√2 and mean k·σ√(2/R)/√n, so E_1[N] = wald_asn(α, power,
    k/√(nR)) in cells (σ cancels)."""
    return wald_asn(alpha, power, k / math.sqrt(n * reps))[1]


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
          "by more than 3 MC SE. SPRT: Wald's expected cells for the same decision "
          "(false reject = the design, "
          "power = the sequential gate's at k, effect k) and the ratio sequential / SPRT (goal ≤ 1.3×).")
    head = f"{'family':<7}{'n':>3}{'R':>3} {'last z':>7}  " + "".join(f"{f'k={k:+g} reject':^19}"
                                                                      for k in EFFECTS) \
        + "  " + " ".join(f"{f'cells k={k:+g}':^13}" for k in EFFECTS) \
        + "  " + " ".join(f"{f'SPRT k={k:+g} (ratio)':^20}" for k in SPRT_EFFECTS)
    print(head)
    print("-" * len(head))
    off, ratios = 0, []
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
                sprt = []
                for k in SPRT_EFFECTS:
                    power = min(got[("seq", k)][0], 1.0 - 0.5 / args.runs)   # a measured 100% as 1 − ½/runs
                    if power <= design0:
                        sprt.append(f"{'—':^20}")
                        continue
                    need = sprt_cells(n, reps, k, design0, power)
                    ratios.append(got[("seq", k)][1] / need)
                    sprt.append(f"{need:7.1f} ({got[('seq', k)][1] / need:4.2f}×)     ")
                print(f"{family.name:<7}{n:>3}{reps:>3} "
                      f"{Design(reps, s.score.gate_z, s.sequential.early_z).z(reps):7.3f}  "
                      f"{rates}{cells} {' '.join(sprt)}", flush=True)
    if ratios:
        print(f"\nsequential cells / SPRT cells at k = {', '.join(f'{k:+g}' for k in SPRT_EFFECTS)}: median "
              f"{float(np.median(ratios)):.2f}×, range {min(ratios):.2f}–{max(ratios):.2f}× (goal ≤ 1.3×)")
    print(f"\n{off} sequential k=0 rows off the design beyond 3 Monte-Carlo SE. "
          f"[{time.perf_counter() - started:.1f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
