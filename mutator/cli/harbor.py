"""run.py's Harbor commands: `--import-harbor DIR --out SUITES` and `--validate-suite SUITE` (the oracle
check).

Neither runs a model: the import copies files, the check runs each task's solution and its verifier in the
task's container.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from mutator.cli.commands import report_import
from mutator.config import run_py


def import_command(args: argparse.Namespace) -> int:
    """Import what reads, say what was left out and why (exit 0 when the suites were made; --strict: exit 2
    and nothing written when any task is left out); a failed --seed-from undoes the import."""
    from mutator.after.harbor_import import bundled_skills, import_harbor, remove_import, seed_from
    from mutator.after.importer import few_task_warnings
    if not args.out:
        print("error: --import-harbor needs --out suites/NAME (the folder the imported suites go in)",
              file=sys.stderr)
        return 2
    if args.seed_from:
        bundled_skills(args.import_harbor, args.seed_from)   # a bad --seed-from is refused before any copy
    existed = args.out.exists()
    done = import_harbor(args.import_harbor, args.out, seed=args.seed or 0, split_file=args.split_file,
                         task_network=args.allow_task_network, strict=args.strict)
    try:
        seed = seed_from(args.import_harbor, args.seed_from, args.out) if args.seed_from else "SKILL_DIR"
    except BaseException:
        remove_import(args.out, existed)
        raise
    print_import_notes(done)
    made = done.suites
    if not any(suite.split == "val" for suite in made):
        for suite in made:
            print(f"{suite.split:5} {suite.path}  ({len(suite.task_ids)} task: {', '.join(suite.task_ids)})")
        print(f"\nOne task: imported into train only (a run needs a val suite too: import at least 2 tasks). "
              f"Check its verifier: {run_py()} --validate-suite {made[0].path}")
        return 0
    val = next(suite.path for suite in made if suite.split == "val")
    return report_import(made, few_task_warnings(made, args.import_harbor), seed,
                         first=f"Check the verifiers: {run_py()} --validate-suite {val}\n")

BUILD_FAILED_EXIT = 9      # --validate-suite: no INVALID task, but an image did not build or pull


def print_import_notes(done) -> None:
    """The import's words beside its suites: the left-out table, notes, tasks without an oracle, verifiers
    that will lack the network."""
    from mutator.after.harbor_import import left_out_table
    total = len(done.left_out) + sum(len(suite.task_ids) for suite in done.suites)
    if done.left_out:
        print(f"Left out: {len(done.left_out)} of {total} tasks (--strict refuses the import instead):\n"
              + left_out_table(done.left_out) + "\n")
    for task_id, notes in sorted(done.notes.items()):
        for note in notes:
            print(f"note: {task_id}: {note}")
    if done.no_oracle:
        print(f"no oracle (no solution/solve.sh): {', '.join(done.no_oracle)}; marked \"oracle\": false in "
              "tasks.jsonl; --validate-suite checks only their do-nothing score")
    for task_id, why in sorted(done.fetching.items()):
        print(f"warning: {task_id}: {why}; it ends as a grader error (no network) unless the suites are "
              "re-imported with "
              "--allow-task-network (and the task allows the internet)", file=sys.stderr)
    if done.notes or done.no_oracle or done.left_out:
        print()


def validate_command(c) -> int:
    """Per task, as Harbor runs trials (one container each): the verifier's reward after solve.sh (must be
    1) and after doing nothing (must be 0); a task without an oracle gets the second only ("no oracle").
    Exit 1 when a task is INVALID, else 9 when an image did not build or pull (infrastructure: no verdict on
    its verifier), else 0."""
    from eval.harbor_run import check_task, network_withheld, suite_task, task_network
    from eval.suite import load_suite
    from mutator.config import resolve_suite_path
    from sandbox.container import get_engine
    suite = load_suite(resolve_suite_path(c.settings, str(c.args.validate_suite)))
    if suite.runner != "harbor":
        from mutator.cli.scaffold import validate_plain_command
        return validate_plain_command(suite)
    engine = get_engine("auto")
    rows = []
    with tempfile.TemporaryDirectory(prefix="sm-validate-") as scratch:
        for task in suite.tasks:
            harbor = suite_task(suite.path, task.id)
            oracle = suite.path / "oracle" / task.id
            rows.append(check_task(engine, harbor, oracle, suite.fixture_dir(task.id), Path(scratch),
                                   network=task_network(dict(suite.meta), harbor),
                                   withheld=network_withheld(dict(suite.meta), harbor)))
    print(f"{'task':30} {'oracle':>7} {'null':>6}  verdict")
    for row in rows:
        show = [f"{v:.2f}" if v is not None else "—" for v in (row.oracle, row.null)]
        detail = f"  {row.error[-600:] if row.build_failed else row.error[:600]}" if row.error else ""
        print(f"{row.task_id:30} {show[0]:>7} {show[1]:>6}  {row.verdict}"
              f"{detail if row.verdict in ('INVALID', 'image build failed') else ''}")
    bad = [row.task_id for row in rows if row.verdict == "INVALID"]
    unbuilt = [row.task_id for row in rows if row.build_failed]
    bare = [row.task_id for row in rows if row.verdict == "no oracle"]
    fine = len(rows) - len(bad) - len(unbuilt)
    print(f"\n{fine} of {len(rows)} tasks valid (oracle 1.0, do-nothing 0.0"
          + (f"; {len(bare)} without an oracle, do-nothing 0.0 only: {', '.join(bare)}" if bare else "") + ")"
          + (f"; fix or drop: {', '.join(bad)}" if bad else "")
          + (f"; image build failed (infrastructure, no verdict on the verifier; fix the build or the "
             f"registry and re-run): {', '.join(unbuilt)}" if unbuilt else ""))
    return 1 if bad else BUILD_FAILED_EXIT if unbuilt else 0
