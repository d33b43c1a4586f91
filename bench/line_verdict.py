#!/usr/bin/env python3
"""Issue 47's "Done when" for one line, from bench/peers.py's JSON: against every other runnable line (the
oracles excluded) the mean paired difference in TRUE test composite, Wilcoxon over seeds, Holm over those
lines; and its share of truly harmful keeps beside greedy-nogate's.

    python bench/line_verdict.py LINE peers-skillsbench.json [peers-tau.json ...] [--against A,B]
    (--against: Holm over the comparisons with these lines only, a family fixed in advance)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.paired import holm, wilcoxon_p  # noqa: E402


def verdict(result: dict, line: str, against: list[str] | None = None) -> dict:
    """{others: {name: (diff, p, p_holm)}, beaten_by, beats_nogate, harm, harm_nogate}; Holm over `against`
    (default: every other runnable line)."""
    per = result["per_seed_true_test"]
    others = against or [name for name in per if name != line and name not in result.get("oracles", [])]
    mine = per[line]
    diffs = [statistics.mean(a - b for a, b in zip(mine, per[o], strict=True)) for o in others]
    ps = [wilcoxon_p(mine, per[o]) for o in others]
    table = dict(zip(others, zip(diffs, ps, holm(ps), strict=True), strict=True))
    lines = result["lines"]
    return {"others": table,
            "beaten_by": [o for o, (d, _, q) in table.items() if d < 0 and q < 0.05],
            "beats_nogate": table["greedy-nogate"][0] > 0 and table["greedy-nogate"][2] < 0.05,
            "harm": lines[line]["harmful_kept_share"],
            "harm_nogate": lines["greedy-nogate"]["harmful_kept_share"]}


def main(argv: list[str]) -> None:
    against = None
    if "--against" in argv:
        at = argv.index("--against")
        against, argv = argv[at + 1].split(","), argv[:at] + argv[at + 2:]
    line, files = argv[0], argv[1:]
    for name in files:
        result = json.loads(Path(name).read_text())
        v = verdict(result, line, against)
        print(f"## {result['landscape']} ({len(result['seeds'])} seeds {result['seeds'][0]}.."
              f"{result['seeds'][-1]}): {line} true test {result['lines'][line]['true_test']:.4f}\n")
        print("| other line | its true test | line − other | Wilcoxon p | Holm p |\n|---|---|---|---|---|")
        for other, (d, p, q) in sorted(v["others"].items(), key=lambda kv: kv[1][0]):
            print(f"| {other} | {result['lines'][other]['true_test']:.4f} | {d:+.4f} | {p:.3g} | {q:.3g} |")
        print(f"\nSignificantly beaten by: {', '.join(v['beaten_by']) or 'none'}; beats greedy-nogate "
              f"significantly (Holm): {'yes' if v['beats_nogate'] else 'no'}; harmful kept "
              f"{v['harm']:.1%} vs greedy-nogate {v['harm_nogate']:.1%}.\n")


if __name__ == "__main__":
    main(sys.argv[1:])
