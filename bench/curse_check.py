#!/usr/bin/env python3
"""Does the 'ebc' keep rule's estimate of the incumbent's measurement error track the truth?

At every ebc verdict of a line, its estimate (keep_rule.incumbent_bias) beside the true error: the incumbent's
measured val composite minus its exact val composite. Tuning seeds only by default.

    python bench/curse_check.py [--landscape skillsbench] [--seeds 16] [--seed-offset 0] LINE [LINE ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import calibrated  # noqa: E402

_spec = importlib.util.spec_from_file_location("strategies_bench", ROOT / "bench" / "strategies.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench   # its dataclasses look their module up while being built
_spec.loader.exec_module(bench)


class Probe(bench.Search):
    """A search that logs (estimated error, true error) at each ebc verdict."""

    log: list

    def decided(self, gate, keep: bool) -> None:
        if gate is not None and gate.keep_rule and gate.keep_rule.get("rule") == "ebc":
            exact = self.land.expected(self.incumbent, "val", self.norms["val"])
            self.log.append((gate.keep_rule["incumbent_bias"], self.member(self.incumbent).composite - exact))
        super().decided(gate, keep)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lines", nargs="+")
    ap.add_argument("--landscape", choices=calibrated.LANDSCAPES, default="skillsbench")
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--seed-offset", type=int, default=0)
    args = ap.parse_args(argv)
    known = {line.label: line for line in (*bench.LINES, *bench.EXTRA)}
    for label in args.lines:
        rows = []
        for seed in range(args.seed_offset, args.seed_offset + args.seeds):
            probe = Probe(calibrated.make(args.landscape, seed), known[label], 640, 2, seed)
            probe.log = []
            probe.run()
            rows += probe.log
        est, true = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{label}: {len(rows)} ebc verdicts; incumbent error estimated {statistics.mean(est):+.4f}, "
              f"true {statistics.mean(true):+.4f}, correlation {statistics.correlation(est, true):.2f}")


if __name__ == "__main__":
    main()
