"""bench/peers.py's report: Holm's adjustment, the table, GEPA's spending lines and the results page it writes
(pure functions of the result dict `bench/peers.py` builds)."""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import math
import os
import platform
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p values, in the input order."""
    order = sorted(range(len(pvalues)), key=pvalues.__getitem__)
    adjusted, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def table(result: dict) -> str:
    lines = ["| line | true test | ± | harmful kept | kept/seed | cells/decision | rollouts | "
             "measured − true "
             "val | vs default | Holm p |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in sorted(result["lines"].items(), key=lambda kv: -kv[1]["true_test"]):
        vs = result["vs_default"].get(name)
        cpd = f"{r['cells_per_decision']:.1f}" if r["cells_per_decision"] else "—"
        lines.append(f"| {name}{' (default)' if name == result['default'] else ''} | {r['true_test']:.4f} | "
                     f"{r['true_test_se']:.4f} | {r['harmful_kept_share']:.1%} | "
                     f"{r['kept_per_seed']:.1f} | {cpd} "
                     f"| {r['rollouts']:.0f} | {r['measured_minus_true_val']:+.4f} | "
                     + (f"{vs['diff']:+.4f} | {vs['p_holm']:.2g} |" if vs else "— | — |"))
    return "\n".join(lines)


def gepa_lines(result: dict) -> str:
    out = []
    for label, g in result["gepa"].items():
        split = ", ".join(f"{k} {v:.0f}" for k, v in sorted(g["split"].items()))
        out.append(f"- {label}: per run {g['mutator_calls']:.0f} proposals ({g['duplicates']:.1f} "
                   f"duplicates), "
                   f"{g['candidates']:.1f} candidates kept (seed included), {g['merges']:.1f} merges; "
                   f"metric calls "
                   f"by purpose (mean per run): {split}; GEPA's own count equals ours in "
                   f"{g['counts_agree']}.")
    return "\n".join(out)


def header(result: dict) -> str:
    return (f"Landscape `{result['landscape']}`: seeds {result['seeds'][0]}..{result['seeds'][-1]} "
            f"({len(result['seeds'])}), {result['budget']} rollouts per line (val + train cells; GEPA's "
            f"metric "
            f"calls), {result['replicates']} replicates, val 8 tasks. Mean per-cell SD of the default's "
            f"final "
            f"incumbent's val cells {result['cell_sd']:.3f} (root-mean-square {result['cell_sd_rms']:.3f}). "
            f"Default: `{result['default']}` (config.json). 'harmful kept' = the share of KEEP verdicts "
            f"whose "
            "candidate's TRUE test composite is below the incumbent's it was judged against (GEPA: an "
            "accepted "
            "child below its best parent); 'vs default' = mean paired difference in TRUE test composite, "
            "Wilcoxon signed-rank over seeds, Holm over every line but the oracles (greedy-oracle keeps "
            "iff the "
            "TRUE val composite rises, threshold-oracle iff it rises by more than a threshold tuned on the "
            "truth: headroom, not competitors)."
            + (f" The {result['threshold_oracle']}." if result.get("threshold_oracle") else ""))


def write_docs(result: dict, command: str, wall: float, commit: str) -> Path:
    page = ROOT / "docs" / "benchmarks" / "results" / f"peers-{result['landscape']}.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"# bench/peers.py on the `{result['landscape']}` landscape\n\n"
                    f"Written by `{command}` — {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
                    f"UTC, commit "
                    f"{commit}, {platform.platform()}, {os.cpu_count()} CPUs (shared), Python "
                    f"{platform.python_version()}, gepa {importlib.metadata.version('gepa')}, wall "
                    f"{wall:.0f} s.\n\n"
                    f"{header(result)}\n\n{table(result)}\n\nGEPA's spending:\n\n{gepa_lines(result)}\n")
    return page


def summary(o: list) -> dict:
    """One line's figures over seeds, from its outcomes."""
    kept = [d for out in o for d in out.kept]
    decisions = sum(out.decisions for out in o)
    return {"true_test": statistics.mean(x.test_true for x in o),
            "true_test_se": (statistics.stdev(x.test_true for x in o) / math.sqrt(len(o))
                             if len(o) > 1 else 0.0),
            "harmful_kept_share": sum(d < 0 for d in kept) / len(kept) if kept else 0.0,
            "kept_per_seed": len(kept) / len(o),
            "cells_per_decision": (sum(x.rollouts - x.spent.get("seed", 0) for x in o) / decisions
                                   if decisions else None),
            "rollouts": statistics.mean(x.rollouts for x in o),
            "measured_minus_true_val": statistics.mean(x.val_measured - x.curve[-1][1] for x in o),
            "usd": statistics.mean(x.usd for x in o)}


def vs_default(rows: dict[str, list], default: str, oracles: tuple, wilcoxon_p) -> dict:
    """Each line but the default and the oracles against the default on the TRUE test composite: the mean
    paired difference (line − default), Wilcoxon signed-rank p over seeds, Holm over this family."""
    others = [label for label in rows if label != default and label not in oracles]
    base = [o.test_true for o in rows[default]]
    raw = [wilcoxon_p([o.test_true for o in rows[label]], base) for label in others]
    return {label: {"diff": statistics.mean(o.test_true for o in rows[label]) - statistics.mean(base),
                    "p": p, "p_holm": q} for label, p, q in zip(others, raw, holm(raw), strict=True)}


def parser(landscapes, ours, peers: list[str], description: str) -> argparse.ArgumentParser:
    """bench/peers.py's flags."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--landscape", choices=landscapes, default="quiet",
                    help="quiet (the fakes), skillsbench, tau or skillsbench-graded (real agent noise, "
                    "bench/calibrated.py)")
    ap.add_argument("--seeds", type=int, default=32, help="landscapes (paired across lines)")
    ap.add_argument("--budget", type=int, default=640, help="metric calls = rollouts = cells per search, val "
                    "+ train; every line stops before an evaluation would pass it")
    ap.add_argument("--replicates", type=int, default=2)
    ap.add_argument("--seed-offset", type=int, default=0, help="the first landscape seed")
    ap.add_argument("--lines", help="comma-separated labels of our lines to run beside GEPA's (default: "
                    + ", ".join(ours) + ")")
    ap.add_argument("--peers", help="comma-separated GEPA lines (default: all: "
                    + ", ".join(peers) + ")")
    ap.add_argument("--jobs", type=int, default=1, help="seeds run in this many processes "
                                                        "at once (the same table)")
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    ap.add_argument("--write-docs", action="store_true",
                    help="write docs/benchmarks/results/peers-<landscape>.md")
    return ap
