#!/usr/bin/env python3
"""The default's choice rule (docs/benchmarks/default-line.md) applied to bench/peers.py's JSON of the three
landscapes, and the landscapes side by side as a markdown table.

    python bench/default_line.py peers-quiet.json peers-skillsbench.json peers-tau.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

TIE = 0.002   # within this of the best mean true test composite counts as tied


def candidates(results: list[dict]) -> list[str]:
    """The lines config.json can express (greedy with a keep rule, waves, screen) run on every landscape."""
    names = set.intersection(*(set(r["lines"]) for r in results))
    return sorted(n for n in names if n.startswith("greedy:"))


def choose(results: list[dict]) -> tuple[str, dict[str, float]]:
    """The rule: the highest mean TRUE test composite over the landscapes; ties (within TIE) to fewer cells
    per decision, then to today's default."""
    default = results[0]["default"]
    mean = {n: statistics.mean(r["lines"][n]["true_test"] for r in results) for n in candidates(results)}
    cells = {n: statistics.mean(r["lines"][n]["cells_per_decision"] or 0 for r in results) for n in mean}
    best = max(mean.values())
    tied = [n for n in mean if mean[n] >= best - TIE]
    return min(tied, key=lambda n: (cells[n], n != default)), mean


def side_by_side(results: list[dict]) -> str:
    names = sorted(set.union(*(set(r["lines"]) for r in results)),
                   key=lambda n: -statistics.mean(r["lines"].get(n, {}).get("true_test", 0) for r in results))
    head = "| line | " + " | ".join(f"{r['landscape']}: true test (Δ vs default, Holm p) · harmful kept"
                                    for r in results) + " | mean true test |"
    rows = [head, "|---" * (len(results) + 2) + "|"]
    for n in names:
        cells, tests = [], []
        for r in results:
            line = r["lines"].get(n)
            if line is None:
                cells.append("—")
                continue
            tests.append(line["true_test"])
            vs = r["vs_default"].get(n)
            cells.append(f"{line['true_test']:.4f} ({vs['diff']:+.4f}, {vs['p_holm']:.2g}) · "
                         f"{line['harmful_kept_share']:.0%}" if vs else
                         f"{line['true_test']:.4f} (default) · {line['harmful_kept_share']:.0%}"
                         if n == r["default"] else f"{line['true_test']:.4f} (oracle) · "
                         f"{line['harmful_kept_share']:.0%}")
        mean = f"{statistics.mean(tests):.4f}" if len(tests) == len(results) else "—"
        rows.append(f"| {n} | " + " | ".join(cells) + f" | {mean} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    if not paths:
        raise SystemExit("usage: python bench/default_line.py PEERS_JSON... (bench/peers.py --json)")
    results = [json.loads(p.read_text()) for p in paths]
    print(side_by_side(results))
    chosen, mean = choose(results)
    print(f"\nThe rule picks {chosen} (mean true test {mean[chosen]:.4f} over "
          f"{', '.join(r['landscape'] for r in results)}); today's default {results[0]['default']} "
          f"{mean.get(results[0]['default'], float('nan')):.4f}.")
    for r in results:
        print(f"{r['landscape']}: cell SD {r['cell_sd']:.3f} (rms {r['cell_sd_rms']:.3f}), seeds "
              f"{r['seeds'][0]}..{r['seeds'][-1]}")


if __name__ == "__main__":
    main()
