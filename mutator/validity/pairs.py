"""Two runs' champions on one test suite, paired by task: Δ (B − A) ± SE, t CI, sign test and McNemar per
pass/fail test. One computation for `run.py --compare` and the dashboard's Compare page.

Reads finished evaluations from the store; never runs a cell. Both champions are scored with run A's weights,
normalised to run A's seed on that suite, so the two sides are on one scale (that of run A's test report).
"""

from __future__ import annotations

import sqlite_utils

from mutator.scoring.score import Normalisers, Weights, normalisers
from mutator.validity.report import _cells, compare_split


def champions_pair(db: sqlite_utils.Database, run_a: dict, run_b: dict, *, suite: str, eval_a: int,
                   eval_b: int, seed_eval_a: int | None, genome_a: str | None = None,
                   genome_b: str | None = None) -> dict:
    """The paired report of champion B − champion A on `suite` (evaluation ids of each champion's test cells
    and of run A's seed there). `n` 0 and no figures when the two evaluations share no task."""
    weights = Weights.of_run(run_a)
    seed_cells = _cells(db, seed_eval_a) if seed_eval_a else []
    norm = normalisers(seed_cells) if seed_cells else Normalisers(0.0, 0.0)
    split = compare_split(db, eval_b, eval_a, weights, norm)
    out = {"a": run_a["id"], "b": run_b["id"], "suite": suite, "genome_a": genome_a, "genome_b": genome_b,
           "same_genome": genome_a is not None and genome_a == genome_b, "evaluations": [eval_a, eval_b],
           "seed_evaluation_id": seed_eval_a, "n": 0}
    if split is None:
        return out
    d = split["delta"]
    out.update(n=split["n_tasks"], a_composite=split["seed_composite"],
               b_composite=split["champion_composite"], mean=d["mean"], se=d["se"], ci_low=d["ci_low"],
               ci_high=d["ci_high"], p_value=d["p_value"], delta_eval=split["delta_eval"]["mean"],
               deltas=split["deltas"], sign=split["sign"],
               # McNemar's only_a / only_b are B-only / A-only passes here (B is compare_split's "champion"
               # side)
               mcnemar=split["mcnemar"])
    return out


def _f(value: float | None, spec: str = "+.4f") -> str:
    return "—" if value is None else format(value, spec)


def render_pair(pair: dict) -> str:
    """The report `run.py --compare` prints (the Compare page shows the same figures)."""
    head = (f"Champions compared on {pair['suite']} · B {pair['b']} ({(pair.get('genome_b') or '')[:12]}) − "
            f"A {pair['a']} ({(pair.get('genome_a') or '')[:12]}) · paired by task, scored with A's weights "
            f"and normalised to A's seed on {pair['suite']}")
    if not pair["n"]:
        return head + "\n  no task was evaluated for both champions"
    sign, ci = pair["sign"], ("—" if pair["ci_low"] is None else f"[{pair['ci_low']:+.4f}, "
                                                                 f"{pair['ci_high']:+.4f}]")
    lines = [head,
             f"  tasks {pair['n']} · A composite {pair['a_composite']:.4f} · B composite "
             f"{pair['b_composite']:.4f}"
             + (" · the same genome" if pair["same_genome"] else ""),
             f"  Δcomposite (B − A) {pair['mean']:+.4f} ± {_f(pair['se'], '.4f')} (SE) · 95% CI (t) {ci} · "
             f"paired t p = {_f(pair['p_value'], '.3g')} · Δeval {pair['delta_eval']:+.4f}",
             f"  sign test: B wins {sign['wins']}, A wins {sign['losses']}, ties {sign['ties']} · exact p = "
             f"{sign['p_value']:.3g}"]
    if pair["mcnemar"]:
        lines.append("  McNemar exact, pass/fail tests (cells paired by task × replicate; +B-only/−A-only "
                     "passes, p):")
        lines += [f"    {name:<16} +{m['only_a']}/−{m['only_b']}  p={m['p_value']:.3g}"
                  for name, m in sorted(pair["mcnemar"].items())]
    return "\n".join(lines)
