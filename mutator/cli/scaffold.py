"""run.py's suite-writing commands that run no agent: `new-suite NAME --skill-dir SKILL` (the scaffold) and
`validate-suite` of a suite that is not a Harbor import (the Harbor oracle check is harbor.py's)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eval.suite import Suite
from mutator.config import load_settings, run_py
from mutator.round.preflight import check_out_folder


def new_suite_command(args: argparse.Namespace) -> int:
    from mutator.after.newsuite import new_suite
    out = args.out or Path.cwd() / "suites"
    data_dir = load_settings({"data_dir": args.data_dir}, config_file=args.config).data_dir
    check_out_folder("--out", out, skill_dir=args.skill_dir, data_dir=data_dir)
    made, placeholders = new_suite(args.new_suite, args.skill_dir, out, evals_json=args.from_evals,
                                   grader=args.grader, seed=args.seed or 0)
    for suite in made:
        print(f"{suite.split:5} {suite.path}  ({len(suite.task_ids)} tasks: {', '.join(suite.task_ids)})")
    paths = {suite.split: suite.path for suite in made}
    steps = []
    if placeholders:
        steps.append("Replace the placeholder tasks (every text holding [new-suite placeholder]) in "
                     + ", ".join(str(path / "tasks.jsonl") for path in paths.values())
                     + ": a run refuses them until you do")
    if (paths["train"] / "run-eval.py").is_file():
        steps.append("Write your tests into each suite's run-eval.py (the starter only checks that the "
                     "required files were written)")
    steps += [f"Check each suite: {run_py()} validate-suite {paths['val']}  (and the train and test ones)",
              f"Dry run, nothing spent: {run_py()} --suite {paths['train']} --val {paths['val']}"
              + (f" --holdout {paths['test']}" if "test" in paths else "")
              + f" --skill-dir {args.skill_dir} --rounds 2",
              "Price a real run: the same command with --plan --real; then --real --budget-usd 5"]
    print("\nNext:\n" + "\n".join(f"  {number}. {step}" for number, step in enumerate(steps, start=1)))
    return 0


def validate_plain_command(suite: Suite) -> int:
    """Per task of a script, expectations or judge suite: what its grader gives a cell that did nothing."""
    from mutator.after.newsuite import validate_plain
    rows = validate_plain(suite)
    print(f"{'task':30} {'nothing':>8}  verdict")
    for task_id, score, problem in rows:
        shown = "—" if score is None else f"{score:.2f}"
        verdict = "INVALID  " + problem if problem else ("ok" if score is not None else
                                                          f"ok (runner {suite.runner}: checked at load)")
        print(f"{task_id:30} {shown:>8}  {verdict}")
    bad = [task_id for task_id, _, problem in rows if problem]
    full = [task_id for task_id, score, _ in rows if score == 1]
    if full:
        print(f"warning: the grader gives full marks to a cell that did nothing for {', '.join(full)}: it "
              f"cannot tell a good answer from none", file=sys.stderr)
    print(f"\n{len(rows) - len(bad)} of {len(rows)} tasks valid"
          + (f"; fix the grader for: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0
