"""`run.py --compare RUN_A RUN_B --suite TEST`: measure both runs' champions on one test suite and print the
paired report (mutator/validity/pairs.py, the figures the dashboard's Compare page shows).

Each champion is measured by the ordinary test run (mutator/validity/testrun.py): cached by evaluation
contract, appended to that run's test timeline, never steering either search.
"""

from __future__ import annotations

import argparse

from eval.suite import Suite
from mutator.config import Settings
from mutator.round.progress import Progress
from mutator.store.db import connect, loads
from mutator.store.holdout import test_run_row
from mutator.store.run_lookup import run_rows
from mutator.validity.pairs import champions_pair, render_pair
from mutator.validity.testrun import (
    AGENT_FLAGS,
    TestRunError,
    apply_run_defaults,
    recorded_run,
    test_run,
    unknown_run,
)
from sandbox import Launcher


def apply_compare_defaults(settings: Settings, args: argparse.Namespace) -> None:
    """As `--test-run RUN_A` would: the suite defaults to RUN_A's --holdout, the agents to RUN_A's own
    flags."""
    if args.compare[0] == args.compare[1]:
        raise TestRunError(f"--compare needs two different runs, got {args.compare[0]} twice")
    for run_id in args.compare:
        if recorded_run(settings, run_id) is None:
            raise unknown_run(settings, run_id)
    shadow = argparse.Namespace(**{**vars(args), "test_run": args.compare[0]})
    apply_run_defaults(settings, shadow)
    for attr in ("suite", "real", "fake_noise", *(attr for attr, _ in AGENT_FLAGS)):
        setattr(args, attr, getattr(shadow, attr, None))


def compare_runs(settings: Settings, run_a: str, run_b: str, suite: Suite, *, agent_argv: list[str],
                 launcher: Launcher, progress: Progress, network: bool = False,
                 build_id: str | None = None, budget=None) -> dict:
    """Test both champions on `suite` (cells cached), then pair them by task. Returns the pair with
    `cells_run`. `budget` is asked before each cell (each run's --budget-usd is on its own spend; the daily
    one on the store's)."""
    if run_a == run_b:
        raise TestRunError(f"--compare needs two different runs, got {run_a} twice")
    results = {}
    for run_id in (run_a, run_b):
        progress.say(f"Measuring the champion of {run_id} on {suite.name} …")
        results[run_id] = test_run(settings, run_id, suite, agent_argv=agent_argv, launcher=launcher,
                                   progress=progress, network=network, build_id=build_id, budget=budget,
                                   kind="compare")
    db = connect(settings.db_path)
    found = run_rows(db, [run_a, run_b])
    tests = {run_id: test_run_row(db, r["test_run"])
             for run_id, r in results.items()}
    seed_eval = (loads(tests[run_a]["report"], {}) or {}).get("splits", {}).get("test", {}) or {}
    pair = champions_pair(db, found[run_a], found[run_b], suite=suite.name,
                          eval_a=tests[run_a]["evaluation_id"], eval_b=tests[run_b]["evaluation_id"],
                          seed_eval_a=seed_eval.get("seed_evaluation_id"),
                          genome_a=tests[run_a]["genome_hash"], genome_b=tests[run_b]["genome_hash"])
    pair["cells_run"] = sum(r["cells_run"] for r in results.values())
    pair["test_runs"] = [tests[run_a]["id"], tests[run_b]["id"]]
    return pair


def render(pair: dict) -> str:
    cells = pair.get("cells_run", 0)
    return (render_pair(pair) + f"\n  ({cells} cells run by this command"
            + (", all cached)" if not cells else ")"))
