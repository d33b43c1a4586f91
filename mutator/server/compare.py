"""Compare runs: 2–4 runs of a skill side by side — their champion curves on one round axis, seed / champion /
test figures, and for two runs whose champions were tested on the same suite, the paired test Δ between them.

Read-only. The paired Δ (mutator/validity/pairs.py, shared with `run.py --compare`) scores both champions'
cells with the first run's weights and the first run's seed on that suite as the normaliser, so both sides are
on one scale (the same scale as that run's test report); it carries the sign test and McNemar per pass/fail
test too.
"""

from __future__ import annotations

from itertools import combinations

import sqlite_utils

from mutator.server import decisions as D
from mutator.server import queries as Q
from mutator.server import spend_axis
from mutator.store.queries import testruns
from mutator.store.queries.attempts import light_rows
from mutator.store.queries.rows import loads
from mutator.validity.pairs import champions_pair
from strategies.verdicts import Verdict

MAX_RUNS = 4


def _run_view(db: sqlite_utils.Database, run: dict) -> dict:
    rows = light_rows(db, run["id"])
    after = D.incumbents(rows)
    by_genome = D.genome_composites(rows)
    rounds = sorted(after)
    tests = testruns.done_of_run(db, run["id"])
    latest: dict[str, dict] = {}
    for t in tests:
        report = loads(t.pop("report"), {}) or {}
        test_split = (report.get("splits") or {}).get("test") or {}
        t["vs_seed"] = test_split.get("delta")
        t["seed_evaluation_id"] = test_split.get("seed_evaluation_id")
        t["seed_composite"] = test_split.get("seed_composite")
        t["champion"] = t["genome_hash"] == run["incumbent_hash"]
        if t["champion"]:
            latest[t["suite"]] = t          # the newest test of the current champion per suite
    test_at = {t["round"]: t["composite"] for t in tests}
    keep = ("id", "kind", "status", "strategy", "model", "replicates", "rounds_done", "rounds_target",
            "suite", "val", "holdout", "seed_hash", "incumbent_hash", "w_cost", "w_steps", "gate_z",
            "min_improvement",
            "cost_usd", "created_at")
    return {
        "run": {k: run.get(k) for k in keep},
        "curve": {"round": rounds, "champion": [by_genome.get(after[r] or "") for r in rounds],
                  "test": [test_at.get(r) for r in rounds], **spend_axis.series(db, run["id"], rounds)},
        "seed": {"genome_hash": run["seed_hash"], "composite": by_genome.get(run["seed_hash"])},
        "champion": {"genome_hash": run["incumbent_hash"],
                     "composite": by_genome.get(run["incumbent_hash"] or "")},
        "kept": sum(r["verdict"] == Verdict.KEEP for r in rows),
        "attempts": sum(r["round"] > 0 for r in rows),
        "tests": tests, "latest_tests": latest,
    }


def _pair(db: sqlite_utils.Database, a: dict, b: dict, suite: str) -> dict:
    ta, tb = a["latest_tests"][suite], b["latest_tests"][suite]
    out = champions_pair(db, a["run"], b["run"], suite=suite, eval_a=ta["evaluation_id"],
                         eval_b=tb["evaluation_id"],
                         seed_eval_a=ta.get("seed_evaluation_id"), genome_a=ta["genome_hash"],
                         genome_b=tb["genome_hash"])
    out.pop("deltas", None)
    out["test_runs"] = [ta["id"], tb["id"]]
    return out


def compare(db: sqlite_utils.Database, run_ids: list[str]) -> dict | None:
    """None when a run id is unknown. `pairs`: every two runs whose current champions were tested on one
    suite."""
    runs = [Q.run_row(db, run_id) for run_id in run_ids]
    if any(run is None for run in runs):
        return None
    views = [_run_view(db, run) for run in runs]
    pairs = []
    for a, b in combinations(views, 2):
        for suite in sorted(set(a["latest_tests"]) & set(b["latest_tests"])):
            pairs.append(_pair(db, a, b, suite))
    for view in views:
        view["latest_tests"] = {suite: t["id"] for suite, t in view["latest_tests"].items()}
    shared_seed = len({v["run"]["seed_hash"] for v in views}) == 1
    shared_val = len({v["run"]["val"] for v in views}) == 1
    # a one-model and a several-model run score on different scales (a mean over models' own composites)
    shared_models = len({(run["model"], run.get("seed_models") or "") for run in runs}) == 1
    shared = (("seed", shared_seed), ("val suite", shared_val), ("eval models", shared_models))
    differ = [what for what, same in shared if not same]
    return {"runs": views, "pairs": pairs, "comparable": not differ,
            "note": "" if not differ else f"these runs differ in {' and '.join(differ)}: each curve is "
                                          "normalised to its own seed on its own val suite and models, so "
                                          "the composites are not on one scale"}
